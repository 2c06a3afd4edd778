/**
 * The page's `<dialog>`s: closing, submitting (an API refusal keeps them open), the focus after.
 */

import { reportError } from "./alerts.js";
import { ApiError } from "./api.js";
import { $, restoreFocus } from "./dom.js";
import { formatJsonField } from "./fields.js";

/**
 * Wire a `<dialog>`: its [data-close] buttons close it, its form's submit runs the handler given to
 * openDialog; a handler that returns false keeps it open (invalid input); an API refusal is shown in
 * the dialog and in the page's alert region, and the dialog stays open so that nothing typed is lost.
 * @param {HTMLDialogElement} dialog
 */
export function setupDialog(dialog) {
  const form = $("form", dialog);
  for (const button of dialog.querySelectorAll("[data-close]")) {
    button.addEventListener("click", () => dialog.close("close"));
  }
  for (const button of dialog.querySelectorAll("[data-format]")) {
    button.addEventListener("click", () => formatJsonField(document.getElementById(button.dataset.format)));
  }
  dialog.addEventListener("close", () => {
    const opener = dialog.opener;
    dialog.opener = null;
    dialog.submitHandler = null;
    if (opener?.isConnected) restoreFocus(opener);
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!dialog.submitHandler || form.getAttribute("aria-busy") === "true") return;
    const submit = $("[type=submit]", form);
    const focused = document.activeElement;
    setDialogError(dialog, "");
    form.setAttribute("aria-busy", "true");
    submit.disabled = true;
    try {
      if ((await dialog.submitHandler()) !== false) dialog.close("done");
    } catch (error) {
      const message = error instanceof ApiError ? error.message : String(error?.message ?? error);
      setDialogError(dialog, message);
      reportError(error);
    } finally {
      form.removeAttribute("aria-busy");
      submit.disabled = false;
      // Disabling the submit button while the request ran took the focus from it: give it back.
      if (dialog.open && !dialog.contains(document.activeElement)) restoreFocus(focused);
    }
  });
}

export function setDialogError(dialog, message) {
  $("[data-slot=error]", dialog).textContent = message;
}

/**
 * Open a wired dialog as a modal; `onSubmit` runs when its form is submitted. Focus returns to the
 * element that had it when the dialog closes.
 * @param {HTMLDialogElement} dialog
 * @param {() => Promise<boolean|void>} onSubmit
 * @param {HTMLElement} [focus] the field to focus first (default: the first field)
 */
export function openDialog(dialog, onSubmit, focus) {
  dialog.opener = document.activeElement;
  dialog.submitHandler = onSubmit;
  setDialogError(dialog, "");
  if (!dialog.open) dialog.showModal();
  (focus ?? $("input, select, textarea, button", dialog))?.focus();
}

export function closeDialogs() {
  for (const dialog of document.querySelectorAll("dialog[open]")) dialog.close("navigation");
}
