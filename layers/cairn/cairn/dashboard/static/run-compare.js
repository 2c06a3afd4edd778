/**
 * Two runs of a job side by side, phase by phase: the run before the newest (for a job loaded from a file,
 * the pulled run) and the newest (a local rerun), each phase's outcome in each and the state it was entered
 * with (`GET /jobs/{id}/states/{phase}?before=`: the newest entry written before the newer run began, for the
 * older run). The first phase where the two differ, in its entry state or its outcome, is marked.
 */

import { api, ApiError, jobPath } from "./api.js";
import { h, setChildren } from "./dom.js";
import { stateLink } from "./entry-states.js";
import { prettyJson } from "./format.js";
import { runOf, runStarts, runTitle } from "./timeline-runs.js";

/** How the log line of a job loaded from a file begins (core/job_loading.py). */
const LOADED = /^Loaded from .+, pulled from /;

/** JSON with object keys sorted: two states are the same when their canonical texts are. */
export function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "undefined";
}

/**
 * Each phase's last record in run `index` (by the phase's name), in the order the run first ran them.
 * @param {object[]} records the job's phase records, oldest first
 */
export function recordsOfRun(runs, records, index) {
  const found = new Map();
  for (const record of records) {
    if (runOf(runs, record.startedAt) === index) found.set(record.phase, record);
  }
  return found;
}

/**
 * The rows of the comparison: one per phase either run ran, in order, and the index of the first that differs
 * (-1: none). `entries` gives each run's entry state of a phase as `{state}` (or null: not entered in that run).
 */
export function compareRows(phases, older, newer, entries) {
  const rows = phases.map((phase) => {
    const sides = [older.get(phase) ?? null, newer.get(phase) ?? null];
    const states = [entries[0].get(phase) ?? null, entries[1].get(phase) ?? null];
    const bothRan = sides[0] !== null && sides[1] !== null;
    const differs =
      bothRan &&
      (sides[0].outcome !== sides[1].outcome ||
        (states[0] !== null &&
          states[1] !== null &&
          !states[0].stateUrl &&
          !states[1].stateUrl && // a state handed over as a link is not compared here
          canonical(states[0].state) !== canonical(states[1].state)));
    return { phase, sides, states, differs };
  });
  return { rows, first: rows.findIndex((row) => row.differs) };
}

/** One run's cell: its outcome and the state it entered the phase with (folded). */
function cell(record, entry) {
  if (!record) return h("td", { class: "muted" }, "not run in this run");
  const outcome = record.error ? `${record.outcome}: ${record.error}` : record.outcome;
  return h(
    "td",
    {},
    h("span", { class: `compare-outcome outcome-${record.outcome}` }, outcome),
    entry
      ? h(
          "details",
          { class: "compare-state" },
          h("summary", {}, "Entered with"),
          entry.stateUrl ? stateLink(entry) : h("pre", { class: "json", tabindex: "0" }, prettyJson(entry.state)),
        )
      : h("p", { class: "muted" }, "entry state not kept"),
  );
}

/**
 * The panel: hidden until the job has two runs; `refresh(job, log)` reads again when the job changed.
 * @param {string} jobId
 * @param {() => AbortSignal} signal
 */
export function runCompare(jobId, signal) {
  const body = h("div", { class: "run-compare-body", "aria-live": "polite" });
  const element = h(
    "section",
    { class: "panel run-compare-panel", "aria-labelledby": "run-compare-title", hidden: true },
    h("h2", { id: "run-compare-title" }, "Runs compared"),
    body,
  );
  let shownKey = null;

  /** The state `phase` was entered with before `before` (null: the newest), if written since `since`; else null. */
  async function entryOf(phase, before, since) {
    const query = before === null ? "" : `?before=${before}`;
    try {
      const entered = await api(`${jobPath(jobId)}/states/${encodeURIComponent(phase)}${query}`, { signal: signal() });
      return entered.enteredAt >= since ? entered : null;
    } catch (error) {
      if (error instanceof ApiError && [400, 404].includes(error.status)) return null;
      throw error;
    }
  }

  /** Compare the job's last two runs again, unless it is unchanged since the last comparison. */
  async function refresh(job, log) {
    const runs = runStarts(log ?? []);
    element.hidden = runs.length < 2;
    if (runs.length < 2) return;
    const key = `${job.sequence}:${job.updatedAt}:${runs.length}`;
    if (key === shownKey) return;
    shownKey = key;
    const [a, b] = [runs.length - 2, runs.length - 1];
    const records = job.phases ?? [];
    const older = recordsOfRun(runs, records, a);
    const newer = recordsOfRun(runs, records, b);
    const phases = [...new Set([...older.keys(), ...newer.keys()])];
    const entries = [new Map(), new Map()];
    try {
      for (const phase of phases) {
        if (older.has(phase)) entries[0].set(phase, await entryOf(phase, runs[b].at - 1, runs[a].at));
        if (newer.has(phase)) entries[1].set(phase, await entryOf(phase, null, runs[b].at));
      }
    } catch (error) {
      if (error?.name === "AbortError") return;
      shownKey = null;
      body.replaceChildren(h("p", { class: "field-error", role: "alert" }, String(error?.message ?? error)));
      return;
    }
    showComparison(body, log, runs, compareRows(phases, older, newer, entries));
  }

  return { element, refresh };
}

/**
 * Show the last two `runs` compared in `body`: where the older was pulled from (a job loaded from a file), the
 * first divergence, and the table of `rows` (compareRows).
 */
function showComparison(body, log, runs, { rows, first }) {
  const [a, b] = [runs.length - 2, runs.length - 1];
  const loaded = (log ?? []).find((entry) => LOADED.test(entry.message ?? ""));
  const titles = [runTitle(runs, a) + (loaded && a === 0 ? " (pulled)" : ""), runTitle(runs, b)];
  const summary =
    first < 0
      ? "No divergence: every phase both runs ran was entered with the same state and ended the same way."
      : `First divergence at ${rows[first].phase}.`;
  setChildren(
    body,
    loaded ? h("p", { class: "muted loaded-from" }, loaded.message) : null,
    h("p", { class: "compare-summary" }, summary),
    h(
      "table",
      { class: "run-compare" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Phase"), ...titles.map((title) => h("th", { scope: "col" }, title)))),
      h("tbody", {}, rows.map((row, index) => compareRow(row, index === first))),
    ),
  );
}

/** A phase's row: its name (marked when it is the first divergence), then each run's cell. */
function compareRow(row, isFirst) {
  return h(
    "tr",
    {
      class: `${row.differs ? "differs" : ""} ${isFirst ? "first-divergence" : ""}`.trim(),
      dataset: { phase: row.phase },
    },
    h("th", { scope: "row" }, row.phase, isFirst ? h("span", { class: "divergence-mark" }, " first divergence") : null),
    cell(row.sides[0], row.states[0]),
    cell(row.sides[1], row.states[1]),
  );
}
