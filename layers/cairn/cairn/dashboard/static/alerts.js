/**
 * The page's one alert region (role="alert": refusals, failed polls) and its polite announcer.
 */

import { ApiError } from "./api.js";
import { $ } from "./dom.js";

let alertSource = null;

/**
 * Show `message` in the page's alert region (role="alert"): an API refusal, a failed poll.
 * `source` tags it so that the poller can clear only its own message once the API answers again.
 */
function showAlert(message, source = "action") {
  // What an action's answer said stays until it is dismissed or another action speaks: a failed poll after it (the
  // read an action makes at once, say) shows in the connection indicator, and must not hide what the action said.
  if (source === "poll" && alertSource === "action") return;
  const alert = $("#alert");
  alertSource = source;
  if (alert.textContent !== message) alert.textContent = message;
  $("#alert-dismiss").hidden = false;
}

/** Clear the alert region (only when it holds a message of `source`, if given). */
export function clearAlert(source) {
  if (source && alertSource !== source) return;
  $("#alert").textContent = "";
  $("#alert-dismiss").hidden = true;
  alertSource = null;
}

/** Say `message` to screen readers, politely (live updates, finished actions). */
export function announce(message) {
  const announcer = $("#announcer");
  announcer.textContent = "";
  // A fresh text node in a later task is announced even when it repeats the last message.
  setTimeout(() => {
    announcer.textContent = message;
  }, 50);
}

/** Report an error of `source`: ApiErrors (and anything else) as text in the alert region. */
export function reportError(error, source = "action") {
  if (error?.name === "AbortError") return;
  showAlert(error instanceof ApiError ? error.message : `Something went wrong: ${error?.message ?? error}`, source);
  if (!(error instanceof ApiError)) console.error(error);
}
