/**
 * The runs of a job, for its timeline: each (re)start the log records (the first start, a retry from the
 * checkpoint, a rerun from a phase, a start over) begins a run, and the phase runs after it belong to it.
 * Also the waits between phase runs: a sleep, or a wait for a signal, drawn as the gap it was.
 */

import { formatDuration, formatTime, quoted } from "./format.js";

/** The log's first line of each kind of (re)start, as core/engine/starting.py writes it. */
const STARTS = [
  [/^Job started at phase "([^"]+)"/, () => "Start"],
  [/^Job started over at phase "([^"]+)"/, () => "Start over"],
  [/^Job retried \(resume\) at phase "([^"]+)"/, (phase) => `Retry from the checkpoint at ${quoted(phase)}`],
  [/^Job retried \(full\) at phase "([^"]+)"/, () => "Start over"],
  [/^Job rerun from phase "([^"]+)"/, (phase) => `Rerun from ${quoted(phase)}`],
];

/**
 * Each run's start, oldest first: `{at, label}`.
 * @param {object[]} log the job's log entries
 */
export function runStarts(log) {
  const runs = [];
  for (const entry of log) {
    for (const [pattern, label] of STARTS) {
      const match = pattern.exec(entry.message ?? "");
      if (match) {
        runs.push({ at: entry.timestamp, label: label(match[1]) });
        break;
      }
    }
  }
  return runs.sort((a, b) => a.at - b.at);
}

/** Which run (an index into `runs`) a phase run that started at `startedAt` belongs to; -1 before any. */
export function runOf(runs, startedAt) {
  let index = -1;
  for (let at = 0; at < runs.length && runs[at].at <= startedAt; at += 1) index = at;
  return index;
}

/** The header of run `index`: "Run 2 · Retry from the checkpoint at “check” · 21:30:05". */
export function runTitle(runs, index) {
  return `Run ${index + 1} · ${runs[index].label} · ${formatTime(runs[index].at)}`;
}

/** How the gap before a phase run is described when the run before it slept or waited; null otherwise. */
export function waitedBefore(previous, record) {
  if (!previous || !["sleep", "wait"].includes(previous.outcome)) return null;
  const waited = formatDuration(record.startedAt - previous.endedAt);
  return previous.outcome === "sleep" ? `after sleeping ${waited}` : `after waiting ${waited} for a signal`;
}
