/**
 * The job's timeline: its phase runs on a shared time axis, the backoffs between them, the run in
 * flight.
 */

import { codeChanges, codeLabel, codeTitle } from "./code-versions.js";
import { h, setChildren } from "./dom.js";
import { formatDuration, formatTime, fullFormat, quoted } from "./format.js";
import { OUTCOME_LABELS } from "./labels.js";
import { runOf, runStarts, runTitle, waitedBefore } from "./timeline-runs.js";

const MAX_TIMELINE_ROWS = 300;

/** What the phase in flight of a paused job says: its worker still runs it, the job stops after it. */
const PAUSE_PENDING = "pause pending: the job stops after this phase";

/** A log line written when a job is started again at a phase (a start, resume, start over or rerun). */
const RESTART_ENTRY = /^(Job (started|retried|rerun)|Rerun from phase|Resumed)/;

/**
 * The timeline: one bar per phase run (start and length on a shared time axis, coloured and labelled by
 * outcome), the backoff before a retried attempt, a sleep or a wait for a signal as a dashed gap, the
 * phase in flight (or its wait, with its deadline) growing to now while the job runs; the phase runs
 * grouped by run (a start, a retry, a rerun, a start over), each group headed by what began it.
 * @param {HTMLElement} container
 * @param {object} job a JobView
 */
export function renderTimeline(container, job, log = [], now = Date.now()) {
  const all = job.phases ?? [];
  const records = all.slice(-MAX_TIMELINE_ROWS);
  const live = currentRun(job, log, now);
  const acted = log.filter((entry) => entry.kind === "action");
  const cut = job.cutShort ?? null; // the run a cancel cut short: its worker could no longer commit
  if (records.length === 0 && !live && !cut && acted.length === 0) {
    container.replaceChildren(h("p", { class: "muted" }, "No phase has run yet."));
    return;
  }
  const axis = timeAxis(job, records, live, cut, acted);
  const rows = timelineRows(job, all, records, live, cut, axis, runStarts(log));
  setChildren(
    container,
    all.length > records.length
      ? h("p", { class: "muted" }, `The last ${records.length} of ${all.length} phase runs.`)
      : null,
    h("ol", { class: "timeline-rows" }, rows),
    acted.length ? h("ol", { class: "timeline-marks" }, actionsRow(acted, axis.at)) : null,
    h(
      "div",
      { class: "timeline-axis muted", "aria-hidden": "true" },
      h("span", {}, formatTime(axis.origin)),
      h("span", {}, `${formatDuration(axis.span)} in all`),
    ),
  );
}

/**
 * The shared time axis, from the first thing drawn (or the job's creation) to the last: its `origin` and `span`
 * (ms), `at(ms)` a time's place on it and `width(ms)` a duration's length, as CSS percentages.
 */
function timeAxis(job, records, live, cut, acted) {
  const times = acted.map((entry) => entry.timestamp);
  const starts = records.map((record) => record.startedAt).concat(live ? [live.start] : [], cut ? [cut.startedAt] : [], times);
  const ends = records.map((record) => record.endedAt).concat(live ? [live.end] : [], cut ? [cut.endedAt] : [], times);
  const origin = Math.min(...starts, job.createdAt ?? Infinity);
  const span = Math.max(Math.max(...ends) - origin, 1);
  const at = (ms) => `${(((ms - origin) / span) * 100).toFixed(3)}%`;
  const width = (ms) => `${Math.max((ms / span) * 100, 0.4).toFixed(3)}%`;
  return { origin, span, at, width };
}

/**
 * The timeline's rows: each phase run of `records` (the last of `all`), the run in flight, the run a cancel cut
 * short; headed by the run (of `runs`) each belongs to when the job has run more than once.
 */
function timelineRows(job, all, records, live, cut, axis, runs) {
  // the code each run's phase ran before, where it changed: read over every record, the older ones not drawn too
  const changedFrom = codeChanges(all).slice(all.length - records.length);
  const rows = [];
  let shownRun = null;
  const headRun = (startedAt) => {
    const run = runOf(runs, startedAt);
    if (runs.length < 2 || run < 0 || run === shownRun) return;
    shownRun = run;
    rows.push(h("li", { class: "timeline-run", dataset: { run: String(run + 1) } }, runTitle(runs, run)));
  };
  records.forEach((record, index) => {
    headRun(record.startedAt);
    rows.push(timelineRow(phaseRun(records, index, changedFrom[index], axis)));
  });
  if (live) {
    headRun(live.start);
    rows.push(timelineRow(live.row(axis.at, axis.width)));
  }
  if (cut) {
    headRun(cut.startedAt);
    rows.push(timelineRow(cutShortRun(job, cut, axis)));
  }
  return rows;
}

