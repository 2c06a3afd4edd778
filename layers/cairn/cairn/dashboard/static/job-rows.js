/**
 * The rows of the jobs table, updated in place: a poll changes only the cells whose content changed.
 */

import { costCell } from "./cost.js";
import { h } from "./dom.js";
import { timeElement } from "./format.js";
import { statusBadge } from "./icons.js";
import { stalledBadge } from "./stalled.js";

/**
 * Update the table's rows in place, keyed by job id, and in a row only the cells whose content changed:
 * the link to a job (and the row's checkbox) is never rebuilt, so the focus survives a poll.
 * @param {HTMLTableSectionElement} tbody
 * @param {object[]} jobs
 * @param {Set<string>} selected the ids whose checkbox is ticked
 */
export function renderJobRows(tbody, jobs, selected) {
  const rows = new Map([...tbody.rows].map((row) => [row.dataset.jobId, row]));
  jobs.forEach((job, index) => {
    let row = rows.get(job.jobId);
    rows.delete(job.jobId);
    if (!row) {
      const box = h("input", { type: "checkbox", class: "row-select", "aria-label": `Select job ${job.jobId}` });
      box.checked = selected.has(job.jobId);
      row = h("tr", { dataset: { jobId: job.jobId } }, h("td", { class: "select-cell" }, box));
    }
    const signature = JSON.stringify([job.status, job.pipeline, job.updatedAt, job.corrupt, job.costUsd, job.stalled]);
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
      stalledBadge(job),
    ),
    cell("Created", timeElement(job.createdAt)),
    cell("Status changed", timeElement(job.updatedAt)),
    costCell(job),
  ];
}
