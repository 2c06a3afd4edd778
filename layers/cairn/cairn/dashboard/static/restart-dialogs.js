/**
 * Start over and Rerun from phase: the dialogs that say what a restart keeps and loses, and
 * check the state it restarts with.
 */

import { failedPhase } from "./banner.js";
import { openDialog } from "./dialogs.js";
import { $, h } from "./dom.js";
import { checkJsonField, showFieldErrors } from "./fields.js";
import { prettyJson, quoted } from "./format.js";

/**
 * Start over: say what is lost and show the input it runs with (read now, editable, checked against the
 * pipeline's schema), then send {"mode": "full"} with the input as its state (an empty field: the stored one).
 */
export async function openStartOver(view, act, post, readInput) {
  const job = view.job;
  const dialog = $("#full-dialog");
  const slot = (name) => $(`[data-slot=${name}]`, dialog);
  const field = $("#full-state");
  const errors = $("#full-state-errors");
  slot("job").textContent = job.jobId;
  slot("first").textContent = view.phases[0] ?? "the first phase";
  const log = `its log (${view.log.length} entr${view.log.length === 1 ? "y" : "ies"})`;
  slot("lost").textContent = job.nextPhase
    ? `its checkpoint (at ${quoted(job.nextPhase)}, with its state) and ${log}`
    : log;
  showFieldErrors(field, errors, []);
  field.value = "";
  field.placeholder = "Loading the job's input…";
  openDialog(
    dialog,
    async () => {
      const checked = checkJsonField(field, errors, view.schema, "input");
      if (!checked.ok) {
        field.focus();
        return false;
      }
      const body = { mode: "full" };
      if (checked.state !== undefined) body.state = checked.state;
      await act(() => post("retry", body));
    },
    $("[data-close]", dialog),
  );
  try {
    const input = await readInput();
    if (field.value === "" && input != null) field.value = prettyJson(input);
  } catch {
    // unread: an empty field starts over with the stored input, as the API does
  } finally {
    field.placeholder = "Empty: the input it was started with";
  }
}

/**
 * Rerun from phase: pick a phase and edit the state (prefilled with the checkpoint's), checked against the
 * pipeline's schema before sending {"mode": "from", "phase", "state"}; an empty state lets the API use the
 * state the job had when it last entered that phase.
 */
export async function openRerun(view, readState, act, post) {
  const job = view.job;
  const dialog = $("#rerun-dialog");
  const select = $("#rerun-phase");
  const field = $("#rerun-state");
  const errors = $("#rerun-state-errors");
  const preferred = job.status === "error" ? failedPhase(job) : job.nextPhase;
  // the API leaves out the phases this job runs only as a map's items: a rerun from one is refused
  const phases = Array.isArray(job.rerunPhases) ? job.rerunPhases : view.phases;
  select.replaceChildren(...phases.map((phase) => h("option", { value: phase }, phase)));
  select.value = phases.includes(preferred) ? preferred : phases[0];
  showFieldErrors(field, errors, []);
  field.value = "";
  field.placeholder = "Loading the checkpoint's state…";
  openDialog(
    dialog,
    async () => {
      const checked = checkJsonField(field, errors, view.schema);
      if (!checked.ok) {
        field.focus();
        return false;
      }
      const body = { mode: "from", phase: select.value };
      if (checked.state !== undefined) body.state = checked.state;
      await act(() => post("retry", body));
    },
    select,
  );
  try {
    const state = await readState();
    if (dialog.open && !field.value) field.value = state == null ? "" : prettyJson(state);
  } finally {
    field.placeholder = "";
  }
}
