/**
 * Many jobs at once: retry, cancel or start over the selected rows, or every job the list's filter matches.
 * The dialog says how many and which before anything is done (the server's dry run), then sends one request,
 * POST /bulk: the server acts on each job once, in the background (closing the page does not stop it). The
 * dialog follows the bulk's progress and then each job's outcome with its status now (bulk-progress.js); the
 * bulk's own page (#/bulk/<id>) shows the same, from any tab.
 */

import { api } from "./api.js";
import { bulkHref, followBulk, rememberBulk } from "./bulk-progress.js";
import { openDialog, setDialogError } from "./dialogs.js";
import { $, h } from "./dom.js";

/** Jobs one action takes unless the operator raises it (the CLI's --max). */
export const DEFAULT_LIMIT = 100;
/** The most the limit can be raised to: a bigger sweep is several narrower ones. */
export const HIGHEST_LIMIT = 10_000;
/** Job ids listed by name in the dialog; the rest are counted. */
const NAMED = 200;
/** The listing's filters a bulk takes (the list's other query parameters, a sort say, are not filters). */
const FILTERS = ["status", "pipeline", "createdFrom", "createdTo", "idPrefix"];
/** Counts the reads of the matching jobs: only the newest one's answer is shown (the limit or the dialog may change meanwhile). */
let reads = 0;

/** What each bulk action sends for one job, and how the dialog speaks of it. */
export const BULK_ACTIONS = {
  retry: {
    label: "Retry",
    past: "Retried",
    explain: "Each job resumes from its checkpoint.",
  },
  cancel: {
    label: "Cancel",
    past: "Cancelled",
    explain: "Each job stops at its next phase boundary; its checkpoint stays, so Retry resumes it.",
  },
  restart: {
    label: "Start over",
    past: "Started over",
    explain: "Each job starts again from its first phase with its input; its checkpoint and log are replaced.",
  },
};

const plural = (count) => `${new Intl.NumberFormat().format(count)} job${count === 1 ? "" : "s"}`;

/** The bulk request's selection: the list's filter, or the chosen ids. */
function selection(target, chosen) {
  if (!target.query) return { ids: chosen.map((job) => job.jobId) };
  const filter = {};
  for (const name of FILTERS) if (target.query[name]) filter[name] = target.query[name];
  return { filter };
}

/**
 * The server's dry run of `action` on `target` (ids, or the filter up to `limit`): the ids it would act on;
 * `more` when more than `limit` match (the API's 409 too_many_jobs: nothing would be done).
 * @returns {Promise<{jobs: object[], more: boolean}>}
 */
export async function jobsMatching(actionName, target, limit) {
  try {
    const preview = await api("bulk", {
      method: "POST",
      body: { action: actionName, ...selection(target, target.jobs ?? []), limit, dryRun: true },
    });
    return { jobs: (preview?.jobIds ?? []).map((jobId) => ({ jobId })), more: false };
  } catch (error) {
    if (error?.code === "too_many_jobs") return { jobs: [], more: true };
    throw error;
  }
}

/**
 * Open the bulk dialog for `actionName` on `target`: `{jobs}` (the selected rows) or `{query}` (every job
 * the filter matches, read now, up to the limit the dialog lets the operator raise). `onDone` runs after.
 */
export function openBulk(actionName, target, onDone) {
  const action = BULK_ACTIONS[actionName];
  const dialog = $("#bulk-dialog");
  const slot = (name) => $(`[data-slot=${name}]`, dialog);
  const bulk = {
    name: actionName,
    action,
    target,
    dialog,
    slot,
    limitField: $("#bulk-limit"),
    confirm: slot("confirm"),
    chosen: [],
    ran: false,
    requestId: crypto.randomUUID(), // a resent request (a retry after no answer) names the same bulk
    follower: null,
  };
  resetDialog(bulk);
  bulk.limitField.onchange = target.query ? () => readMatching(bulk) : null;
  dialog.addEventListener(
    "close",
    () => {
      bulk.follower?.stop(); // the bulk runs on, on the server; its page (#/bulk/<id>) still follows it
      if (bulk.ran) onDone();
    },
    { once: true },
  );
  openDialog(dialog, () => sendChosen(bulk), target.query ? bulk.limitField : $("[data-close]", dialog));
  if (target.query) readMatching(bulk);
  else showChoice(bulk, target.jobs, false, target.jobs.length);
}

/**
 * The dialog's state while open: the action, its target, the dialog's parts (`slot(name)`: a `[data-slot]` in
 * it), the jobs chosen and whether they were sent.
 * @typedef {{name: string, action: object, target: object, dialog: HTMLDialogElement,
 *   slot: (name: string) => HTMLElement, limitField: HTMLInputElement, confirm: HTMLButtonElement, chosen: object[],
 *   ran: boolean, requestId: string, follower: {stop: () => void} | null}} Bulk
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
  const named = jobs
    .slice(0, NAMED)
    .map((job) => h("li", {}, h("span", { class: "mono" }, job.jobId), job.status ? ` ${job.status}` : ""));
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
    const { jobs, more } = await jobsMatching(bulk.name, bulk.target, limit);
    if (read === reads) showChoice(bulk, jobs, more, limit);
  } catch (error) {
    if (read === reads) setDialogError(bulk.dialog, String(error?.message ?? error));
  }
}

/** Confirmed: one POST /bulk (sent once; the server acts on each job once), then follow it to each outcome. */
async function sendChosen(bulk) {
  const { slot, limitField } = bulk;
  if (bulk.ran || bulk.chosen.length === 0) return false;
  bulk.ran = true;
  limitField.disabled = true;
  bulk.confirm.disabled = true;
  const limit = bulk.target.query ? Number(limitField.value) : bulk.chosen.length;
  let started;
  try {
    started = await api("bulk", {
      method: "POST",
      body: { action: bulk.name, ...selection(bulk.target, bulk.chosen), limit, requestId: bulk.requestId },
    });
  } catch (error) {
    bulk.ran = false; // nothing started (or the same request may be sent again: the same bulk)
    bulk.confirm.disabled = false;
    limitField.disabled = false;
    setDialogError(bulk.dialog, String(error?.message ?? error));
    return false;
  }
  rememberBulk(started.bulkId);
  bulk.confirm.hidden = true;
  slot("jobs").replaceChildren(
    h("li", {}, "Bulk ", h("a", { href: bulkHref(started.bulkId), class: "mono" }, started.bulkId), ": its own page"),
  );
  bulk.follower = followBulk(started.bulkId, {
    progress: slot("progress"),
    text: slot("progress-text"),
    results: slot("results"),
  });
  return false; // stay open on the progress and the outcomes
}