/**
 * The row of the phase run `records[index]`: how long, how it ended, the backoff or the wait before it, the code
 * it ran (`changedFrom`: the code the phase ran before, where it changed), its error and failure.
 */
function phaseRun(records, index, changedFrom, { at, width }) {
  const record = records[index];
  const previous = findPrevious(records, index);
  const delay = previous ? record.startedAt - previous.endedAt : 0;
  const before = index > 0 ? records[index - 1] : null;
  const waited = waitedBefore(before, record);
  const duration = record.endedAt - record.startedAt;
  const outcome = OUTCOME_LABELS[record.outcome] ?? record.outcome;
  const then = record.outcome === "next" && record.nextPhase ? ` → ${record.nextPhase}` : "";
  const parts = [`${formatDuration(duration)}`, `${outcome}${then}`];
  if (delay > 0) parts.push(`after ${formatDuration(delay)} backoff`);
  else if (waited) parts.push(waited);
  const gapFrom = delay > 0 ? previous.endedAt : waited ? before.endedAt : null;
  return {
    phase: record.phase,
    attempt: record.attempt,
    outcome: record.outcome,
    summary: parts.join(" · "),
    title: [
      `${record.phase}, attempt ${record.attempt}: started ${fullFormat.format(new Date(record.startedAt))}`,
      ...parts,
      codeTitle(record.codeVersion, changedFrom),
    ]
      .filter(Boolean)
      .join(", "),
    code: codeLabel(record.codeVersion, changedFrom),
    error: record.error,
    failure: record.failure,
    bar: { left: at(record.startedAt), width: width(duration) },
    gap: gapFrom != null ? { left: at(gapFrom), width: width(record.startedAt - gapFrom) } : null,
  };
}

/** The row of the run a cancel cut short (its worker could no longer commit): from its start to the cancel. */
function cutShortRun(job, cut, { at, width }) {
  return {
    phase: cut.phase,
    attempt: job.attempt,
    outcome: "cut-short",
    summary: `${formatDuration(cut.endedAt - cut.startedAt)} · cut short by the cancel`,
    title: `${cut.phase}, attempt ${job.attempt}: started ${fullFormat.format(new Date(cut.startedAt))}, cut short by the cancel at ${fullFormat.format(new Date(cut.endedAt))}`,
    bar: { left: at(cut.startedAt), width: width(cut.endedAt - cut.startedAt) },
  };
}

/** The earlier run of the same phase that a retried attempt follows (for the backoff between them). */
function findPrevious(records, index) {
  const record = records[index];
  if (record.attempt <= 1) return null;
  for (let before = index - 1; before >= 0; before -= 1) {
    if (records[before].phase === record.phase) return records[before].outcome === "retry" ? records[before] : null;
  }
  return null;
}

/**
 * The run in flight of a running job, for the timeline: its phase growing to now, or the backoff or sleep
 * it waits out (until `wakeAt`), or the wait of a waiting job, or the phase a paused job's worker still runs
 * (the pause is pending: the job stops after it). Null when nothing is in flight.
 */
