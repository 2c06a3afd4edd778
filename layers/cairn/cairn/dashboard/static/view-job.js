/**
 * The job view (`#/jobs/<id>`): one job, live, and its actions sent to the API.
 */

import { renderActions } from "./actions.js";
import { announce, clearAlert, reportError } from "./alerts.js";
import { api, ApiError, cancelJob, findPipeline, jobPath } from "./api.js";
import { renderBanner } from "./banner.js";
import { onConnectionChange } from "./connection.js";
import { focusLost, h, heading, restoreFocus } from "./dom.js";
import { prettyJson, timeElement } from "./format.js";
import { stateLink } from "./entry-states.js";
import { renderCost } from "./cost.js";
import { jobParts, notFoundBanner, notFoundPanel } from "./job-layout.js";
import { renderCheckpoint, renderResult, renderUsage } from "./job-panels.js";
import { renderLog } from "./log.js";
import { Poller, POLL_MS } from "./poller.js";
import { openRerun, openStartOver } from "./restart-dialogs.js";
import { renderPipelineGraph } from "./pipeline-graph.js";
import { openSignal } from "./signal-dialog.js";
import { openNudge } from "./stalled.js";
import { renderTimeline } from "./timeline.js";

/** The most older phase records the view reads for its timeline (which shows the last 300 runs). */
const MAX_OLDER_PHASES = 300;
/**
 * How often a job that cannot change by itself (complete, failed, cancelled: only an action moves it on) is read
 * again: seldom, for a change made elsewhere (another tab, the CLI). An action here reads it at once, and
 * every POLL_MS again while it runs.
 */
const SETTLED_POLL_MS = 60_000;
const SETTLED = new Set(["complete", "error", "cancelled"]);

/** How often the lanes of a running job's maps are read again (each read reads every item record). */
const MAPS_EVERY_MS = 10_000;

/**
 * One job, live: status banner, actions, timeline, log, usage, checkpoint and result.
 * @param {HTMLElement} main
 * @param {{id: string}} route
 */
export function jobView(main, route) {
  const page = {
    jobId: route.id,
    view: { job: null, log: [], older: [], logKey: null, phases: [], schema: null, stateKey: null, busy: false },
    poller: null,
  };
  const { view } = page;
  // the phases a job can enter (the API leaves out a map's item phases, which have no entry state of their own)
  const enterable = () => (Array.isArray(view.job?.rerunPhases) ? view.job.rerunPhases : view.phases);
  page.ui = jobParts(page.jobId, enterable, () => page.poller.controller.signal);
  const { ui } = page;
  main.append(heading("Job ", h("span", { class: "mono job-id" }, page.jobId)), ui.meta, ui.banner, ui.actions, ui.grid);
  listenToPanels(page);
  listenToActions(page);

  page.poller = new Poller((signal) => load(page, signal), () => pollInterval(view));
  // Offline: every action disabled at once (renderActions); online again: the job's own rules, then a read.
  const stopListening = onConnectionChange(() => {
    if (view.job && !view.busy) renderActions(ui.buttons, view.job, view.phases);
  });
  page.poller.start();
  return {
    stop: () => {
      stopListening();
      page.poller.stop();
    },
    refresh: () => page.poller.now(),
  };
}

/** The wait before the next read: long for a settled job no action of this page is waiting on. */
function pollInterval(view) {
  return SETTLED.has(view.job?.status) && !view.busy ? SETTLED_POLL_MS : POLL_MS;
}

/**
 * The view's state: the job's id, what was read (`view`, which the action dialogs read too), the elements
 * (`ui`) and the poller.
 * @typedef {{jobId: string, view: object, ui: object, poller: Poller}} JobPage
 */

/**
 * Read the job; its log and state only when it changed (every write advances its sequence).
 * @param {JobPage} page
 * @param {AbortSignal} signal
 */
