/**
 * The jobs view (`#/`): every job, newest first, filtered and paged, updated in place while live.
 */

import { announce } from "./alerts.js";
import { ApiError, api, loadPipelines } from "./api.js";
import { connectionState, onConnectionChange } from "./connection.js";
import { costHeader } from "./cost.js";
import { h, heading } from "./dom.js";
import { clockFormat } from "./format.js";
import { renderJobRows } from "./job-rows.js";
import {
  anyFilter,
  apiQuery,
  clearFailure,
  failureLabel,
  fillPipelineSelect,
  filterControls,
  filterForm,
  filtersFrom,
  ID_PREFIX,
  namesFailure,
  rememberFilters,
} from "./list-filters.js";
import { STATUS_LABELS } from "./labels.js";
import { listShortcuts } from "./list-keys.js";
import { listSelection } from "./list-selection.js";
import { Poller } from "./poller.js";

const PAGE_SIZE = 50;
/** A listing shows what changes with the status only: no phase or attempt (the job's page has them). */
const JOB_COLUMNS = ["Job", "Pipeline", "Status", "Created", "Status changed", "Duration", "Error"];
/** Requests a refresh may make to fill the first page when a filter skips most entries. */
const FIRST_PAGE_READS = 5;
/** The totals per status are read again at most this often (a count reads up to 1,000 entries a shard). */
const COUNTS_MS = 30_000;
/** How often the list asks for its jobs' costs (`costs=true` reads each job's usage: half a read unit a job);
 * the reads between keep the costs last read. */
const COSTS_MS = 30_000;
/**
 * How often a list filtered to a failure group is read again: each read looks at the failed jobs' items (the
 * exception type is not in the index), and a failed job changes only when someone acts on it.
 */
const FAILURE_GROUP_MS = 30_000;

/**
 * Every job of the caller, newest first; the filters (status, pipeline, created within, the start of the
 * job id) are the API's, applied on the server across pages; "Load more" fetches the next page with the
 * API's cursor. Each poll reads the first page again only: new jobs and status changes there appear in
 * place, and the older rows "Load more" brought stay as they were read. Rows can be selected (or every job
 * the filter matches) for a bulk retry, cancel or start over (bulk-actions.js).
 * @param {HTMLElement} main
 * @param {{params: URLSearchParams}} route
 */
export function jobsView(main, route) {
  const page = jobsPage(filtersFrom(route.params));
  const { ui } = page;
  main.append(
    h(
      "div",
      { class: "view-head" },
      heading("Jobs"),
      h("a", { class: "button primary", href: "#/new" }, "New job"),
    ),
    filterForm(ui.controls, ui.liveNote),
    ui.failureNote,
    ui.totals,
    page.selection.bar,
    h("div", { class: "table-wrap" }, ui.table),
    ui.empty,
    h("div", { class: "more-row" }, ui.moreButton),
  );
  listenToControls(page);
  showFailureFilter(page);
  page.poller = new Poller((signal) => load(page, signal));
  page.listInterval = page.poller.interval;
  pollFor(page);
  const stopListening = onConnectionChange(() => showLiveNote(page));
  const stopShortcuts = listShortcuts({ search: ui.controls.prefixInput, rows: () => [...ui.tbody.rows] });
  page.poller.start();
  return {
    stop: () => {
      clearTimeout(page.typing); // a search typed just before another view opened (Enter) must not bring the list back
      stopListening();
      stopShortcuts();
      page.poller.stop();
    },
    refresh: () => page.poller.now(),
  };
}

/**
 * The view's state: its `filters`, what it read (`view`), its elements (`ui`), the selection, the poller (set
 * once the view starts) and the timer of a prefix being typed.
 */
