/**
 * What a job costs: the job view's cost panel (per job and per phase run) and the list's cost column.
 * The API's job view carries `cost`; a listing carries each job's `costUsd` (sorted by cost, `sort=cost`:
 * every job of the filter dearest first, page after page, each at the cost it is ordered by).
 */

import { h, setChildren } from "./dom.js";

/** Dollars as the CLI shows them: cents from a dollar up, six decimals below. */
export function formatUsd(usd) {
  if (typeof usd !== "number" || !Number.isFinite(usd)) return "—";
  return usd >= 1 ? `$${usd.toFixed(2)}` : `$${usd.toFixed(6)}`;
}

/** The job's cost: the total, the prices' region and date, and one row per phase run of the view. */
export function renderCost(container, job) {
  const cost = job.cost;
  if (!cost) {
    setChildren(container, h("p", { class: "muted" }, "No cost: this API shows none."));
    return;
  }
  const runs = (job.phases ?? []).map((record, index) =>
    h(
      "tr",
      {},
      h("td", { class: "mono" }, record.phase),
      h("td", {}, String(record.attempt ?? 1)),
      h("td", { class: "cost-usd" }, formatUsd(cost.phases?.[index])),
    ),
  );
  const unpriced = cost.unpriced ?? [];
  setChildren(
    container,
    h("p", { class: "cost-total" }, h("strong", {}, formatUsd(cost.usd))),
    h("p", { class: "muted cost-prices" }, `At ${cost.region} prices of ${cost.pricesDate}`),
    unpriced.length ? h("p", { class: "muted" }, `Not priced: ${unpriced.join(", ")}`) : null,
    runs.length
      ? h(
          "table",
          { class: "cost-phases" },
          h("caption", { class: "visually-hidden" }, "Cost of each phase run, oldest first"),
          h("thead", {}, h("tr", {}, ["Phase", "Attempt", "Cost"].map((name) => h("th", { scope: "col" }, name)))),
          h("tbody", {}, runs),
        )
      : null,
  );
}

/**
 * The list's cost column header: a button that lists every job of the filter dearest first (the API's order,
 * across pages), and back to newest first.
 */
export function costHeader(isSorted, toggle) {
  const button = h("button", { type: "button", class: "sort-button" });
  const header = h("th", { scope: "col" }, button);
  const paint = () => {
    const sorted = isSorted();
    button.setAttribute("aria-pressed", String(sorted));
    button.title = sorted ? "Sorted by cost, dearest first: press for newest first" : "Sort by cost, dearest first";
    button.textContent = sorted ? "Cost ↓" : "Cost";
    header.setAttribute("aria-sort", sorted ? "descending" : "none");
  };
  button.addEventListener("click", () => {
    toggle();
    paint();
  });
  paint();
  return header;
}

/** A job's cost cell: its cost as the listing carried it ("—": not known, such as an older API's). */
export function costCell(job) {
  return h("td", { "data-label": "Cost", class: "cost-usd" }, "costUsd" in job ? formatUsd(job.costUsd) : "—");
}
