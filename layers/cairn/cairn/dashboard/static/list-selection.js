/**
 * The jobs list's selection: a checkbox a row (and one for every row shown), and the bar that acts on the
 * selected rows, or on every job the filter matches, through bulk-actions.js.
 */

import { openBulk } from "./bulk-actions.js";
import { h } from "./dom.js";

/**
 * The selection of a jobs table.
 * @param {{tbody: HTMLTableSectionElement, shown: () => object[], query: () => object, acted: () => void}} list
 *   `shown`: the jobs the table shows; `query`: the API's query for the filter; `acted`: after a bulk action
 * @returns {{bar: HTMLElement, selectAll: HTMLInputElement, selected: Set<string>, show: () => void, clear: () => void}}
 */
export function listSelection({ tbody, shown, query, acted }) {
  const selected = new Set();
  const selectAll = h("input", { type: "checkbox", class: "select-all", "aria-label": "Select every job shown" });
  const count = h("span", { class: "bulk-count" }, "No job selected");
  const button = (name, label, matching) =>
    h(
      "button",
      { type: "button", dataset: { bulk: name, matching: String(matching) }, class: matching ? "quiet" : null },
      label,
    );
  const bar = h(
    "div",
    { class: "bulk-bar", role: "group", "aria-label": "Act on many jobs" },
    count,
    button("retry", "Retry selected", false),
    button("cancel", "Cancel selected", false),
    button("restart", "Start over selected", false),
    h("span", { class: "bulk-or muted" }, "or all matching the filter:"),
    button("retry", "Retry all", true),
    button("cancel", "Cancel all", true),
    button("restart", "Start over all", true),
  );

  /** The count, the buttons it allows and the select-all box, for the rows shown now. */
  function show() {
    const ids = shown().map((job) => job.jobId);
    for (const jobId of [...selected]) if (!ids.includes(jobId)) selected.delete(jobId);
    count.textContent = selected.size ? `${selected.size} selected` : "No job selected";
    for (const each of bar.querySelectorAll("[data-bulk]")) {
      each.disabled = each.dataset.matching === "true" ? ids.length === 0 : selected.size === 0;
    }
    selectAll.checked = selected.size > 0 && selected.size === ids.length;
    selectAll.indeterminate = selected.size > 0 && selected.size < ids.length;
  }

  function clear() {
    selected.clear();
    for (const box of tbody.querySelectorAll("input.row-select")) box.checked = false;
    show();
  }

  tbody.addEventListener("change", (event) => {
    const box = event.target.closest("input.row-select");
    if (!box) return;
    const jobId = box.closest("tr").dataset.jobId;
    if (box.checked) selected.add(jobId);
    else selected.delete(jobId);
    show();
  });
  selectAll.addEventListener("change", () => {
    selected.clear();
    if (selectAll.checked) for (const job of shown()) selected.add(job.jobId);
    for (const box of tbody.querySelectorAll("input.row-select")) box.checked = selectAll.checked;
    show();
  });
  bar.addEventListener("click", (event) => {
    const pressed = event.target.closest("button[data-bulk]");
    if (!pressed) return;
    const target =
      pressed.dataset.matching === "true"
        ? { query: query() }
        : { jobs: shown().filter((job) => selected.has(job.jobId)) };
    openBulk(pressed.dataset.bulk, target, () => {
      clear();
      acted();
    });
  });
  show();
  return { bar, selectAll, selected, show, clear };
}
