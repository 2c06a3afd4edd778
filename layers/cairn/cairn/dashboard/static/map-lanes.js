/**
 * A job's maps, each drawn as one lane (`GET /jobs/{id}/maps`): a bar of its items by status, the counts, the
 * failed items and the slowest listed, each item's attempts, error, traceback and log one click away
 * (`GET /jobs/{id}/maps/{mapId}/items/{index}`).
 */

import { api, ApiError, jobPath } from "./api.js";
import { h, setChildren } from "./dom.js";
import { formatDuration, formatTime, numberFormat, prettyJson } from "./format.js";
import { renderLog } from "./log.js";

const STATUS_ORDER = ["done", "failed", "pending"];

/** An item as a button that opens it: its index, status and attempts. */
function itemButton(jobId, lane, item, open) {
  const attempts = item.attempt > 1 ? ` · ${item.attempt} attempts` : "";
  const error = item.errorType ? ` · ${item.errorType}` : item.error ? " · error" : "";
  const ran = item.ranMs != null ? ` · ran ${formatDuration(item.ranMs)}` : "";
  return h(
    "li",
    {},
    h(
      "button",
      {
        type: "button",
        class: `quiet small item-button status-${item.status}`,
        onclick: () => open(lane, item.index),
        "aria-label": `Item ${item.index} of map ${lane.id}: ${item.status}`,
      },
      `item ${item.index}`,
    ),
    ` ${item.status}${attempts}${ran}${error} · ${formatTime(item.updatedAt)}`,
  );
}

/** One lane: the bar, the counts, the failed and the slowest items. */
function laneElement(jobId, lane, open) {
  const bar = h("div", { class: "map-bar", "aria-hidden": "true" });
  for (const status of STATUS_ORDER) {
    const count = lane.counts?.[status] ?? 0;
    if (!count) continue;
    const part = h("span", { class: `map-part status-${status}` });
    part.style.width = `${((count / Math.max(lane.count, 1)) * 100).toFixed(3)}%`; // CSSOM: CSP-safe
    bar.append(part);
  }
  const counts = STATUS_ORDER.map((status) => `${numberFormat.format(lane.counts?.[status] ?? 0)} ${status}`).join(", ");
  return h(
    "li",
    { class: "map-lane", dataset: { map: lane.id } },
    h(
      "p",
      { class: "map-title" },
      h("strong", {}, `Map of ${lane.phase}`),
      ` · ${numberFormat.format(lane.count)} items from ${lane.startedBy}, then ${lane.then} · ${counts} · `,
      `${numberFormat.format(lane.attempts)} attempts`,
    ),
    bar,
    lane.failed?.length
      ? h("div", {}, h("p", { class: "muted" }, "Failed:"), h("ul", { class: "map-items", "aria-label": "Failed items" }, lane.failed.map((item) => itemButton(jobId, lane, item, open))))
      : null,
    lane.slowest?.length
      ? h("div", {}, h("p", { class: "muted" }, "Slowest:"), h("ul", { class: "map-items", "aria-label": "Slowest items" }, lane.slowest.map((item) => itemButton(jobId, lane, item, open))))
      : null,
  );
}

/**
 * The maps block: `refresh(signal)` reads the lanes again; an item opened shows below the lanes.
 * @param {string} jobId
 * @returns {{element: HTMLElement, refresh: (signal?: AbortSignal) => Promise<void>}}
 */
export function mapLanes(jobId) {
  const lanes = h("ol", { class: "map-lanes", "aria-label": "Maps" });
  const detail = h("div", { class: "map-item-detail", "aria-live": "polite" });
  const element = h("div", { class: "maps", hidden: true }, h("h3", {}, "Maps"), lanes, detail);

  async function open(lane, index) {
    detail.replaceChildren(h("p", { class: "muted" }, `Reading item ${index}…`));
    try {
      const item = await api(`${jobPath(jobId)}/maps/${encodeURIComponent(lane.id)}/items/${index}`);
      const log = h("ol", { class: "log", "aria-label": `Log of item ${index}` });
      const box = h("div", { class: "log-box" }, log);
      setChildren(
        detail,
        h("h4", {}, `Item ${item.index} of the map of ${lane.phase}: ${item.status}, attempt ${item.attempt}`),
        item.error ? h("p", { class: "timeline-error" }, item.errorType ? `${item.errorType}: ${item.error}` : item.error) : null,
        item.failure?.traceback ? h("details", { class: "failure", open: true }, h("summary", {}, "Traceback"), h("pre", { class: "traceback mono" }, item.failure.traceback)) : null,
        h("details", {}, h("summary", {}, "Input"), h("pre", { class: "json" }, prettyJson(item.input))),
        item.status === "done" ? h("details", {}, h("summary", {}, "Result"), h("pre", { class: "json" }, prettyJson(item.result))) : null,
        box,
      );
      renderLog(log, item.log ?? [], "", true);
    } catch (error) {
      const message = error instanceof ApiError ? error.message : String(error?.message ?? error);
      detail.replaceChildren(h("p", { class: "field-error", role: "alert" }, message));
    }
  }

  async function refresh(signal) {
    let found;
    try {
      found = await api(`${jobPath(jobId)}/maps`, { signal });
    } catch (error) {
      if (error instanceof ApiError && [404, 405].includes(error.status)) return; // an API without the route
      throw error;
    }
    const maps = found?.maps ?? [];
    element.hidden = maps.length === 0;
    lanes.replaceChildren(...maps.map((lane) => laneElement(jobId, lane, open)));
  }

  return { element, refresh };
}