function jobsPage(filters) {
  const page = {
    filters,
    view: {
      jobs: [],
      extended: false,
      wantMore: false,
      cursor: null,
      loaded: false,
      known: new Map(),
      counts: null,
      countedAt: 0,
      costs: new Map(),
      costedAt: 0,
    },
    ui: {
      controls: filterControls(filters),
      liveNote: h("p", { class: "live-note muted" }, "Loading…"),
      totals: h("ul", { class: "status-counts", "aria-label": "Job totals", hidden: true }),
      failureNote: h("p", { class: "failure-filter", hidden: true }),
      tbody: h("tbody"),
    },
    poller: null,
    typing: null,
  };
  page.selection = listSelection({
    tbody: page.ui.tbody,
    shown: () => page.view.jobs,
    query: () => apiQuery(page.filters),
    acted: () => {
      page.view.countedAt = 0;
      page.poller.now();
    },
  });
  page.ui.table = jobsTable(page);
  page.ui.empty = h("div", { class: "empty", hidden: true });
  page.ui.moreButton = h("button", { type: "button", class: "more", hidden: true }, "Load more");
  return page;
}

/** The table of jobs: the select-all box, a header per column (Cost sorts), the rows' body. */
function jobsTable(page) {
  const { filters } = page;
  return h(
    "table",
    { class: "jobs-table" },
    h("caption", { class: "visually-hidden" }, "Jobs, newest first"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col", class: "select-cell" }, page.selection.selectAll),
        JOB_COLUMNS.map((name) => h("th", { scope: "col" }, name)),
        costHeader(() => filters.sort === "cost", () => {
          filters.sort = filters.sort === "cost" ? "" : "cost";
          refilter(page);
        }),
      ),
    ),
    page.ui.tbody,
  );
}

/** Each filter control changes its filter (the prefix once typing pauses and it is a valid one); Load more reads on. */
function listenToControls(page) {
  const { filters } = page;
  const { statusSelect, pipelineSelect, createdSelect, prefixInput } = page.ui.controls;
  statusSelect.addEventListener("change", () => {
    filters.status = statusSelect.value;
    refilter(page);
  });
  pipelineSelect.addEventListener("change", () => {
    filters.pipeline = pipelineSelect.value;
    refilter(page);
  });
  createdSelect.addEventListener("change", () => {
    filters.created = createdSelect.value;
    refilter(page);
  });
  prefixInput.addEventListener("input", () => {
    clearTimeout(page.typing);
    page.typing = setTimeout(() => {
      const prefix = prefixInput.value.trim();
      const usable = prefix === "" || ID_PREFIX.test(prefix);
      prefixInput.setCustomValidity(usable ? "" : "A job id has only letters, digits, '.', '_' or '-'");
      prefixInput.reportValidity();
      if (!usable || prefix === filters.prefix) return;
      filters.prefix = prefix;
      refilter(page);
    }, 300);
  });
  const { moreButton } = page.ui;
  moreButton.addEventListener("click", async () => {
    page.view.wantMore = true;
    moreButton.disabled = true;
    moreButton.textContent = "Loading…";
    await page.poller.now();
  });
}

/** The failure group the list is filtered to (from the Failures view), with a button that stops filtering by it. */
function showFailureFilter(page) {
  const { failureNote } = page.ui;
  failureNote.hidden = !namesFailure(page.filters);
  if (failureNote.hidden) return;
  const clear = () => {
    clearFailure(page.filters);
    refilter(page);
  };
  failureNote.replaceChildren(
    "Failure group: ",
    h("strong", {}, failureLabel(page.filters)),
    " ",
    h("button", { type: "button", class: "quiet small", onclick: clear }, "Clear"),
    " ",
    h("a", { href: "#/failures" }, "All failures"),
  );
}

/** A list filtered to a failure group is read again less often (see FAILURE_GROUP_MS). */
function pollFor(page) {
  page.poller.interval = namesFailure(page.filters) ? FAILURE_GROUP_MS : page.listInterval;
}

/** Every filter is the API's: a change reads again from the first page. */
function refilter(page) {
  const { view } = page;
  if (page.filters.status !== "error") clearFailure(page.filters); // a failure group is of jobs in error only
  showFailureFilter(page);
  pollFor(page);
  page.ui.controls.statusSelect.value = page.filters.status;
  showCounts(page);
  rememberFilters(page.filters);
  view.jobs = [];
  view.extended = false;
  view.wantMore = false;
  view.loaded = false;
  view.known = new Map();
  page.selection.clear();
  page.poller.now();
}

