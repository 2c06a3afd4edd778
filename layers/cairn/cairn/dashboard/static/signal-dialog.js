/**
 * Send signal: a signal's name and JSON payload, checked, then delivered to a waiting job. A signal the
 * pipeline declares a payload model for starts from a template of its schema and is checked against it.
 */

import { api, findPipeline, jobPath } from "./api.js";
import { openDialog } from "./dialogs.js";
import { $ } from "./dom.js";
import { checkJsonField, showFieldErrors } from "./fields.js";
import { prettyJson } from "./format.js";
import { templateFor } from "./schema.js";

const SIGNAL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const SIGNAL_NAME_RULE = "A signal's name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit.";

/** The payload a signal without a declared model starts from: JSON null, which the API takes as "no payload". */
const NO_PAYLOAD = "null";

/**
 * Send signal: a name (prefilled with what the job waits for) and a JSON payload, prefilled from the signal's
 * declared schema when the pipeline has one, else with `null` (no payload: the phase reads ctx.signal as None).
 * A payload that is not JSON is refused in the dialog, with where it stops parsing.
 */
export async function openSignal(view, act, jobId) {
  const dialog = $("#signal-dialog");
  const name = $("#signal-name");
  const payload = $("#signal-payload");
  const nameErrors = $("#signal-name-errors");
  const payloadErrors = $("#signal-payload-errors");
  name.value = view.job.waitingFor ?? "";
  payload.value = "";
  showFieldErrors(name, nameErrors, []);
  showFieldErrors(payload, payloadErrors, []);
  const declared = (await findPipeline(view.job.pipeline))?.signals ?? {};
  const schemaOf = (signalName) => declared[signalName]?.payloadSchema ?? null;
  const hint = $("#signal-payload-hint");
  const prefill = () => {
    const signal = declared[name.value.trim()];
    hint.textContent = signal
      ? "The pipeline declares this signal's payload: it is checked against its schema before it is sent."
      : "No model is declared for this signal: any JSON (null: no payload). The phase after the wait reads it " +
        "as ctx.signal.";
    const untouched = payload.value.trim() === "" || payload.value.trim() === NO_PAYLOAD;
    if (signal && untouched) payload.value = prettyJson(signal.sample ?? templateFor(signal.payloadSchema));
    else if (!signal && payload.value.trim() === "") payload.value = NO_PAYLOAD;
  };
  prefill();
  name.onchange = prefill;
  openDialog(
    dialog,
    async () => {
      const signalName = name.value.trim();
      const nameOk = SIGNAL_NAME_PATTERN.test(signalName);
      showFieldErrors(name, nameErrors, nameOk ? [] : [SIGNAL_NAME_RULE]);
      const checked = checkJsonField(payload, payloadErrors, schemaOf(signalName), "payload");
      if (!nameOk || !checked.ok) {
        (nameOk ? payload : name).focus();
        return false;
      }
      const path = `${jobPath(jobId)}/signals/${encodeURIComponent(signalName)}`;
      await act(() => api(path, { method: "POST", body: checked.state }));
    },
    view.job.waitingFor ? payload : name,
  );
}
