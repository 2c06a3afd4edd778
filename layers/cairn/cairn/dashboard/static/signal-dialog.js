/**
 * Send signal: a signal's name and JSON payload, checked, then delivered to a waiting job.
 */

import { api, jobPath } from "./api.js";
import { openDialog } from "./dialogs.js";
import { $ } from "./dom.js";
import { checkJsonField, showFieldErrors } from "./fields.js";

const SIGNAL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const SIGNAL_NAME_RULE = "A signal's name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit.";

/** Send signal: a name (prefilled with what the job waits for) and a JSON payload (empty: none). */
export function openSignal(view, act, jobId) {
  const dialog = $("#signal-dialog");
  const name = $("#signal-name");
  const payload = $("#signal-payload");
  const nameErrors = $("#signal-name-errors");
  const payloadErrors = $("#signal-payload-errors");
  name.value = view.job.waitingFor ?? "";
  payload.value = "";
  showFieldErrors(name, nameErrors, []);
  showFieldErrors(payload, payloadErrors, []);
  openDialog(
    dialog,
    async () => {
      const signalName = name.value.trim();
      const nameOk = SIGNAL_NAME_PATTERN.test(signalName);
      showFieldErrors(name, nameErrors, nameOk ? [] : [SIGNAL_NAME_RULE]);
      const checked = checkJsonField(payload, payloadErrors, null, "payload");
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
