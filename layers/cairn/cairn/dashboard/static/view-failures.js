/**
 * The Failures view (`#/failures?since=24h`): why jobs are failing, grouped by exception type, phase and pipeline
 * (`GET /failures`), each group a link to the jobs list filtered to it.
 */

import { ApiError, api } from "./api.js";
import { h, heading } from "./dom.js";
import { clockFormat, timeElement } from "./format.js";

/** The ranges offered, as the API reads them (a span before now), with their labels. */
const RANGES = { "1h": "Last hour", "24h": "Last 24 hours", "7d": "Last 7 days" };
const DEFAULT_RANGE = "24h";
const COLUMNS = ["Exception", "Phase", "Pipeline", "Jobs", "Newest", "Sample message"];

/**
 * The groups of the range the address names, biggest first; read once when the view opens, again on "Refresh" or
 * another range (a read examines up to 1,000 failed jobs: it is not polled).
 * @param {HTMLElement} main
 * @param {{params: URLSearchParams}} route
 */
export function failuresView(main, route) {
  const asked = route.params.get("since") ?? "";
  const state = { since: Object.hasOwn(RANGES, asked) ? asked : DEFAULT_RANGE, controller: new AbortController() };
  const ui = failuresUi();
  main.append(
    h("div", { class: "view-head" }, heading("Failures"), ui.refresh),
    h("p", { class: "muted" }, "Jobs in error that were created in the range, grouped by exception type, phase and pipeline."),
    ui.ranges,
    ui.status,
    h("div", { class: "table-wrap" }, ui.table),
    ui.empty,
  );
  const read = () => load(state, ui);
  ui.onRange = (since) => {
    state.since = since;
    history.replaceState(null, "", `#/failures?since=${since}`);
    showRanges(state, ui);
    read();
  };
  ui.refresh.addEventListener("click", read);
  showRanges(state, ui);
  read();
  return { stop: () => state.controller.abort(), refresh: read };
}

/** The view's elements: the range picker, the status line, the table and the empty or error state. */
function failuresUi() {
  const ui = {
    refresh: h("button", { type: "button", class: "quiet" }, "Refresh"),
    ranges: h("div", { class: "range-picker", role: "group", "aria-label": "Created within" }),
    status: h("p", { class: "live-note muted", role: "status", "aria-live": "polite" }, "Loading…"),
    tbody: h("tbody"),
    empty: h("div", { class: "empty", hidden: true }),
    onRange: () => {},
  };
  ui.table = h(
    "table",
    { class: "jobs-table failures-table", hidden: true },
    h("caption", { class: "visually-hidden" }, "Failure groups, biggest first"),
    h("thead", {}, h("tr", {}, COLUMNS.map((name) => h("th", { scope: "col" }, name)))),
    ui.tbody,
  );
  return ui;
}

/** One button per range (made once, so that the focus stays on the one pressed), the one shown pressed. */
function showRanges(state, ui) {
  if (!ui.ranges.childElementCount) {
    ui.ranges.append(
      ...Object.entries(RANGES).map(([since, label]) =>
        h("button", { type: "button", class: "quiet small", dataset: { since }, onclick: () => ui.onRange(since) }, label),
      ),
    );
  }
  for (const button of ui.ranges.children) button.setAttribute("aria-pressed", String(button.dataset.since === state.since));
}

/** Read the range's groups and show them; a refusal or no answer is shown in place of the table. */
async function load(state, ui) {
  state.controller.abort();
  state.controller = new AbortController();
  const { signal } = state.controller;
  ui.status.textContent = "Loading…";
  ui.refresh.disabled = true;
  try {
    const report = await api(`failures?since=${encodeURIComponent(state.since)}`, { signal });
    show(report, ui);
  } catch (error) {
    if (error?.name === "AbortError") return;
    showError(error, ui);
  } finally {
    if (!signal.aborted) ui.refresh.disabled = false;
  }
}

/** The groups as rows, or the empty state; the status line says how many jobs and whether each count is exact. */
function show(report, ui) {
  const groups = report?.groups ?? [];
  ui.tbody.replaceChildren(...groups.map(groupRow));
  ui.table.hidden = groups.length === 0;
  ui.empty.hidden = groups.length > 0;
  ui.empty.replaceChildren(
    h("p", {}, "No failed jobs in this range. ", h("a", { href: "#/?status=error" }, "See every failed job"), "."),
  );
  const atLeast = report?.exact === false ? "at least " : "";
  const jobs = report?.examined ?? 0;
  const counted = `${atLeast}${jobs} failed job${jobs === 1 ? "" : "s"} in ${groups.length} group${groups.length === 1 ? "" : "s"}`;
  ui.status.textContent = `${counted} · read at ${clockFormat.format(new Date())}`;
  ui.status.title = atLeast ? "More failed jobs than one read examines: each count is a lower bound" : "";
}

/** A group's row: its exception type links to the jobs list filtered to the group. */
function groupRow(group) {
  const cell = (label, ...children) => h("td", { "data-label": label }, ...children);
  const type = group.type ?? "no exception";
  const where = `${type}${group.phase ? ` in ${group.phase}` : ""}, ${group.pipeline}`;
  const link = h(
    "a",
    {
      class: "mono failure-link",
      href: `#/?${group.query}`,
      "aria-label": `${type}: show the ${group.count} job${group.count === 1 ? "" : "s"} of ${where}`,
    },
    type,
  );
  return h(
    "tr",
    { dataset: { type, phase: group.phase ?? "", pipeline: group.pipeline } },
    cell("Exception", link),
    cell("Phase", group.phase ?? h("span", { class: "muted" }, "—")),
    cell("Pipeline", group.pipeline),
    cell("Jobs", String(group.count)),
    cell("Newest", timeElement(group.newestAt)),
    cell("Sample message", h("span", { class: "error-message", title: `From job ${group.sampleJobId}` }, group.sample)),
  );
}

/** The error state: what the API said (or that it did not answer), and a way to try again. */
function showError(error, ui) {
  const message = error instanceof ApiError ? error.message : `Something went wrong: ${error?.message ?? error}`;
  ui.table.hidden = true;
  ui.empty.hidden = false;
  ui.status.textContent = "Not read";
  ui.empty.replaceChildren(
    h("p", { class: "error-state", role: "alert" }, `The failures could not be read: ${message}`),
    h("button", { type: "button", onclick: () => ui.refresh.click() }, "Try again"),
  );
}
