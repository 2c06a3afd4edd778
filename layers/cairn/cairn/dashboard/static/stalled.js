/**
 * Stalled jobs: running, but no worker holds one (or its map's items are done and its next phase never started).
 * The banner's words for one, the Nudge action (a confirmation, then POST /jobs/{id}/nudge), and the list's badge.
 */

import { $, h } from "./dom.js";
import { openDialog } from "./dialogs.js";
import { formatDuration, formatTime, quoted } from "./format.js";

/**
 * What the banner says about a stalled job (its `stalled` from the API): since when, why, what the sweep will do
 * and when, and that Nudge does it now.
 * @param {object} job a JobView with `stalled`
 * @returns {{title: string, detail: string}}
 */
export function stalledBannerText(job, now = Date.now()) {
  const stalled = job.stalled;
  const since = `Since ${formatTime(stalled.since)} (${formatDuration(now - stalled.since)})`;
  const when = stalled.sweepBy ? ` by ${formatTime(stalled.sweepBy)}` : " at its next run";
  return {
    title: "Stalled",
    detail: `${since}: ${stalled.why}. The sweep will ${stalled.sweep}${when}; Nudge does it now.`,
  };
}

/** The Nudge button's rule: only a stalled job (the API's rule); the reason is the disabled button's title. */
export function nudgeRule(job) {
  if (job.stalled) {
    const phase = job.stalled.phase ? quoted(job.stalled.phase) : "its next phase";
    return { allowed: true, reason: `Schedules ${phase} again now, as the sweep would` };
  }
  const reason =
    job.status === "running"
      ? "The job is moving (a worker holds it, or it was written moments ago): nothing to nudge"
      : `Only a stalled running job can be nudged; this one is ${job.status}`;
  return { allowed: false, reason };
}

/**
 * Ask before nudging; on confirmation send the nudge through `act` (which announces what it returns as `said`).
 * @param {object} view the job view's state (`view.job`)
 * @param {(send: () => Promise<object>) => Promise<unknown>} act
 * @param {(path: string) => Promise<object>} post
 */
export function openNudge(view, act, post) {
  const job = view.job;
  const dialog = $("#nudge-dialog");
  const slot = (name) => $(`[data-slot=${name}]`, dialog);
  slot("job").textContent = job.jobId;
  slot("why").textContent = job.stalled?.why ?? "it is stalled";
  slot("what").textContent = job.stalled?.sweep ?? "schedule its next phase again";
  openDialog(dialog, () => act(() => post("nudge").then(nudged)), $("[type=submit]", dialog));
}

/** What a nudge's reply announces. */
function nudged(reply) {
  const again = reply.first === false ? " (already nudged at this sequence: it runs once)" : "";
  return { said: `Nudge: ${quoted(reply.phase)} is scheduled again at sequence ${reply.sequence}${again}.` };
}

/** The list's badge beside a stalled job's status (none for another). */
export function stalledBadge(job) {
  return job.stalled === true
    ? h("span", { class: "badge status-stalled", title: "No worker holds it: its page says why, and Nudge moves it" }, "stalled")
    : null;
}
