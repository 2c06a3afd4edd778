/**
 * The words the page shows for the API's statuses, log entry kinds and phase outcomes.
 */

export const STATUSES = ["idle", "running", "waiting", "paused", "complete", "error", "cancelled"];
export const STATUS_LABELS = {
  idle: "Idle",
  running: "Running",
  waiting: "Waiting",
  paused: "Paused",
  complete: "Complete",
  error: "Error",
  cancelled: "Cancelled",
  stalled: "Stalled", // not a status: a running job no worker holds (stalled.js); a filter and a count
};
export const KIND_LABELS = {
  log: "Log",
  observation: "Observation",
  decision: "Decision",
  insight: "Insight",
  error: "Error",
  action: "Action",
};
export const OUTCOME_LABELS = {
  next: "next",
  done: "done",
  error: "failed",
  retry: "retry",
  "unknown-phase": "unknown phase",
  sleep: "sleep",
  wait: "wait",
  map: "map",
  release: "released",
};