/** One page from `cursor` (null: the first); {jobs, cursor}. */
async function readPage(filters, cursor, signal, costs) {
  const params = new URLSearchParams({ ...apiQuery(filters), limit: String(PAGE_SIZE) });
  if (cursor) params.set("cursor", cursor);
  if (costs) params.set("costs", "true");
  const data = await api(`jobs?${params}`, { signal });
  return { jobs: data?.jobs ?? [], cursor: data?.cursor ?? data?.nextCursor ?? null };
}

/** Whether this read asks for costs: every COSTS_MS, and for rows the list has not costed yet (a first read, a
 * new filter, Load more). */
function wantsCosts(view) {
  return !view.loaded || view.wantMore || Date.now() - view.costedAt >= COSTS_MS;
}

/** The jobs with the costs last read where this read carried none (a read between two costed ones). */
function withKnownCosts(view, jobs, costed) {
  if (costed) {
    view.costedAt = Date.now();
    for (const job of jobs) if ("costUsd" in job) view.costs.set(job.jobId, job.costUsd);
    return jobs;
  }
  return jobs.map((job) => ("costUsd" in job || !view.costs.has(job.jobId) ? job : { ...job, costUsd: view.costs.get(job.jobId) }));
}

/**
 * The first page again (read on while a filter leaves it short), merged in front of the older rows
 * "Load more" brought; or, after Load more, the next page appended.
 */
async function load(page, signal) {
  const { view } = page;
  const costed = wantsCosts(view);
  const read = view.wantMore && view.cursor ? await readNextPage(page, signal, costed) : await readFirstPage(page, signal, costed);
  const jobs = withKnownCosts(view, read, costed);
  announceChanges(view, jobs);
  const seen = new Set();
  view.jobs = jobs.filter((job) => !seen.has(job.jobId) && seen.add(job.jobId));
  view.loaded = true;
  show(page);
  fillPipelines(page);
  // after the rows are shown: a count reads up to 1,000 entries a shard, the page never waits for it
  if (Date.now() - view.countedAt >= COUNTS_MS) await loadCounts(page, signal);
}

/** The rows shown with the next page appended (Load more). */
async function readNextPage(page, signal, costs) {
  const { view } = page;
  const next = await readPage(page.filters, view.cursor, signal, costs);
  view.wantMore = false;
  view.extended = true;
  view.cursor = next.cursor;
  return [...view.jobs, ...next.jobs];
}

/** The first page, read on while a filter leaves it short; in front of the older rows Load more brought. */
async function readFirstPage(page, signal, costs) {
  const { view } = page;
  const first = [];
  let cursor = null;
  let reads = 0;
  do {
    const read = await readPage(page.filters, cursor, signal, costs);
    first.push(...read.jobs);
    cursor = read.cursor;
    reads += 1;
  } while (cursor && first.length < PAGE_SIZE && reads < FIRST_PAGE_READS);
  const jobs = view.extended ? mergeFirst(first, view.jobs) : first;
  if (!view.extended) view.cursor = cursor;
  return jobs;
}

/** The caller's totals per status (every job, whatever the filters); none from an API without the route. */
async function loadCounts(page, signal) {
  try {
    page.view.counts = await api("jobs/counts", { signal });
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) throw error;
    page.view.counts = null;
  }
  page.view.countedAt = Date.now();
  showCounts(page);
}

/** Each status with jobs as a button that filters by it (pressed while it does), then the total. */
function showCounts(page) {
  const { totals } = page.ui;
  const data = page.view.counts;
  totals.hidden = !data;
  if (!data) return;
  const atLeast = data.exact === false ? "at least " : "";
  const title = atLeast ? "More jobs than a count reads: each figure is a lower bound" : null;
  const numbers = new Intl.NumberFormat();
  const counted = Object.entries(data.counts ?? {}).filter(([, count]) => count > 0);
  if (data.stalled > 0) counted.splice(1 + counted.findIndex(([status]) => status === "running"), 0, ["stalled", data.stalled]);
  totals.replaceChildren(
    ...counted.map(([status, count]) => countBadge(page, status, `${atLeast}${numbers.format(count)}`, title)),
    h("li", { class: "muted", title }, `Total ${atLeast}${numbers.format(data.total ?? 0)}`),
  );
}

