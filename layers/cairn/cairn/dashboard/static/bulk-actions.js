/**
 * Many jobs at once: retry, cancel or start over the selected rows, or every job the list's filter matches.
 * The dialog says how many and which before anything is sent, shows progress while it runs and a result per
 * job after; each job gets one request (a job whose status changed meanwhile is refused by the API, and said so).
 */

import { api, cancelJob, jobPath } from "./api.js";
import { openDialog, setDialogError } from "./dialogs.js";
import { $, h } from "./dom.js";

/** Jobs one action takes unless the operator raises it (the CLI's --max). */
export const DEFAULT_LIMIT = 100;
/** The most the limit can be raised to: a bigger sweep is several narrower ones. */
export const HIGHEST_LIMIT = 10_000;
/** Requests in flight at once. */
const PARALLEL = 4;
/** Job ids listed by name in the dialog; the rest are counted. */
const NAMED = 200;
const PAGE_SIZE = 100;
/** Counts the reads of the matching jobs: only the newest one's answer is shown (the limit or the dialog may change meanwhile). */
let reads = 0;

/** What each bulk action sends for one job, and how the dialog speaks of it. */
export const BULK_ACTIONS = {
  retry: {
    label: "Retry",
    past: "Retried",
    send: (jobId) => api(`${jobPath(jobId)}/retry`, { method: "POST", body: { mode: "resume" } }),
    explain: "Each job resumes from its checkpoint.",
  },
  cancel: {
    label: "Cancel",
    past: "Cancelled",
    send: (jobId) => cancelJob(jobId),
    explain: "Each job stops at its next phase boundary; its checkpoint stays, so Retry resumes it.",
  },
  restart: {
    label: "Start over",
    past: "Started over",
    send: (jobId) => api(`${jobPath(jobId)}/retry`, { method: "POST", body: { mode: "full" } }),
    explain: "Each job starts again from its first phase with its input; its checkpoint and log are replaced.",
  },
};

const plural = (count) => `${new Intl.NumberFormat().format(count)} job${count === 1 ? "" : "s"}`;

/**
 * Every job the filter (the API's query parameters) matches, newest first, reading at most `limit` + 1.
 * @returns {Promise<{jobs: object[], more: boolean}>}
 */
export async function jobsMatching(query, limit) {
  const jobs = [];
  const seen = new Set();
  let cursor = null;
  do {
    const params = new URLSearchParams({ ...query, limit: String(PAGE_SIZE) });
    if (cursor) params.set("cursor", cursor);
    const page = await api(`jobs?${params}`);
    for (const job of page?.jobs ?? []) {
      if (!seen.has(job.jobId)) seen.add(job.jobId) && jobs.push(job);
    }
    if (jobs.length > limit) return { jobs: jobs.slice(0, limit), more: true };
    cursor = page?.cursor ?? null;
  } while (cursor);
  return { jobs, more: false };
}

/**
 * Send `action` for each job id, PARALLEL at a time; `progress(done)` after each; each job's result in order.
 * @returns {Promise<Array<{jobId: string, job?: object, error?: string}>>}
 */
export async function sendEach(action, jobIds, progress) {
  const results = new Array(jobIds.length);
  let next = 0;
  let done = 0;
  async function worker() {
    while (next < jobIds.length) {
      const at = next++;
      const jobId = jobIds[at];
      try {
        results[at] = { jobId, job: await action.send(jobId) };
      } catch (error) {
        results[at] = { jobId, error: String(error?.message ?? error) };
      }
      done += 1;
      progress(done);
    }
  }
  await Promise.all(Array.from({ length: Math.min(PARALLEL, jobIds.length) }, worker));
  return results;
}

/**
 * Open the bulk dialog for `actionName` on `target`: `{jobs}` (the selected rows) or `{query}` (every job
 * the filter matches, read now, up to the limit the dialog lets the operator raise). `onDone` runs after.
 */
export function openBulk(actionName, target, onDone) {
  const action = BULK_ACTIONS[actionName];
  const dialog = $("#bulk-dialog");
  const slot = (name) => $(`[data-slot=${name}]`, dialog);
  const bulk = { action, target, dialog, slot, limitField: $("#bulk-limit"), confirm: slot("confirm"), chosen: [], ran: false };
  resetDialog(bulk);
  bulk.limitField.onchange = target.query ? () => readMatching(bulk) : null;
  dialog.addEventListener("close", () => bulk.ran && onDone(), { once: true });
  openDialog(dialog, () => sendChosen(bulk), target.query ? bulk.limitField : $("[data-close]", dialog));
  if (target.query) readMatching(bulk);
  else showChoice(bulk, target.jobs, false, target.jobs.length);
}

