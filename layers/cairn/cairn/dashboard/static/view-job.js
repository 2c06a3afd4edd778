/**
 * The job view (`#/jobs/<id>`): one job, live, and its actions sent to the API.
 */

import { ACTION_NAMES, actionClass, renderActions } from "./actions.js";
import { announce, clearAlert, reportError } from "./alerts.js";
import { api, ApiError, cancelJob, findPipeline, jobPath } from "./api.js";
import { renderBanner } from "./banner.js";
import { onConnectionChange } from "./connection.js";
import { focusLost, h, heading, restoreFocus } from "./dom.js";
import { prettyJson, timeElement } from "./format.js";
import { icon } from "./icons.js";
import { entryStates, stateLink } from "./entry-states.js";
import { renderCost } from "./cost.js";
import { renderCheckpoint, renderResult, renderUsage } from "./job-panels.js";
import { KIND_LABELS } from "./labels.js";
import { renderLog } from "./log.js";
import { mapLanes } from "./map-lanes.js";
import { Poller } from "./poller.js";
import { openRerun, openStartOver } from "./restart-dialogs.js";
import { renderPipelineGraph } from "./pipeline-graph.js";
import { runCompare } from "./run-compare.js";
import { openSignal } from "./signal-dialog.js";
import { renderTimeline } from "./timeline.js";

/** The most older phase records the view reads for its timeline (which shows the last 300 runs). */
const MAX_OLDER_PHASES = 300;
/** How often the lanes of a running job's maps are read again (each read reads every item record). */
const MAPS_EVERY_MS = 10_000;

/**
 * One job, live: status banner, actions, timeline, log, usage, checkpoint and result.
 * @param {HTMLElement} main
 * @param {{id: string}} route
 */
