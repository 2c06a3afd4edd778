/**
 * The token dialog: save or forget the tab's API token; the views read again with it.
 */

import { announce, clearAlert } from "./alerts.js";
import { openDialog, setDialogError } from "./dialogs.js";
import { $ } from "./dom.js";
import { refreshView } from "./router.js";
import { getToken, setToken } from "./token.js";

/** The token dialog: save or forget the tab's API token. */
function openTokenDialog() {
  const dialog = $("#token-dialog");
  const input = $("#token-input");
  input.value = "";
  $("[data-slot=token-state]", dialog).textContent = getToken()
    ? "A token is set for this tab. Save another to replace it."
    : "No token is set for this tab.";
  openDialog(dialog, async () => {
    const token = input.value.trim();
    if (!token) {
      setDialogError(dialog, "Paste a token first, or use Forget token.");
      return false;
    }
    setToken(token);
    announce("The API token is saved for this tab.");
    clearAlert();
    refreshView();
  }, input);
}

/** Wire the top bar's token button and the dialog's Forget token button. */
export function setupTokenDialog() {
  $("#token-button").addEventListener("click", openTokenDialog);
  $("[data-forget]", $("#token-dialog")).addEventListener("click", () => {
    setToken(null);
    $("#token-dialog").close("forget");
    announce("The API token is forgotten.");
  });
}