/**
 * The dialog's state while open: the action, its target, the dialog's parts (`slot(name)`: a `[data-slot]` in
 * it), the jobs chosen and whether they were sent.
 * @typedef {{action: object, target: object, dialog: HTMLDialogElement, slot: (name: string) => HTMLElement,
 *   limitField: HTMLInputElement, confirm: HTMLButtonElement, chosen: object[], ran: boolean}} Bulk
 */

/** The dialog as it opens for `bulk`: its title, no progress or results yet, the default limit. */
function resetDialog(bulk) {
  const { slot, limitField } = bulk;
  slot("title").textContent = `${bulk.action.label} jobs`;
  slot("results").replaceChildren();
  slot("progress").hidden = true;
  slot("progress-text").textContent = "";
  limitField.value = String(DEFAULT_LIMIT);
  reads += 1; // a read still running for an earlier opening of the dialog is not shown
  slot("limit-field").hidden = !bulk.target.query;
  bulk.confirm.hidden = false;
}

/** Say which jobs the action would be sent to (none when more than `limit` match) and offer to send it. */
function showChoice(bulk, jobs, more, limit) {
  const { action, slot, confirm } = bulk;
  bulk.chosen = more ? [] : jobs;
  const which = bulk.target.query ? "matching this filter" : "selected";
  slot("summary").textContent = more
    ? `More than ${plural(limit)} match this filter: narrow the filter, or raise the limit (at most ` +
      `${new Intl.NumberFormat().format(HIGHEST_LIMIT)}). Nothing will be sent.`
    : jobs.length === 0
      ? `No job is ${which}.`
      : `${action.label} ${plural(jobs.length)} ${which}? ${action.explain}`;
  const named = jobs.slice(0, NAMED).map((job) => h("li", {}, h("span", { class: "mono" }, job.jobId), ` ${job.status}`));
  if (jobs.length > NAMED) named.push(h("li", { class: "muted" }, `and ${plural(jobs.length - NAMED)} more`));
  slot("jobs").replaceChildren(...named);
  confirm.disabled = bulk.chosen.length === 0;
  confirm.textContent = `${action.label} ${plural(bulk.chosen.length)}`;
}

/** Read the jobs the filter matches, up to the limit asked (a limit out of range is said, and nothing read). */
async function readMatching(bulk) {
  const { limitField, confirm, slot } = bulk;
  const read = ++reads;
  const limit = Number(limitField.value);
  bulk.chosen = [];
  if (!Number.isInteger(limit) || limit < 1 || limit > HIGHEST_LIMIT) {
    limitField.setCustomValidity(`A whole number from 1 to ${HIGHEST_LIMIT}`);
    limitField.reportValidity();
    confirm.disabled = true;
    return;
  }
  limitField.setCustomValidity("");
  confirm.disabled = true;
  slot("summary").textContent = "Reading the jobs that match…";
  try {
    const { jobs, more } = await jobsMatching(bulk.target.query, limit);
    if (read === reads) showChoice(bulk, jobs, more, limit);
  } catch (error) {
    if (read === reads) setDialogError(bulk.dialog, String(error?.message ?? error));
  }
}

/** Confirmed: send the action for each chosen job (once), showing progress, then a result per job. */
async function sendChosen(bulk) {
  const { action, slot, limitField } = bulk;
  if (bulk.ran || bulk.chosen.length === 0) return false;
  bulk.ran = true;
  const ids = bulk.chosen.map((job) => job.jobId);
  const progress = slot("progress");
  progress.hidden = false;
  progress.max = ids.length;
  progress.value = 0;
  limitField.disabled = true;
  const results = await sendEach(action, ids, (done) => {
    progress.value = done;
    slot("progress-text").textContent = `${done} of ${plural(ids.length)} sent`;
  });
  limitField.disabled = false;
  const refused = results.filter((result) => result.error);
  slot("results").replaceChildren(...results.map(resultLine));
  const tail = refused.length ? `; ${refused.length} refused` : "";
  slot("progress-text").textContent = `${action.past} ${results.length - refused.length} of ${plural(results.length)}${tail}.`;
  bulk.confirm.hidden = true;
  return false; // stay open on the results
}

/** A job's line in the results: its new status, or why it was refused. */
function resultLine(result) {
  if (result.error) {
    return h("li", { class: "refused" }, h("span", { class: "mono" }, result.jobId), `: refused: ${result.error}`);
  }
  return h("li", { class: "done" }, h("span", { class: "mono" }, result.jobId), `: ${result.job?.status ?? "done"}`);
}
