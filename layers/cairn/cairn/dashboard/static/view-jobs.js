/**
 * The jobs view (`#/`): every job, newest first, filtered and paged, updated in place while live.
 */

import { announce } from "./alerts.js";
import { ApiError, api, loadPipelines } from "./api.js";
import { connectionState, onConnectionChange } from "./connection.js";
import { byCost, costCell, costHeader } from "./cost.js";
import { h, heading, setChildren } from "./dom.js";
import { clockFormat, timeElement } from "./format.js";
import { statusBadge } from "./icons.js";
import { JOB_ID_PATTERN } from "./ids.js";
import { STATUS_LABELS, STATUSES } from "./labels.js";
import { listShortcuts } from "./list-keys.js";
import { listSelection } from "./list-selection.js";
import { Poller } from "./poller.js";
import { jsonEqual } from "./schema.js";

const PAGE_SIZE = 50;
/** What a job id may start with (the API's rule for a job id): a prefix outside it matches nothing. */
const ID_PREFIX = JOB_ID_PATTERN;
/** A listing shows what changes with the status only: no phase or attempt (the job's page has them). */
const JOB_COLUMNS = ["Job", "Pipeline", "Status", "Created", "Status changed"];
/** The created-time filter: jobs created within this long before now (the API's createdFrom). */
const CREATED_WITHIN = { "": "Any time", "1h": "Last hour", "24h": "Last 24 hours", "7d": "Last 7 days", "30d": "Last 30 days" };
const WITHIN_MS = { "1h": 3_600_000, "24h": 86_400_000, "7d": 604_800_000, "30d": 2_592_000_000 };
/** Requests a refresh may make to fill the first page when a filter skips most entries. */
const FIRST_PAGE_READS = 5;
/** The totals per status are read again at most this often (a count reads up to 1,000 entries a shard). */
const COUNTS_MS = 30_000;

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
  const filters = {
    status: STATUSES.includes(route.params.get("status")) ? route.params.get("status") : "",
    pipeline: route.params.get("pipeline") ?? "",
    prefix: ID_PREFIX.test(route.params.get("prefix") ?? "") ? route.params.get("prefix") : "",
    created: Object.hasOwn(WITHIN_MS, route.params.get("created") ?? "") ? route.params.get("created") : "",
    sort: route.params.get("sort") === "cost" ? "cost" : "",
  };
  const view = {
    jobs: [],
    extended: false,
    wantMore: false,
    cursor: null,
    loaded: false,
    known: new Map(),
    counts: null,
    countedAt: 0,
  };

  const statusSelect = h(
    "select",
    { id: "filter-status", name: "status" },
    h("option", { value: "" }, "Any status"),
    STATUSES.map((status) => h("option", { value: status }, STATUS_LABELS[status])),
  );
  statusSelect.value = filters.status;
  const pipelineSelect = h(
    "select",
    { id: "filter-pipeline", name: "pipeline" },
    h("option", { value: "" }, "Any pipeline"),
  );
  const prefixInput = h("input", {
    id: "filter-prefix",
    name: "prefix",
    type: "search",
    maxlength: "128",
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "Any id",
  });
  prefixInput.value = filters.prefix;
  const createdSelect = h(
    "select",
    { id: "filter-created", name: "created" },
    Object.entries(CREATED_WITHIN).map(([value, label]) => h("option", { value }, label)),
  );
  createdSelect.value = filters.created;
  const liveNote = h("p", { class: "live-note muted" }, "Loading…");
  const totals = h("ul", { class: "status-counts", "aria-label": "Job totals", hidden: true });
  const tbody = h("tbody");
  const selection = listSelection({
    tbody,
    shown: () => view.jobs,
    query: () => apiQuery(),
    acted: () => {
      view.countedAt = 0;
      poller.now();
    },
  });
  const table = h(
    "table",
    { class: "jobs-table" },
    h("caption", { class: "visually-hidden" }, "Jobs, newest first"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col", class: "select-cell" }, selection.selectAll),
        JOB_COLUMNS.map((name) => h("th", { scope: "col" }, name)),
        costHeader(() => filters.sort === "cost", () => {
          filters.sort = filters.sort === "cost" ? "" : "cost";
          refilter();
        }),
      ),
    ),
    tbody,
  );
  const empty = h("div", { class: "empty", hidden: true });
  const moreButton = h("button", { type: "button", class: "more", hidden: true }, "Load more");

  main.append(
    h(
      "div",
      { class: "view-head" },
      heading("Jobs"),
      h("a", { class: "button primary", href: "#/new" }, "New job"),
    ),
    h(
      "form",
      { class: "filters", role: "search", "aria-label": "Filter jobs", onsubmit: (event) => event.preventDefault() },
      h("div", { class: "field inline" }, h("label", { for: "filter-status" }, "Status"), statusSelect),
      h("div", { class: "field inline" }, h("label", { for: "filter-pipeline" }, "Pipeline"), pipelineSelect),
      h("div", { class: "field inline" }, h("label", { for: "filter-created" }, "Created"), createdSelect),
      h("div", { class: "field inline" }, h("label", { for: "filter-prefix" }, "Job id starts with"), prefixInput),
      liveNote,
    ),
    totals,
    selection.bar,
    h("div", { class: "table-wrap" }, table),
    empty,
    h("div", { class: "more-row" }, moreButton),
  );

  /** Keep the filters in the address (without a navigation) so that a reload or a shared link keeps them. */
  function rememberFilters() {
    const params = new URLSearchParams();
    if (filters.status) params.set("status", filters.status);
    if (filters.pipeline) params.set("pipeline", filters.pipeline);
    if (filters.prefix) params.set("prefix", filters.prefix);
    if (filters.created) params.set("created", filters.created);
    if (filters.sort) params.set("sort", filters.sort);
    const query = params.toString();
    history.replaceState(null, "", `#/${query ? `?${query}` : ""}`);
  }

  /** Every filter is the API's: a change reads again from the first page. */
  function refilter() {
    statusSelect.value = filters.status;
    showCounts();
    rememberFilters();
    view.jobs = [];
    view.extended = false;
    view.wantMore = false;
    view.loaded = false;
    view.known = new Map();
    selection.clear();
    poller.now();
  }
  statusSelect.addEventListener("change", () => {
    filters.status = statusSelect.value;
    refilter();
  });
  pipelineSelect.addEventListener("change", () => {
    filters.pipeline = pipelineSelect.value;
    refilter();
  });
  createdSelect.addEventListener("change", () => {
    filters.created = createdSelect.value;
    refilter();
  });
  let typing = null;
  prefixInput.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      const prefix = prefixInput.value.trim();
      const usable = prefix === "" || ID_PREFIX.test(prefix);
      prefixInput.setCustomValidity(usable ? "" : "A job id has only letters, digits, '.', '_' or '-'");
      prefixInput.reportValidity();
      if (!usable || prefix === filters.prefix) return;
      filters.prefix = prefix;
      refilter();
    }, 300);
  });

  moreButton.addEventListener("click", async () => {
    view.wantMore = true;
    moreButton.disabled = true;
    moreButton.textContent = "Loading…";
    await poller.now();
  });

  /** The API's query for the filters (createdFrom counted back from now). */
  function apiQuery() {
    const query = {};
    if (filters.status) query.status = filters.status;
    if (filters.pipeline) query.pipeline = filters.pipeline;
    if (filters.prefix) query.idPrefix = filters.prefix;
    if (filters.created) query.createdFrom = new Date(Date.now() - WITHIN_MS[filters.created]).toISOString();
    if (filters.sort) query.sort = filters.sort;
    return query;
  }

  /** One page from `cursor` (null: the first); {jobs, cursor}. */
  async function readPage(cursor, signal) {
    const params = new URLSearchParams({ ...apiQuery(), limit: String(PAGE_SIZE) });
    if (cursor) params.set("cursor", cursor);
    const data = await api(`jobs?${params}`, { signal });
    return { jobs: data?.jobs ?? [], cursor: data?.cursor ?? data?.nextCursor ?? null };
  }

  /**
   * The first page again (read on while a filter leaves it short), merged in front of the older rows
   * "Load more" brought; or, after Load more, the next page appended.
   */
  async function load(signal) {
    let jobs;
    if (view.wantMore && view.cursor) {
      const page = await readPage(view.cursor, signal);
      view.wantMore = false;
      view.extended = true;
      view.cursor = page.cursor;
      jobs = [...view.jobs, ...page.jobs];
    } else {
      const first = [];
      let cursor = null;
      let reads = 0;
      do {
        const page = await readPage(cursor, signal);
        first.push(...page.jobs);
        cursor = page.cursor;
        reads += 1;
      } while (cursor && first.length < PAGE_SIZE && reads < FIRST_PAGE_READS);
      jobs = view.extended ? mergeFirst(first, view.jobs) : first;
      if (!view.extended) view.cursor = cursor;
    }
    announceChanges(jobs);
    const seen = new Set();
    view.jobs = jobs.filter((job) => !seen.has(job.jobId) && seen.add(job.jobId));
    view.loaded = true;
    show();
    fillPipelines();
    // after the rows are shown: a count reads up to 1,000 entries a shard, the page never waits for it
    if (Date.now() - view.countedAt >= COUNTS_MS) await loadCounts(signal);
  }

  /** The caller's totals per status (every job, whatever the filters); none from an API without the route. */
  async function loadCounts(signal) {
    try {
      view.counts = await api("jobs/counts", { signal });
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
      view.counts = null;
    }
    view.countedAt = Date.now();
    showCounts();
  }

  /** Each status with jobs as a button that filters by it (pressed while it does), then the total. */
  function showCounts() {
    const data = view.counts;
    totals.hidden = !data;
    if (!data) return;
    const atLeast = data.exact === false ? "at least " : "";
    const title = atLeast ? "More jobs than a count reads: each figure is a lower bound" : null;
    const numbers = new Intl.NumberFormat();
    const badge = ([status, count]) =>
      h(
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
              refilter();
            },
          },
          `${STATUS_LABELS[status] ?? status} ${atLeast}${numbers.format(count)}`,
        ),
      );
    const counted = Object.entries(data.counts ?? {}).filter(([, count]) => count > 0);
    totals.replaceChildren(
      ...counted.map(badge),
      h("li", { class: "muted", title }, `Total ${atLeast}${numbers.format(data.total ?? 0)}`),
    );
  }

  /** Announce new jobs and status changes since the last read (not on the first read). */
  function announceChanges(jobs) {
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
  async function fillPipelines() {
    let names;
    try {
      names = (await loadPipelines()).map((pipeline) => pipeline.name);
    } catch {
      names = view.jobs.map((job) => job.pipeline);
    }
    if (filters.pipeline) names.push(filters.pipeline);
    const wanted = [...new Set(names)].sort();
    const present = [...pipelineSelect.options].slice(1).map((option) => option.value);
    if (jsonEqual(wanted, present)) return;
    setChildren(
      pipelineSelect,
      h("option", { value: "" }, "Any pipeline"),
      wanted.map((name) => h("option", { value: name }, name)),
    );
    pipelineSelect.value = filters.pipeline;
  }

  /** Render the rows the API listed, the empty message, the selection and the Load more button. */
  function show() {
    const shown = filters.sort === "cost" ? byCost(view.jobs) : view.jobs;
    renderJobRows(tbody, shown, selection.selected);
    selection.show();
    table.hidden = shown.length === 0;
    empty.hidden = !view.loaded || shown.length > 0;
    empty.replaceChildren(...emptyMessage());
    moreButton.hidden = !view.cursor;
    moreButton.disabled = false;
    moreButton.textContent = "Load more";
    const count = `${shown.length} job${shown.length === 1 ? "" : "s"}${view.cursor ? " (more to load)" : ""}`;
    view.count = count;
    view.updated = new Date();
    showLiveNote();
  }

  /** How many jobs are shown and when they were read; offline, since when the API has not answered. */
  function showLiveNote() {
    if (!view.count) return;
    const offline = connectionState() === "offline";
    liveNote.dataset.state = offline ? "offline" : "live";
    liveNote.textContent = offline
      ? `${view.count} · offline, as read at ${clockFormat.format(view.updated)}`
      : `${view.count} · live, updated ${clockFormat.format(view.updated)}`;
  }

  function emptyMessage() {
    if (view.jobs.length === 0 && !filters.status && !filters.pipeline && !filters.prefix && !filters.created && !view.cursor) {
      return [h("p", {}, "No jobs yet: ", h("a", { href: "#/new" }, "start one"), " and watch it here.")];
    }
    const more = view.cursor ? " so far; Load more looks further" : "";
    return [h("p", {}, `No job matches these filters${more}.`)];
  }

  const poller = new Poller(load);
  const stopListening = onConnectionChange(showLiveNote);
  const stopShortcuts = listShortcuts({ search: prefixInput, rows: () => [...tbody.rows] });
  poller.start();
  return {
    stop: () => {
      clearTimeout(typing); // a search typed just before another view opened (Enter) must not bring the list back
      stopListening();
      stopShortcuts();
      poller.stop();
    },
    refresh: () => poller.now(),
  };
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

/**
 * Update the table's rows in place, keyed by job id, and in a row only the cells whose content changed:
 * the link to a job (and the row's checkbox) is never rebuilt, so the focus survives a poll.
 * @param {HTMLTableSectionElement} tbody
 * @param {object[]} jobs
 * @param {Set<string>} selected the ids whose checkbox is ticked
 */
function renderJobRows(tbody, jobs, selected) {
  const rows = new Map([...tbody.rows].map((row) => [row.dataset.jobId, row]));
  jobs.forEach((job, index) => {
    let row = rows.get(job.jobId);
    rows.delete(job.jobId);
    if (!row) {
      const box = h("input", { type: "checkbox", class: "row-select", "aria-label": `Select job ${job.jobId}` });
      box.checked = selected.has(job.jobId);
      row = h("tr", { dataset: { jobId: job.jobId } }, h("td", { class: "select-cell" }, box));
    }
    const signature = JSON.stringify([job.status, job.pipeline, job.updatedAt, job.corrupt, job.costUsd]);
    if (row.dataset.signature !== signature) {
      row.dataset.signature = signature;
      row.dataset.status = job.status;
      updateCells(row, jobCells(job));
    }
    if (tbody.rows[index] !== row) tbody.insertBefore(row, tbody.rows[index] ?? null);
  });
  for (const row of rows.values()) row.remove();
}

/** Put `cells` in `row` after its checkbox, replacing only the cells whose markup differs from the one in their place. */
function updateCells(row, cells) {
  cells.forEach((cell, index) => {
    const present = row.cells[index + 1];
    if (!present) row.append(cell);
    else if (present.innerHTML !== cell.innerHTML) present.replaceWith(cell);
  });
  while (row.cells.length > cells.length + 1) row.lastElementChild.remove();
}

/** The cells of a job's row (each with its column's name, shown as a label on a phone). */
function jobCells(job) {
  const cell = (label, ...children) => h("td", { "data-label": label }, ...children);
  return [
    cell("Job", h("a", { class: "job-link mono", href: `#/jobs/${encodeURIComponent(job.jobId)}` }, job.jobId)),
    cell("Pipeline", job.pipeline),
    cell(
      "Status",
      statusBadge(job.status),
      job.corrupt ? h("span", { class: "badge status-error", title: job.error ?? "" }, "unreadable") : null,
    ),
    cell("Created", timeElement(job.createdAt)),
    cell("Status changed", timeElement(job.updatedAt)),
    costCell(job),
  ];
}