/** A status's total (`figure`) as a button that filters by the status, or stops filtering by it. */
function countBadge(page, status, figure, title) {
  const { filters } = page;
  return h(
    "li",
    {},
    h(
      "button",
      {
        type: "button",
        class: `badge status-${status}`,
        title,
        "aria-pressed": String(filters.status === status),
        onclick: () => {
          filters.status = filters.status === status ? "" : status;
          refilter(page);
        },
      },
      `${STATUS_LABELS[status] ?? status} ${figure}`,
    ),
  );
}

/** Announce new jobs and status changes since the last read (not on the first read). */
function announceChanges(view, jobs) {
  const messages = [];
  if (view.loaded) {
    const fresh = jobs.filter((job) => !view.known.has(job.jobId));
    if (fresh.length === 1) messages.push(`New job ${fresh[0].jobId}, ${fresh[0].status}.`);
    else if (fresh.length > 1) messages.push(`${fresh.length} new jobs.`);
    const changed = jobs.filter((job) => view.known.has(job.jobId) && view.known.get(job.jobId) !== job.status);
    if (changed.length > 0 && changed.length <= 3) {
      for (const job of changed) messages.push(`Job ${job.jobId} is now ${job.status}.`);
    } else if (changed.length > 3) {
      messages.push(`${changed.length} jobs changed status.`);
    }
  }
  view.known = new Map(jobs.map((job) => [job.jobId, job.status]));
  if (messages.length) announce(messages.join(" "));
}

/** The pipelines to filter by: the deployment's (the API filters by those), else those the listed jobs name. */
async function fillPipelines(page) {
  let names;
  try {
    names = (await loadPipelines()).map((pipeline) => pipeline.name);
  } catch {
    names = page.view.jobs.map((job) => job.pipeline);
  }
  fillPipelineSelect(page.ui.controls.pipelineSelect, names, page.filters);
}

/** Render the rows the API listed, the empty message, the selection and the Load more button. */
function show(page) {
  const { view, ui } = page;
  const shown = view.jobs; // newest first, or dearest first across every page (the API's order)
  renderJobRows(ui.tbody, shown, page.selection.selected);
  page.selection.show();
  ui.table.hidden = shown.length === 0;
  ui.empty.hidden = !view.loaded || shown.length > 0;
  ui.empty.replaceChildren(...emptyMessage(page));
  ui.moreButton.hidden = !view.cursor;
  ui.moreButton.disabled = false;
  ui.moreButton.textContent = "Load more";
  const count = `${shown.length} job${shown.length === 1 ? "" : "s"}${view.cursor ? " (more to load)" : ""}`;
  view.count = count;
  view.updated = new Date();
  showLiveNote(page);
}

/** How many jobs are shown and when they were read; offline, since when the API has not answered. */
function showLiveNote(page) {
  const { view } = page;
  const { liveNote } = page.ui;
  if (!view.count) return;
  const connection = connectionState(); // "error": the API answers, but a read failed
  const stale = { offline: "offline", error: "a read failed" }[connection];
  liveNote.dataset.state = stale ? "offline" : "live";
  liveNote.textContent = stale
    ? `${view.count} · ${stale}, as read at ${clockFormat.format(view.updated)}`
    : `${view.count} · live, updated ${clockFormat.format(view.updated)}`;
}

/** What the table says when it has no row: start a job (no job at all), or no job matches the filters. */
function emptyMessage(page) {
  const { view } = page;
  if (view.jobs.length === 0 && !anyFilter(page.filters) && !view.cursor) {
    return [h("p", {}, "No jobs yet: ", h("a", { href: "#/new" }, "start one"), " and watch it here.")];
  }
  const more = view.cursor ? " so far; Load more looks further" : "";
  return [h("p", {}, `No job matches these filters${more}.`)];
}

/**
 * The first page read again, in front of the rows read before that are older than its oldest job (rows it
 * covers are replaced by what it says now: a job that no longer matches the filter leaves).
 */
function mergeFirst(first, shown) {
  const ids = new Set(first.map((job) => job.jobId));
  const createdAt = (job) => new Date(job.createdAt).getTime();
  const oldest = first.length ? createdAt(first[first.length - 1]) : Number.POSITIVE_INFINITY;
  return [...first, ...shown.filter((job) => !ids.has(job.jobId) && createdAt(job) < oldest)];
}