export function jobView(main, route) {
  const jobId = route.id;
  const view = { job: null, log: [], older: [], logKey: null, phases: [], schema: null, stateKey: null, busy: false };

  const banner = h(
    "div",
    { class: "banner", role: "status", "aria-atomic": "true", "data-status": "loading" },
    icon("loading"),
    h("div", {}, h("p", { class: "banner-title" }, "Loading the job…"), h("p", { class: "banner-detail" })),
  );
  const buttons = new Map(
    ACTION_NAMES.map((name) => [name, h("button", { type: "button", class: actionClass(name), disabled: true }, name)]),
  );
  const actions = h("div", { class: "actions", role: "group", "aria-label": "Actions" }, [...buttons.values()]);
  const meta = h("p", { class: "job-meta muted" });
  const timeline = h("div", { class: "timeline" });
  const logFilter = h(
    "select",
    { id: "log-filter" },
    h("option", { value: "" }, "Everything"),
    h("option", { value: "annotations" }, "Annotations only"),
    Object.entries(KIND_LABELS).map(([kind, label]) => h("option", { value: kind }, `${label} only`)),
  );
  const logCount = h("span", { class: "count" });
  const logList = h("ol", { class: "log", "aria-label": "Log entries, oldest first" });
  const logBox = h("div", { class: "log-box", tabindex: "0", "aria-label": "Log" }, logList);
  const usage = h("div", { class: "usage" });
  const costBox = h("div", { class: "cost" });
  const checkpoint = h("div", { class: "checkpoint" });
  const statePre = h("pre", { class: "json", tabindex: "0" });
  const stateDetails = h("details", { class: "state" }, h("summary", {}, "State"), statePre);
  const inputPre = h("pre", { class: "json", tabindex: "0" });
  const inputDetails = h("details", { class: "input" }, h("summary", {}, "Input"), inputPre);
  const result = h("div", { class: "result" });
  const graph = h("div", { class: "pipeline-graph" });
  // the phases a job can enter (the API leaves out a map's item phases, which have no entry state of their own)
  const enterable = () => (Array.isArray(view.job?.rerunPhases) ? view.job.rerunPhases : view.phases);
  const maps = mapLanes(jobId);
  const sawPanel = entryStates(jobId, enterable, () => poller.controller.signal);
  const compared = runCompare(jobId, () => poller.controller.signal);

  const grid = h(
    "div",
    { class: "job-grid" },
    h(
      "div",
      { class: "job-main" },
      h(
        "section",
        { class: "panel timeline-panel", "aria-labelledby": "timeline-title" },
        h("h2", { id: "timeline-title" }, "Timeline"),
        timeline,
        maps.element,
      ),
      compared.element,
      h(
        "section",
        { class: "panel log-panel", "aria-labelledby": "log-title" },
        h(
          "div",
          { class: "panel-head" },
          h("h2", { id: "log-title" }, "Log ", logCount),
          h("div", { class: "field inline" }, h("label", { for: "log-filter" }, "Show"), logFilter),
        ),
        logBox,
      ),
    ),
    h(
      "div",
      { class: "job-side" },
      h(
        "section",
        { class: "panel usage-panel", "aria-labelledby": "usage-title" },
        h("h2", { id: "usage-title" }, "Usage"),
        usage,
      ),
      h("section", { class: "panel cost-panel", "aria-labelledby": "cost-title" }, h("h2", { id: "cost-title" }, "Cost"), costBox),
      h(
        "section",
        { class: "panel checkpoint-panel", "aria-labelledby": "checkpoint-title" },
        h("h2", { id: "checkpoint-title" }, "Checkpoint"),
        checkpoint,
        stateDetails,
        inputDetails,
        h("h3", {}, "Result"),
        result,
      ),
      h(
        "section",
        { class: "panel seen-panel", "aria-labelledby": "seen-title" },
        h("h2", { id: "seen-title" }, "What each phase saw"),
        sawPanel.element,
      ),
      h(
        "section",
        { class: "panel graph-panel", "aria-labelledby": "graph-title" },
        h("h2", { id: "graph-title" }, "Pipeline"),
        graph,
      ),
    ),
  );
  main.append(heading("Job ", h("span", { class: "mono job-id" }, jobId)), meta, banner, actions, grid);

  /** Read the job; its log and state only when it changed (every write advances its sequence). */
  async function load(signal) {
    let job;
    try {
      job = await api(jobPath(jobId), { signal });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        notFound(error);
        return;
      }
      throw error;
    }
    const key = `${job.sequence}:${job.updatedAt}:${job.status}`;
    if (key !== view.logKey) {
      view.log = await readLog(job, signal);
      view.older = await readOlderPhases(job, signal);
      view.logKey = key;
    }
    if (!view.phases.length || view.job?.pipeline !== job.pipeline) await readPipeline(job);
    view.job = view.older.length ? { ...job, phases: [...view.older, ...(job.phases ?? [])] } : job;
    show();
    if (stateDetails.open && view.stateKey !== key) await readState(signal, key);
    await readMaps(signal, key);
    await compared.refresh(view.job, view.log);
  }

  /** The maps' lanes, for a job that has run a map: again when it changed, or every MAPS_EVERY_MS while it runs. */
  async function readMaps(signal, key) {
    const mapped = (view.job?.phases ?? []).some((record) => record.outcome === "map") || view.job?.fanOut;
    if (!mapped) return;
    const due = view.job.status === "running" && Date.now() - (view.mapsAt ?? 0) >= MAPS_EVERY_MS;
    if (key === view.mapsKey && !due) return;
    await maps.refresh(signal);
    view.mapsKey = key;
    view.mapsAt = Date.now();
  }

  async function readLog(job, signal) {
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
  async function readOlderPhases(job, signal) {
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

  async function readPipeline(job) {
    const pipeline = await findPipeline(job.pipeline);
    view.schema = pipeline?.stateSchema ?? null;
    const seen = [...(job.phases ?? []).map((record) => record.phase), job.nextPhase].filter(Boolean);
    view.phases = pipeline?.phases?.length ? pipeline.phases : [...new Set(seen)];
  }

  /**
   * The checkpoint's state, fetched only while its `<details>` is open (a state can be large). One too large for a
   * reply comes as a link, offered as such (and none is returned: there is nothing to edit here).
   */
  async function readState(signal, key = view.logKey) {
    statePre.setAttribute("aria-busy", "true");
    try {
      const full = await api(`${jobPath(jobId)}?includeState=true`, { signal });
      view.stateKey = key;
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
  async function readInput() {
    const full = await api(`${jobPath(jobId)}?includeInput=true`, { signal: poller.controller.signal });
    return full.input ?? null;
  }

  inputDetails.addEventListener("toggle", () => {
    if (!inputDetails.open) return;
    inputPre.textContent = "Loading the input…";
    readInput()
      .then((input) => {
        inputPre.textContent = input == null ? "No input: the job was started without a state." : prettyJson(input);
      })
      .catch((error) => reportError(error));
  });

  stateDetails.addEventListener("toggle", () => {
    if (stateDetails.open && view.stateKey !== view.logKey) {
      statePre.textContent = "Loading the state…";
      readState(poller.controller.signal).catch((error) => reportError(error));
    }
  });
  logFilter.addEventListener("change", () => renderLog(logList, view.log, logFilter.value, true));

  function notFound(error) {
    poller.stop();
    banner.dataset.status = "missing";
    banner.replaceChildren(
      icon("cancelled"),
      h("div", {}, h("p", { class: "banner-title" }, "No such job"), h("p", { class: "banner-detail" }, error.message)),
    );
    for (const button of buttons.values()) button.disabled = true;
    actions.hidden = true;
    meta.hidden = true;
    grid.replaceWith(
      h(
        "section",
        { class: "panel not-found", "aria-labelledby": "not-found-title" },
        h("h2", { id: "not-found-title" }, "No job has this id"),
        h("p", {}, "It may have expired (a job lives for its pipeline's TTL after its last write), belong to another caller, or the id may be mistyped."),
        h(
          "p",
          {},
          h("a", { href: "#/" }, "See all jobs"),
          " · ",
          h("a", { href: `#/?prefix=${encodeURIComponent(jobId)}` }, "Jobs whose id starts with this one"),
        ),
      ),
    );
  }

  /** Render everything from the last read. */
  function show() {
    const job = view.job;
    if (!job) return;
    meta.replaceChildren(
      "Pipeline ",
      h("strong", {}, job.pipeline),
      " · created ",
      timeElement(job.createdAt),
      " · updated ",
      timeElement(job.updatedAt),
      ` · ${job.sequence} write${job.sequence === 1 ? "" : "s"}`,
    );
    renderBanner(banner, job);
    if (!view.busy) renderActions(buttons, job, view.phases);
    renderTimeline(timeline, job, view.log);
    renderPipelineGraph(graph, { phases: view.phases, records: job.phases ?? [], current: job.nextPhase });
    renderLog(logList, view.log, logFilter.value, false, ["running", "waiting"].includes(job.status));
    logCount.textContent = `(${view.log.length})`;
    renderUsage(usage, job.usage ?? {});
    renderCost(costBox, job);
    renderCheckpoint(checkpoint, job);
    renderResult(result, job);
    sawPanel.refresh();
  }

  /**
   * Send an action's request; on success show the answered job, announce it and read again now.
   * @param {string} name the action, for the announcement
   * @param {() => Promise<any>} send
   */
  async function act(name, send) {
    const focused = actions.contains(document.activeElement) ? document.activeElement : null;
    view.busy = true;
    actions.setAttribute("aria-busy", "true");
    for (const button of buttons.values()) button.disabled = true;
    clearAlert();
    try {
      const answered = await send();
      if (answered?.jobId === jobId) {
        view.job = { ...view.job, ...answered };
        view.logKey = null;
      }
      announce(`${name}: the job is now ${answered?.status ?? "updated"}.`);
      return answered;
    } finally {
      view.busy = false;
      actions.removeAttribute("aria-busy");
      show();
      // The buttons were disabled while the request ran, the one pressed with them: keep the keyboard here.
      if (focused && focusLost()) restoreFocus(focused);
      poller.now();
    }
  }

  const post = (path, body) => api(`${jobPath(jobId)}/${path}`, { method: "POST", body });
  const onAction = {
    Retry: () => act("Retry", () => post("retry", { mode: "resume" })),
    Resume: () => act("Resume", () => post("retry", { mode: "resume" })),
    Pause: () => act("Pause", () => post("pause")),
    Cancel: () => act("Cancel", () => cancelJob(jobId)),
    "Start over": () => openStartOver(view, (send) => act("Start over", send), post, readInput),
    "Rerun from phase": () => openRerun(view, readState, (send) => act("Rerun from phase", send), post),
    "Send signal": () => openSignal(view, (send) => act("Send signal", send), jobId),
  };
  for (const [name, button] of buttons) {
    button.addEventListener("click", () => {
      const run = onAction[name]();
      if (run instanceof Promise) run.catch((error) => reportError(error));
    });
  }

  const poller = new Poller(load);
  // Offline: every action disabled at once (renderActions); online again: the job's own rules, then a read.
  const stopListening = onConnectionChange(() => {
    if (view.job && !view.busy) renderActions(buttons, view.job, view.phases);
  });
  poller.start();
  return {
    stop: () => {
      stopListening();
      poller.stop();
    },
    refresh: () => poller.now(),
  };
}
