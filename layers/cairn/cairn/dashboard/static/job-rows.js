/**
 * The rows of the jobs table, updated in place: a poll changes only the cells whose content changed.
 */

import { costCell } from "./cost.js";
import { h } from "./dom.js";
import { formatDuration, timeElement } from "./format.js";
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
    const cells = jobCells(job);
    const signature = JSON.stringify([
      job.status,
      job.pipeline,
      job.updatedAt,
      job.corrupt,
      job.costUsd,
      job.stalled,
      cells[5].textContent, // a running job's duration grows
    ]);
    if (row.dataset.signature !== signature) {
      row.dataset.signature = signature;
      row.dataset.status = job.status;
      updateCells(row, cells);
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
    cell("Duration", durationText(job)),
    errorCell(job),
    costCell(job),
  ];
}

/** Statuses a job leaves only by an action: its duration is from its creation to its last status change. */
const FINISHED = new Set(["complete", "error", "cancelled"]);
/** The most characters of an error's first line a row shows (the whole message on hover and in the job's view). */
const ERROR_CHARS = 120;

/** How long the job took (created to finished), or has taken so far (created to now). */
export function durationText(job, now = Date.now()) {
  if (job.createdAt == null) return "—";
  if (FINISHED.has(job.status)) return formatDuration(job.updatedAt - job.createdAt);
  return `${formatDuration(now - job.createdAt)} so far`;
}

/** A failed job's exception type and the first line of its message (shortened; the whole of it on hover). */
function errorCell(job) {
  const cell = h("td", { "data-label": "Error", class: "error-cell" });
  if (job.status !== "error" || job.corrupt) return cell;
  const message = String(job.error ?? "").split("\n")[0];
  const short = message.length > ERROR_CHARS ? `${message.slice(0, ERROR_CHARS - 1)}…` : message;
  const phase = job.errorPhase ? ` in ${job.errorPhase}` : "";
  cell.title = job.error ?? "";
  cell.append(
    h("span", { class: "error-type mono" }, `${job.errorType ?? "Failed"}${phase}`),
    short ? h("span", { class: "error-message" }, short) : null,
  );
  return cell;
}