async function load(page, signal) {
  const { view } = page;
  let job;
  try {
    job = await api(jobPath(page.jobId), { signal });
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) {
      notFound(page, error);
      return;
    }
    throw error;
  }
  const key = `${job.sequence}:${job.updatedAt}:${job.status}`;
  if (key !== view.logKey) {
    view.log = await readLog(page.jobId, job, signal);
    view.older = await readOlderPhases(page.jobId, job, signal);
    view.logKey = key;
  }
  if (!view.phases.length || view.job?.pipeline !== job.pipeline) await readPipeline(view, job);
  view.job = view.older.length ? { ...job, phases: [...view.older, ...(job.phases ?? [])] } : job;
  show(page);
  if (page.ui.stateDetails.open && view.stateKey !== key) await readState(page, signal, key);
  await readMaps(page, signal, key);
  await page.ui.compared.refresh(view.job, view.log);
}

/** The maps' lanes, for a job that has run a map: again when it changed, or every MAPS_EVERY_MS while it runs. */
async function readMaps(page, signal, key) {
  const { view } = page;
  const mapped = (view.job?.phases ?? []).some((record) => record.outcome === "map") || view.job?.fanOut;
  if (!mapped) return;
  const due = view.job.status === "running" && Date.now() - (view.mapsAt ?? 0) >= MAPS_EVERY_MS;
  if (key === view.mapsKey && !due) return;
  await page.ui.maps.refresh(signal);
  view.mapsKey = key;
  view.mapsAt = Date.now();
}

/** The job's log; from an API without the log route, the one the job's reply holds. */
async function readLog(jobId, job, signal) {
  try {
    return (await api(`${jobPath(jobId)}/log`, { signal }))?.entries ?? [];
  } catch (error) {
    if (error instanceof ApiError && error.status === 404 && Array.isArray(job.log)) return job.log;
    throw error;
  }
}

/**
 * The phase records before the view's own (it holds the newest writes' only, historyCursor reading on), up to
 * the timeline's rows; none from an API without the history route, or once the job was started over.
 */
async function readOlderPhases(jobId, job, signal) {
  const older = [];
  let cursor = job.historyCursor;
  while (cursor && older.length < MAX_OLDER_PHASES) {
    let page;
    try {
      page = await api(`${jobPath(jobId)}/history?limit=100&cursor=${encodeURIComponent(cursor)}`, { signal });
    } catch (error) {
      if (error instanceof ApiError && [400, 404].includes(error.status)) break;
      throw error;
    }
    const records = (page?.writes ?? []).map((write) => write.record).filter(Boolean);
    older.unshift(...records.reverse());
    cursor = page?.cursor;
  }
  return older;
}

/** The job's pipeline: its state schema and phases (else the phases the job has run and will run). */
async function readPipeline(view, job) {
  const pipeline = await findPipeline(job.pipeline);
  view.schema = pipeline?.stateSchema ?? null;
  const seen = [...(job.phases ?? []).map((record) => record.phase), job.nextPhase].filter(Boolean);
  view.phases = pipeline?.phases?.length ? pipeline.phases : [...new Set(seen)];
}

/**
 * The checkpoint's state, fetched only while its `<details>` is open (a state can be large). One too large for a
 * reply comes as a link, offered as such (and none is returned: there is nothing to edit here).
 */
async function readState(page, signal, key = page.view.logKey) {
  const { statePre } = page.ui;
  statePre.setAttribute("aria-busy", "true");
  try {
    const full = await api(`${jobPath(page.jobId)}?includeState=true`, { signal });
    page.view.stateKey = key;
    if (full.stateUrl) {
      statePre.replaceChildren(stateLink(full));
      return null;
    }
    statePre.textContent = full.state == null ? "No state: the job has no checkpoint." : prettyJson(full.state);
    return full.state;
  } finally {
    statePre.removeAttribute("aria-busy");
  }
}

/** The job's input (what it was started with, and what Start over uses unless given another). */
async function readInput(page) {
  const full = await api(`${jobPath(page.jobId)}?includeInput=true`, { signal: page.poller.controller.signal });
  return full.input ?? null;
}

/** The input and the state are read when their panel opens; the log's filter shows its entries again. */
function listenToPanels(page) {
  const { inputDetails, inputPre, stateDetails, statePre, logFilter, logList } = page.ui;
  inputDetails.addEventListener("toggle", () => {
    if (!inputDetails.open) return;
    inputPre.textContent = "Loading the input…";
    readInput(page)
      .then((input) => {
        inputPre.textContent = input == null ? "No input: the job was started without a state." : prettyJson(input);
      })
      .catch((error) => reportError(error));
  });

  stateDetails.addEventListener("toggle", () => {
    if (stateDetails.open && page.view.stateKey !== page.view.logKey) {
      statePre.textContent = "Loading the state…";
      readState(page, page.poller.controller.signal).catch((error) => reportError(error));
    }
  });
  logFilter.addEventListener("change", () => renderLog(logList, page.view.log, logFilter.value, true));
}

