/**
 * The jobs list's filters (status, pipeline, created within, the start of the job id, the sort): read from the
 * address and kept there, their controls, and the API's query for them.
 */

import { h, setChildren } from "./dom.js";
import { JOB_ID_PATTERN } from "./ids.js";
import { STATUS_LABELS, STATUSES } from "./labels.js";
import { jsonEqual } from "./schema.js";

/** The status filter's "Stalled": running jobs that no worker holds (the API's stalled=true). */
export const STALLED = "stalled";
/** What a job id may start with (the API's rule for a job id): a prefix outside it matches nothing. */
export const ID_PREFIX = JOB_ID_PATTERN;
/** The created-time filter: jobs created within this long before now (the API's createdFrom). */
const CREATED_WITHIN = { "": "Any time", "1h": "Last hour", "24h": "Last 24 hours", "7d": "Last 7 days", "30d": "Last 30 days" };
const WITHIN_MS = { "1h": 3_600_000, "24h": 86_400_000, "7d": 604_800_000, "30d": 2_592_000_000 };

/**
 * The filters the address asks for; one the API would refuse (an unknown status, a prefix no job id has) is none.
 * @param {URLSearchParams} params
 */
export function filtersFrom(params) {
  const failure = failureFrom(params);
  const status = failure.errorType || failure.errorPhase ? "error" : params.get("status");
  return {
    status: [...STATUSES, STALLED].includes(status) ? status : "",
    pipeline: params.get("pipeline") ?? "",
    prefix: ID_PREFIX.test(params.get("prefix") ?? "") ? params.get("prefix") : "",
    created: Object.hasOwn(WITHIN_MS, params.get("created") ?? "") ? params.get("created") : "",
    sort: params.get("sort") === "cost" ? "cost" : "",
    ...failure,
  };
}

/** The longest exception type the API takes (a failure group of the Failures view names one). */
const MAX_TYPE = 200;
const PHASE = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

/**
 * A failure group's filter (the Failures view links to it): the exception type, the failed phase and the exact
 * created-time range of the group, each kept only when the API would take it.
 */
function failureFrom(params) {
  const time = (name) => {
    const value = params.get(name) ?? "";
    return value && !Number.isNaN(Date.parse(value)) ? value : "";
  };
  const type = params.get("errorType") ?? "";
  const phase = params.get("errorPhase") ?? "";
  return {
    errorType: type.length <= MAX_TYPE ? type : "",
    errorPhase: PHASE.test(phase) ? phase : "",
    createdFrom: time("createdFrom"),
    createdTo: time("createdTo"),
  };
}

/** Whether the filters name a failure group (its exception type or phase, or its exact range). */
export function namesFailure(filters) {
  return Boolean(filters.errorType || filters.errorPhase || filters.createdFrom || filters.createdTo);
}

/** Stop filtering by a failure group (another status, or the user cleared it). */
export function clearFailure(filters) {
  Object.assign(filters, { errorType: "", errorPhase: "", createdFrom: "", createdTo: "" });
}

/** What the failure group filtered by is, in words: "TypeError in check, created 09:00-10:00". */
export function failureLabel(filters) {
  const parts = [];
  if (filters.errorType) parts.push(filters.errorType === "-" ? "no exception" : filters.errorType);
  if (filters.errorPhase) parts.push(`in ${filters.errorPhase}`);
  const range = [filters.createdFrom, filters.createdTo].map((value) =>
    value ? new Date(value).toLocaleString() : "…",
  );
  if (filters.createdFrom || filters.createdTo) parts.push(`created ${range[0]} – ${range[1]}`);
  return parts.join(" ");
}

/** The filters' controls, set to `filters` (the pipelines are added once known: fillPipelines). */
export function filterControls(filters) {
  const statusSelect = h(
    "select",
    { id: "filter-status", name: "status" },
    h("option", { value: "" }, "Any status"),
    STATUSES.map((status) => h("option", { value: status }, STATUS_LABELS[status])),
    h("option", { value: STALLED }, "Stalled (running, no worker)"),
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
  return { statusSelect, pipelineSelect, prefixInput, createdSelect };
}

/**
 * The search form: each control with its label, then `liveNote`. On a phone the controls fold behind a
 * "Filters" button (a disclosure), open at first when a filter narrows the list, so that the jobs come first.
 */
export function filterForm(controls, liveNote) {
  const { statusSelect, pipelineSelect, prefixInput, createdSelect } = controls;
  const narrowed = [statusSelect, pipelineSelect, prefixInput, createdSelect].some((control) => control.value);
  const toggle = h(
    "button",
    { type: "button", class: "quiet small filters-toggle", "aria-controls": "job-filters", "aria-expanded": String(narrowed) },
    "Filters",
  );
  const form = h(
    "form",
    {
      id: "job-filters",
      class: narrowed ? "filters open" : "filters",
      role: "search",
      "aria-label": "Filter jobs",
      onsubmit: (event) => event.preventDefault(),
    },
    toggle,
    h("div", { class: "field inline" }, h("label", { for: "filter-status" }, "Status"), statusSelect),
    h("div", { class: "field inline" }, h("label", { for: "filter-pipeline" }, "Pipeline"), pipelineSelect),
    h("div", { class: "field inline" }, h("label", { for: "filter-created" }, "Created"), createdSelect),
    h("div", { class: "field inline" }, h("label", { for: "filter-prefix" }, "Job id starts with"), prefixInput),
    liveNote,
  );
  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(open));
    form.classList.toggle("open", open);
  });
  return form;
}

/** Keep the filters in the address (without a navigation) so that a reload or a shared link keeps them. */
export function rememberFilters(filters) {
  const params = new URLSearchParams();
  if (filters.status) params.set("status", filters.status);
  if (filters.pipeline) params.set("pipeline", filters.pipeline);
  if (filters.prefix) params.set("prefix", filters.prefix);
  if (filters.created) params.set("created", filters.created);
  if (filters.sort) params.set("sort", filters.sort);
  for (const name of ["errorType", "errorPhase", "createdFrom", "createdTo"]) {
    if (filters[name]) params.set(name, filters[name]);
  }
  const query = params.toString();
  history.replaceState(null, "", `#/${query ? `?${query}` : ""}`);
}

/** The API's query for the filters (createdFrom counted back from now). */
export function apiQuery(filters) {
  const query = {};
  if (filters.status === STALLED) query.stalled = "true";
  else if (filters.status) query.status = filters.status;
  if (filters.pipeline) query.pipeline = filters.pipeline;
  if (filters.prefix) query.idPrefix = filters.prefix;
  if (filters.created) query.createdFrom = new Date(Date.now() - WITHIN_MS[filters.created]).toISOString();
  if (filters.sort) query.sort = filters.sort;
  for (const name of ["errorType", "errorPhase", "createdFrom", "createdTo"]) {
    if (filters[name]) query[name] = filters[name];
  }
  if (query.errorType || query.errorPhase) query.status = "error";
  if (filters.createdFrom && filters.created) {
    query.createdFrom = new Date(
      Math.max(Date.parse(filters.createdFrom), Date.now() - WITHIN_MS[filters.created]),
    ).toISOString();
  }
  return query;
}

/** Whether any filter narrows the list (the sort does not). */
export function anyFilter(filters) {
  return Boolean(filters.status || filters.pipeline || filters.prefix || filters.created || namesFailure(filters));
}

/**
 * Offer `names` (sorted, once each) in the pipeline filter, with the one filtered by; the select is left as it is
 * when it offers them already.
 */
export function fillPipelineSelect(pipelineSelect, names, filters) {
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