function currentRun(job, log, now) {
  const pausing = job.status === "paused" && Boolean(job.claimedAt);
  if (!(pausing || ["running", "waiting"].includes(job.status)) || !job.nextPhase) return null;
  const lastEnd = (job.phases ?? []).at(-1)?.endedAt ?? job.createdAt ?? now;
  // The run in flight began when the last phase run ended, or later when the job was started again (a resume,
  // a rerun: the log says so). Not at the checkpoint's time: a phase's own saves move that while it runs.
  const restarted = log
    .filter((entry) => entry.timestamp > lastEnd && RESTART_ENTRY.test(entry.message ?? ""))
    .map((entry) => entry.timestamp);
  const start = Math.max(lastEnd, ...restarted);
  const waitingOut = job.status === "running" && job.wakeAt && job.wakeAt > now;
  if (job.status === "waiting") {
    return {
      start,
      end: now,
      row: (at, width) => ({
        phase: job.nextPhase,
        attempt: job.attempt,
        outcome: "waiting",
        summary: `waiting for ${quoted(job.waitingFor ?? "?")} · ${formatDuration(now - start)} so far · ${
          job.waitDeadline ? `times out at ${formatTime(job.waitDeadline)} (in ${formatDuration(job.waitDeadline - now)})` : "no deadline"
        }`,
        title: `Waiting for signal ${job.waitingFor ?? "?"} since ${fullFormat.format(new Date(start))}${
          job.waitDeadline ? `, until ${fullFormat.format(new Date(job.waitDeadline))}` : ""
        }`,
        gap: { left: at(start), width: width(now - start) },
      }),
    };
  }
  if (waitingOut) {
    return {
      start,
      end: job.wakeAt,
      row: (at, width) => ({
        phase: job.nextPhase,
        attempt: job.attempt,
        outcome: "pending",
        summary: `${(job.phases ?? []).at(-1)?.outcome === "sleep" ? "sleeping until" : "starts at"} ${formatTime(
          job.wakeAt,
        )} (in ${formatDuration(job.wakeAt - now)})`,
        title: `Attempt ${job.attempt} of ${job.nextPhase} waits until ${fullFormat.format(new Date(job.wakeAt))}`,
        gap: { left: at(start), width: width(job.wakeAt - start) },
      }),
    };
  }
  return {
    start,
    end: now,
    row: (at, width) => ({
      phase: job.nextPhase,
      attempt: job.attempt,
      outcome: "running",
      summary: job.stalled // no worker holds it: not "running" (stalled.js)
        ? `stalled since ${formatTime(job.stalled.since)} · ${job.stalled.why}`
        : `running · ${formatDuration(now - start)} so far${pausing ? ` · ${PAUSE_PENDING}` : ""}`,
      title: `${job.nextPhase}, attempt ${job.attempt}: ${job.stalled ? "stalled" : "running"} since ${fullFormat.format(
        new Date(job.stalled?.since ?? start),
      )}${pausing ? ", pausing after this phase" : ""}`,
      bar: { left: at(start), width: width(now - start) },
    }),
  };
}

/**
 * The operator actions (start, pause, resume, cancel, retry, rerun, start over, signal) as markers on the
 * time axis, each named with who asked and when.
 */
function actionsRow(entries, at) {
  const track = h("div", { class: "track", "aria-hidden": "true" });
  for (const entry of entries) {
    const marker = h("span", { class: "marker", title: `${entry.message} · ${fullFormat.format(new Date(entry.timestamp))}` });
    marker.style.left = at(entry.timestamp); // through the CSSOM: a strict Content-Security-Policy allows it
    track.append(marker);
  }
  return h(
    "li",
    { class: "timeline-actions" }, // not a phase run: the rows of runs are .timeline-row
    h("div", { class: "timeline-label" }, h("span", { class: "phase-name" }, "Actions")),
    track,
    h(
      "ul",
      { class: "action-list", "aria-label": "Who did what" },
      entries.map((entry) => h("li", {}, h("span", { class: "muted" }, formatTime(entry.timestamp)), " ", entry.message)),
    ),
  );
}

/** One row of the timeline: the phase, attempt and code, the track with its bar (and gap), the summary. */
function timelineRow({ phase, attempt, outcome, summary, title, code, error, failure, bar, gap }) {
  const track = h("div", { class: "track", "aria-hidden": "true" });
  const place = (element, { left, width }) => {
    // Set through the CSSOM, not a style attribute: a strict Content-Security-Policy allows it.
    element.style.left = left;
    element.style.width = width;
    return element;
  };
  if (gap) track.append(place(h("span", { class: "gap" }), gap));
  if (bar) track.append(place(h("span", { class: `bar outcome-${outcome}` }), bar));
  return h(
    "li",
    { class: `timeline-row outcome-${outcome}`, title },
    h(
      "div",
      { class: "timeline-label" },
      h("span", { class: "mono phase-name" }, phase),
      attempt > 1 ? h("span", { class: "attempt" }, `attempt ${attempt}`) : null,
      code,
    ),
    track,
    h("div", { class: "timeline-summary" }, summary),
    error ? h("p", { class: "timeline-error" }, error) : null,
    failure?.type ? failureDetails(failure) : null,
  );
}

/** The attempt's exception, folded: its type in the summary, the traceback (the user's frames first) inside. */
function failureDetails(failure) {
  return h(
    "details",
    { class: "failure" },
    h("summary", {}, h("span", { class: "mono failure-type" }, failure.type), " · traceback"),
    h("pre", { class: "traceback mono" }, failure.traceback || "No traceback was reported."),
  );
}