/** No job has the id: stop reading, and say so instead of the panels. */
function notFound(page, error) {
  const { ui } = page;
  page.poller.stop();
  notFoundBanner(ui.banner, error);
  for (const button of ui.buttons.values()) button.disabled = true;
  ui.actions.hidden = true;
  ui.meta.hidden = true;
  ui.grid.replaceWith(notFoundPanel(page.jobId));
}

/** Render everything from the last read. */
function show(page) {
  const { view, ui } = page;
  const job = view.job;
  if (!job) return;
  ui.meta.replaceChildren(
    "Pipeline ",
    h("strong", {}, job.pipeline),
    " · created ",
    timeElement(job.createdAt),
    " · updated ",
    timeElement(job.updatedAt),
    ` · ${job.sequence} write${job.sequence === 1 ? "" : "s"}`,
  );
  renderBanner(ui.banner, job);
  if (!view.busy) renderActions(ui.buttons, job, view.phases);
  renderTimeline(ui.timeline, job, view.log);
  renderPipelineGraph(ui.graph, { phases: view.phases, records: job.phases ?? [], current: job.nextPhase });
  renderLog(ui.logList, view.log, ui.logFilter.value, false, ["running", "waiting"].includes(job.status));
  ui.logCount.textContent = `(${view.log.length})`;
  renderUsage(ui.usage, job.usage ?? {});
  renderCost(ui.costBox, job);
  renderCheckpoint(ui.checkpoint, job);
  renderResult(ui.result, job);
  ui.sawPanel.refresh();
}

/**
 * Send an action's request; on success show the answered job, announce it and read again now.
 * @param {JobPage} page
 * @param {string} name the action, for the announcement
 * @param {() => Promise<any>} send
 */
async function act(page, name, send) {
  const { view, ui } = page;
  const focused = ui.actions.contains(document.activeElement) ? document.activeElement : null;
  view.busy = true;
  ui.actions.setAttribute("aria-busy", "true");
  for (const button of ui.buttons.values()) button.disabled = true;
  clearAlert();
  try {
    const answered = await send();
    if (answered?.jobId === page.jobId) {
      view.job = { ...view.job, ...answered };
      view.logKey = null;
    }
    announce(answered?.said ?? `${name}: the job is now ${answered?.status ?? "updated"}.`);
    return answered;
  } finally {
    view.busy = false;
    ui.actions.removeAttribute("aria-busy");
    show(page);
    // The buttons were disabled while the request ran, the one pressed with them: keep the keyboard here.
    if (focused && focusLost()) restoreFocus(focused);
    page.poller.now();
  }
}

/** What each action button does: a request sent at once, or a dialog that sends one. */
function actionHandlers(page) {
  const { view, jobId } = page;
  const post = (path, body) => api(`${jobPath(jobId)}/${path}`, { method: "POST", body });
  const acting = (name) => (send) => act(page, name, send);
  const readCheckpoint = (signal, key) => readState(page, signal, key);
  return {
    Retry: () => act(page, "Retry", () => post("retry", { mode: "resume" })),
    Resume: () => act(page, "Resume", () => post("retry", { mode: "resume" })),
    Pause: () => act(page, "Pause", () => post("pause")),
    Cancel: () => act(page, "Cancel", () => cancelJob(jobId)),
    "Start over": () => openStartOver(view, acting("Start over"), post, () => readInput(page)),
    "Rerun from phase": () => openRerun(view, readCheckpoint, acting("Rerun from phase"), post),
    "Send signal": () => openSignal(view, acting("Send signal"), jobId),
    Nudge: () => openNudge(view, acting("Nudge"), post),
  };
}

/** Each action button runs its action; a failure is reported. */
function listenToActions(page) {
  const onAction = actionHandlers(page);
  for (const [name, button] of page.ui.buttons) {
    button.addEventListener("click", () => {
      const run = onAction[name]();
      if (run instanceof Promise) run.catch((error) => reportError(error));
    });
  }
}
