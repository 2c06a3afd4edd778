/**
 * A bulk operation as the server runs it (POST /bulk): its progress and each job's outcome with the job's status
 * now, read again until the bulk has finished and its jobs have settled ("done, now complete" or "done, now
 * error": it failed again). Used by the bulk dialog and by the bulk view (#/bulk/<id>); the bulks this browser
 * started are remembered (localStorage), so reopening the page or another tab finds them.
 */

import { api } from "./api.js";
import { h } from "./dom.js";
import { Poller } from "./poller.js";

/** Outcomes shown by name (a page of the API's at a time); the rest are counted. */
export const SHOWN = 300;
/** Job statuses that may still change: a bulk's outcomes are read again while a job has one. */
const UNSETTLED = new Set(["idle", "running"]);
const RECENT_KEY = "cairn.bulks";
const RECENT = 10;

export const bulkPath = (bulkId) => `bulk/${encodeURIComponent(bulkId)}`;
export const bulkHref = (bulkId) => `#/bulk/${encodeURIComponent(bulkId)}`;
const plural = (count) => `${new Intl.NumberFormat().format(count)} job${count === 1 ? "" : "s"}`;

/** Remember a bulk this browser started (newest first, the last RECENT). */
export function rememberBulk(bulkId) {
  try {
    const kept = [bulkId, ...recentBulks().filter((id) => id !== bulkId)].slice(0, RECENT);
    localStorage.setItem(RECENT_KEY, JSON.stringify(kept));
  } catch {
    // storage refused (a private window): the bulk runs on, its link is still shown
  }
}

/** The bulks this browser started, newest first. */
export function recentBulks() {
  try {
    const kept = JSON.parse(localStorage.getItem(RECENT_KEY) ?? "[]");
    return Array.isArray(kept) ? kept.filter((id) => typeof id === "string") : [];
  } catch {
    return [];
  }
}

/** A bulk's progress in words. */
export function progressText(bulk) {
  const settled = bulk.matched - bulk.pending;
  const counts = `${bulk.done} done, ${bulk.refused} refused, ${bulk.errored} errored`;
  return bulk.finished
    ? `Finished: ${plural(bulk.matched)}: ${counts}.`
    : `Running on the server: ${settled} of ${plural(bulk.matched)} (${counts}). Closing this page does not stop it.`;
}

/** A job's line: its outcome and its status now, linked to the job. */
export function outcomeLine(job) {
  const outcome = job.outcome ?? "pending";
  const why = outcome !== "done" && job.detail ? `: ${job.detail}` : "";
  const link = h("a", { href: `#/jobs/${encodeURIComponent(job.jobId)}`, class: "mono" }, job.jobId);
  return h("li", { class: outcome, dataset: { jobId: job.jobId, status: job.status } }, link, `: ${outcome}${why}, now ${job.status}`);
}

/** The first SHOWN jobs of a bulk with their outcomes and statuses now. */
async function readOutcomes(bulkId, signal) {
  const jobs = [];
  let cursor = null;
  do {
    const query = new URLSearchParams({ limit: "100" });
    if (cursor) query.set("cursor", cursor);
    const page = await api(`${bulkPath(bulkId)}/jobs?${query}`, { signal });
    jobs.push(...(page?.jobs ?? []));
    cursor = page?.cursor ?? null;
  } while (cursor && jobs.length < SHOWN);
  return jobs;
}

/**
 * Follow bulk `bulkId` into `parts` (`progress`: a <progress>, `text`: its words, `results`: the outcome list),
 * every two seconds while the tab shows, until it has finished and its jobs have settled.
 * @param {string} bulkId
 * @param {{progress: HTMLProgressElement, text: HTMLElement, results: HTMLElement, shown?: (bulk: object) => void}} parts
 * @returns {{stop: () => void}}
 */
export function followBulk(bulkId, parts) {
  const poller = new Poller(async (signal) => {
    const bulk = await api(bulkPath(bulkId), { signal });
    parts.progress.hidden = false;
    parts.progress.max = Math.max(1, bulk.matched);
    parts.progress.value = bulk.matched - bulk.pending;
    parts.text.textContent = progressText(bulk);
    parts.shown?.(bulk);
    if (!bulk.finished) return;
    const jobs = await readOutcomes(bulkId, signal);
    const lines = jobs.map(outcomeLine);
    if (bulk.matched > jobs.length) lines.push(h("li", { class: "muted" }, `and ${plural(bulk.matched - jobs.length)} more`));
    parts.results.replaceChildren(...lines);
    if (!jobs.some((job) => UNSETTLED.has(job.status))) poller.stop();
  });
  poller.start();
  return { stop: () => poller.stop() };
}
