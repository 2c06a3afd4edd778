/**
 * The job's status banner (the page's one role="status"): what it says about each status.
 */

import { h } from "./dom.js";
import { formatDuration, formatTime, quoted } from "./format.js";
import { icon } from "./icons.js";
import { stalledBannerText } from "./stalled.js";

/** The phase that failed: the last phase record with outcome error, else the checkpoint's next phase. */
export function failedPhase(job) {
  const records = job.phases ?? [];
  for (let index = records.length - 1; index >= 0; index -= 1) {
    if (records[index].outcome === "error") return records[index].phase;
  }
  return job.nextPhase ?? null;
}

/**
 * What the banner says about a job: a title and a sentence of detail.
 * @param {object} job a JobView
 * @returns {{title: string, detail: string}}
 */
export function bannerText(job, now = Date.now()) {
  const phase = job.nextPhase ? quoted(job.nextPhase) : null;
  const last = (job.phases ?? []).at(-1);
  switch (job.status) {
    case "running": {
      if (job.stalled) return stalledBannerText(job, now);
      if (job.wakeAt && job.wakeAt > now) {
        const when = formatTime(job.wakeAt);
        if (job.shareWait) {
          const detail = `${job.shareWait}: phase ${phase ?? "?"} looks again at ${when}.`;
          return { title: "Running: waiting for its owner's share", detail };
        }
        if (last?.outcome === "retry") {
          const detail = `Attempt ${job.attempt} of phase ${phase ?? "?"} starts at ${when}.`;
          return { title: "Running: retrying after a backoff", detail };
        }
        return { title: "Running: sleeping", detail: `Phase ${phase ?? "?"} runs at ${when}.` };
      }
      const detail = phase ? `Phase ${phase} is running (attempt ${job.attempt}).` : "The job is starting.";
      return { title: "Running", detail };
    }
    case "waiting": {
      const deadline = job.waitDeadline
        ? `The wait times out at ${formatTime(job.waitDeadline)}.`
        : "The wait has no deadline.";
      const then = phase ? ` The job then continues at ${phase}.` : "";
      return {
        title: `Waiting for signal ${quoted(job.waitingFor ?? "?")}`,
        detail: `${deadline}${then} Send signal delivers it.`,
      };
    }
    case "paused": {
      if (job.claimedAt) {
        // Paused while a worker still runs its phase: the job stops once that phase run ends.
        const since = `since ${formatTime(job.claimedAt)}`;
        return {
          title: `Pausing: phase ${phase ?? "?"} is still running`,
          detail: `Attempt ${job.attempt}, ${since}. The job stops when it ends; Resume then continues after it.`,
        };
      }
      const detail = phase ? `Stopped before phase ${phase}; Resume continues there.` : "Resume continues the job.";
      return { title: "Paused", detail };
    }
    case "complete": {
      const runs = job.phases?.length ?? 0;
      const took = formatDuration(job.updatedAt - job.createdAt);
      return {
        title: "Complete",
        detail: `Finished at ${formatTime(job.updatedAt)} after ${runs} phase run${runs === 1 ? "" : "s"} in ${took}.`,
      };
    }
    case "error": {
      const failed = failedPhase(job);
      return {
        title: failed ? `Error in phase ${quoted(failed)}` : "Error",
        detail: job.error ?? "The job failed.",
      };
    }
    case "cancelled": {
      const detail = phase ? `Stopped at phase ${phase}; Retry resumes it from there.` : "The job was cancelled.";
      return { title: "Cancelled", detail };
    }
    case "idle":
      return { title: "Idle", detail: "The job is stored but not scheduled; Retry schedules it." };
    default:
      return { title: job.status, detail: "" };
  }
}

/** Update the banner only when its text changes (each change is announced: it is role="status"). */
export function renderBanner(banner, job) {
  const { title, detail } = bannerText(job);
  const status = job.stalled && job.status === "running" ? "stalled" : job.status;
  if (banner.dataset.status === status && banner.dataset.text === title + detail) return;
  banner.dataset.status = status;
  banner.dataset.text = title + detail;
  banner.replaceChildren(
    icon(status),
    h("div", {}, h("p", { class: "banner-title" }, title), h("p", { class: "banner-detail" }, detail)),
  );
}
