/**
 * The job's side panels: usage counters, the checkpoint's facts, the result.
 */

import { h, setChildren } from "./dom.js";
import { numberFormat, prettyJson, timeElement } from "./format.js";

/** The usage counters as a definition list. */
export function renderUsage(container, usage) {
  const entries = Object.entries(usage).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) {
    container.replaceChildren(h("p", { class: "muted" }, "No usage recorded."));
    return;
  }
  container.replaceChildren(
    h(
      "dl",
      { class: "counters" },
      entries.map(([name, value]) => h("div", {}, h("dt", {}, name), h("dd", {}, numberFormat.format(value)))),
    ),
  );
}

/** The checkpoint's facts: next phase, when it was written, sequence, attempt, expiry. */
export function renderCheckpoint(container, job) {
  const row = (term, ...value) => h("div", {}, h("dt", {}, term), h("dd", {}, ...value));
  const hasCheckpoint = job.nextPhase != null;
  setChildren(
    container,
    h(
      "dl",
      { class: "facts" },
      row(
        "Next phase",
        hasCheckpoint ? h("span", { class: "mono" }, job.nextPhase) : h("span", { class: "muted" }, "none"),
      ),
      hasCheckpoint ? row("Written", timeElement(job.checkpointCreatedAt)) : null,
      hasCheckpoint ? row("Attempt", String(job.attempt ?? 1)) : null,
      // the state_version its state was saved with (absent: 1; see State migrations)
      hasCheckpoint ? row("State", h("span", { class: "mono", "data-state-version": "" }, stateVersion(job))) : null,
      job.waitingFor ? row("Waits for", h("span", { class: "mono" }, job.waitingFor)) : null,
      job.wakeAt ? row("Wakes at", timeElement(job.wakeAt)) : null,
      row("Job expires", timeElement(job.expiresAt != null ? job.expiresAt * 1000 : null)),
    ),
    hasCheckpoint
      ? null
      : h(
          "p",
          { class: "muted note" },
          job.status === "complete" ? "No checkpoint: a complete job keeps none." : "No checkpoint.",
        ),
  );
}

/** "state v3": the version a checkpoint's state was saved with (a checkpoint that records none: v1). */
export function stateVersion(saved) {
  return `state v${saved.stateVersion ?? 1}`;
}

/**
 * A value too large for one reply (`state`, `result`): the API hands it over as a short-lived link (`stateUrl`,
 * `resultUrl`); the page offers it as a download instead of showing it.
 */
export function valueLink(view, value) {
  return h(
    "p",
    { class: "state-link" },
    `Too large to show here (${view[`${value}Bytes`]} bytes stored): `,
    h("a", { href: view[`${value}Url`], target: "_blank", rel: "noopener noreferrer" }, `open the ${value}`),
    " (the link works until ",
    timeElement(view[`${value}UrlExpiresAt`]),
    ")",
  );
}

export function renderResult(container, job) {
  if (job.resultUrl) {
    if (container.dataset.text === job.resultUrl) return; // each read of the job hands over a fresh link
    container.dataset.text = job.resultUrl;
    container.replaceChildren(valueLink(job, "result"));
    return;
  }
  const text = job.result == null ? null : prettyJson(job.result);
  if (container.dataset.text === String(text)) return;
  container.dataset.text = String(text);
  container.replaceChildren(
    text == null ? h("p", { class: "muted" }, "No result yet.") : h("pre", { class: "json", tabindex: "0" }, text),
  );
}
