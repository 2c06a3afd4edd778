/**
 * The job view's elements: the status banner, the action buttons and the panels (timeline, runs compared, log,
 * usage, cost, checkpoint, what each phase saw, pipeline), empty until the job is read; and the page said
 * instead when there is no such job.
 */

import { ACTION_NAMES, actionClass } from "./actions.js";
import { h } from "./dom.js";
import { entryStates } from "./entry-states.js";
import { icon } from "./icons.js";
import { KIND_LABELS } from "./labels.js";
import { mapLanes } from "./map-lanes.js";
import { runCompare } from "./run-compare.js";

/**
 * The view's elements, `grid` holding the panels; `maps`, `sawPanel` and `compared` are the panels that read
 * on their own. `enterable()` gives the phases the job can enter, `signal()` the poller's abort signal.
 * @param {string} jobId
 * @param {() => string[]} enterable
 * @param {() => AbortSignal} signal
 */
export function jobParts(jobId, enterable, signal) {
  const buttons = new Map(
    ACTION_NAMES.map((name) => [name, h("button", { type: "button", class: actionClass(name), disabled: true }, name)]),
  );
  const logList = h("ol", { class: "log", "aria-label": "Log entries, oldest first" });
  const statePre = h("pre", { class: "json", tabindex: "0" });
  const inputPre = h("pre", { class: "json", tabindex: "0" });
  const parts = {
    banner: loadingBanner(),
    buttons,
    actions: h("div", { class: "actions", role: "group", "aria-label": "Actions" }, [...buttons.values()]),
    meta: h("p", { class: "job-meta muted" }),
    timeline: h("div", { class: "timeline" }),
    logFilter: logFilterSelect(),
    logCount: h("span", { class: "count" }),
    logList,
    logBox: h("div", { class: "log-box", tabindex: "0", "aria-label": "Log" }, logList),
    usage: h("div", { class: "usage" }),
    costBox: h("div", { class: "cost" }),
    checkpoint: h("div", { class: "checkpoint" }),
    statePre,
    stateDetails: h("details", { class: "state" }, h("summary", {}, "State"), statePre),
    inputPre,
    inputDetails: h("details", { class: "input" }, h("summary", {}, "Input"), inputPre),
    result: h("div", { class: "result" }),
    graph: h("div", { class: "pipeline-graph" }),
    maps: mapLanes(jobId),
    sawPanel: entryStates(jobId, enterable, signal),
    compared: runCompare(jobId, signal),
  };
  parts.grid = h("div", { class: "job-grid" }, mainColumn(parts), sideColumn(parts));
  return parts;
}

/** The banner until the job is read. */
function loadingBanner() {
  return h(
    "div",
    { class: "banner", role: "status", "aria-atomic": "true", "data-status": "loading" },
    icon("loading"),
    h("div", {}, h("p", { class: "banner-title" }, "Loading the job…"), h("p", { class: "banner-detail" })),
  );
}

/** What the log shows: everything, the annotations only, or one kind of entry only. */
function logFilterSelect() {
  return h(
    "select",
    { id: "log-filter" },
    h("option", { value: "" }, "Everything"),
    h("option", { value: "annotations" }, "Annotations only"),
    Object.entries(KIND_LABELS).map(([kind, label]) => h("option", { value: kind }, `${label} only`)),
  );
}

/** The wide column: the timeline (with the maps' lanes), the runs compared, the log. */
function mainColumn(parts) {
  return h(
    "div",
    { class: "job-main" },
    h(
      "section",
      { class: "panel timeline-panel", "aria-labelledby": "timeline-title" },
      h("h2", { id: "timeline-title" }, "Timeline"),
      parts.timeline,
      parts.maps.element,
    ),
    parts.compared.element,
    h(
      "section",
      { class: "panel log-panel", "aria-labelledby": "log-title" },
      h(
        "div",
        { class: "panel-head" },
        h("h2", { id: "log-title" }, "Log ", parts.logCount),
        h("div", { class: "field inline" }, h("label", { for: "log-filter" }, "Show"), parts.logFilter),
      ),
      parts.logBox,
    ),
  );
}

/** The side column: usage, cost, the checkpoint (state, input, result), what each phase saw, the pipeline. */
function sideColumn(parts) {
  return h(
    "div",
    { class: "job-side" },
    h(
      "section",
      { class: "panel usage-panel", "aria-labelledby": "usage-title" },
      h("h2", { id: "usage-title" }, "Usage"),
      parts.usage,
    ),
    h("section", { class: "panel cost-panel", "aria-labelledby": "cost-title" }, h("h2", { id: "cost-title" }, "Cost"), parts.costBox),
    h(
      "section",
      { class: "panel checkpoint-panel", "aria-labelledby": "checkpoint-title" },
      h("h2", { id: "checkpoint-title" }, "Checkpoint"),
      parts.checkpoint,
      parts.stateDetails,
      parts.inputDetails,
      h("h3", {}, "Result"),
      parts.result,
    ),
    h(
      "section",
      { class: "panel seen-panel", "aria-labelledby": "seen-title" },
      h("h2", { id: "seen-title" }, "What each phase saw"),
      parts.sawPanel.element,
    ),
    h(
      "section",
      { class: "panel graph-panel", "aria-labelledby": "graph-title" },
      h("h2", { id: "graph-title" }, "Pipeline"),
      parts.graph,
    ),
  );
}

/** The banner's content when no job has the id: the API's message. */
export function notFoundBanner(banner, error) {
  banner.dataset.status = "missing";
  banner.replaceChildren(
    icon("cancelled"),
    h("div", {}, h("p", { class: "banner-title" }, "No such job"), h("p", { class: "banner-detail" }, error.message)),
  );
}

/** What stands instead of the panels when no job has the id: why that may be, and where to look. */
export function notFoundPanel(jobId) {
  return h(
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
  );
}
