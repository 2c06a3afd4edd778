/**
 * What the job saw: the state a phase was entered with (`GET /jobs/{id}/states/{phase}`), or what changed from
 * another phase's (`GET /jobs/{id}/diff?from=&to=`), read only when asked (a state can be large).
 */

import { api, ApiError, jobPath } from "./api.js";
import { h, setChildren } from "./dom.js";
import { prettyJson, timeElement } from "./format.js";
import { stateVersion, valueLink } from "./job-panels.js";

const SIGNS = { added: "+", removed: "−", changed: "~" };

/** A state too large for one reply, handed over as a link: offered as a download instead of shown. */
export function stateLink(entered) {
  return valueLink(entered, "state");
}

/** A value of a change on one line: compact JSON, cut to a panel's width; one the API cut says its size. */
function short(change, side) {
  const size = change[`${side}Cut`];
  if (typeof size === "number") return `${String(change[side]).slice(0, 100)}… (cut: ${size} characters of JSON)`;
  const text = JSON.stringify(change[side]) ?? "undefined";
  return text.length > 120 ? `${text.slice(0, 117)}…` : text;
}

/** One change of a diff: its sign, its JSON Pointer and the value(s). */
function changeLine(change) {
  const path = change.path || "(the whole state)";
  const values =
    change.change === "added"
      ? [h("ins", {}, short(change, "after"))]
      : change.change === "removed"
        ? [h("del", {}, short(change, "before"))]
        : [h("del", {}, short(change, "before")), " → ", h("ins", {}, short(change, "after"))];
  return h(
    "li",
    { class: `change ${change.change}`, dataset: { path: change.path } },
    h("span", { class: "sign", "aria-label": change.change }, SIGNS[change.change] ?? "?"),
    " ",
    h("code", {}, path),
    ": ",
    ...values,
  );
}

/**
 * The panel's body: a phase to show, another to compare it with (optional), and what they read.
 * `phases()` gives the phases a job can enter (never a map's item phase: it has no entry state of its own).
 * @param {string} jobId
 * @param {() => string[]} phases
 * @param {() => AbortSignal} signal
 * @returns {{element: HTMLElement, refresh: () => void}}
 */
export function entryStates(jobId, phases, signal) {
  const phaseSelect = h("select", { id: "entry-phase" });
  const compareSelect = h("select", { id: "entry-compare" });
  const showButton = h("button", { type: "button", class: "small" }, "Show");
  const output = h("div", { class: "entry-output", "aria-live": "polite" });
  const element = h(
    "div",
    { class: "entry-states" },
    h(
      "div",
      { class: "entry-controls" },
      h("div", { class: "field inline" }, h("label", { for: "entry-phase" }, "State entering"), phaseSelect),
      h("div", { class: "field inline" }, h("label", { for: "entry-compare" }, "Compared with"), compareSelect),
      showButton,
    ),
    output,
  );

  /** Offer the phases the job can enter now, keeping the ones chosen. */
  function refresh() {
    const names = phases();
    offerPhases(phaseSelect, compareSelect, names);
    showButton.disabled = names.length === 0;
  }

  showButton.addEventListener("click", () => read(jobId, signal, phaseSelect.value, compareSelect.value, output));
  return { element, refresh };
}

/** Put `names` in the phase select and, after "nothing", in the compare select; each keeps its choice if offered. */
function offerPhases(phaseSelect, compareSelect, names) {
  const same = (select, values) => [...select.options].map((option) => option.value).join("\n") === values.join("\n");
  if (!same(phaseSelect, names)) {
    const chosen = phaseSelect.value;
    phaseSelect.replaceChildren(...names.map((name) => h("option", { value: name }, name)));
    if (names.includes(chosen)) phaseSelect.value = chosen;
  }
  const others = ["", ...names];
  if (!same(compareSelect, others)) {
    const chosen = compareSelect.value;
    compareSelect.replaceChildren(
      h("option", { value: "" }, "nothing (show the state)"),
      ...names.map((name) => h("option", { value: name }, `the state entering ${name}`)),
    );
    if (others.includes(chosen)) compareSelect.value = chosen;
  }
}

/** Read and show in `output` the state entering `phase`, or (`other` given) what changed from `other`'s. */
async function read(jobId, signal, phase, other, output) {
  if (!phase) return;
  output.setAttribute("aria-busy", "true");
  output.replaceChildren(h("p", { class: "muted" }, "Reading…"));
  try {
    if (!other) {
      const entered = await api(`${jobPath(jobId)}/states/${encodeURIComponent(phase)}`, { signal: signal() });
      showEntered(output, phase, entered);
      return;
    }
    const query = new URLSearchParams({ from: other, to: phase });
    const diff = await api(`${jobPath(jobId)}/diff?${query}`, { signal: signal() });
    showDiff(output, phase, other, diff);
  } catch (error) {
    if (error?.name === "AbortError") return;
    const message = error instanceof ApiError ? error.message : String(error?.message ?? error);
    output.replaceChildren(h("p", { class: "field-error", role: "alert" }, message));
  } finally {
    output.removeAttribute("aria-busy");
  }
}

/** The state `phase` was last entered with: when, its version, and the state (or a link to it). */
function showEntered(output, phase, entered) {
  setChildren(
    output,
    h(
      "p",
      { class: "muted" },
      `The state ${phase} was last entered with, written `,
      timeElement(entered.enteredAt),
      ` (${stateVersion(entered)}):`,
    ),
    entered.stateUrl ? stateLink(entered) : h("pre", { class: "json", tabindex: "0" }, prettyJson(entered.state)),
  );
}

/** What changed from the state entering `other` to the state entering `phase`: how many, then each. */
function showDiff(output, phase, other, diff) {
  const changes = diff.changes ?? [];
  setChildren(
    output,
    h(
      "p",
      { class: "muted" },
      changes.length === 0
        ? `No change: ${phase} was entered with the state ${other} was.`
        : `${changes.length}${diff.truncated ? "+" : ""} change${changes.length === 1 ? "" : "s"} from the state entering ${other} to the state entering ${phase}:`,
    ),
    changes.length ? h("ul", { class: "state-diff", "aria-label": "Changes" }, changes.map(changeLine)) : null,
    diff.truncated ? h("p", { class: "muted" }, "More changes exist; the list stops there.") : null,
  );
}
