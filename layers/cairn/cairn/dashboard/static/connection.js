/**
 * Whether the API answers: "online" until a call gets no answer, "offline" until a call is answered again.
 * The top bar's indicator says which; views listen, to disable their actions while offline. The views'
 * pollers keep trying, so the page recovers by itself once the API is back.
 */

import { $ } from "./dom.js";
import { clockFormat } from "./format.js";

const listeners = new Set();
let state = "online";
let since = null;

/** "online" or "offline". */
export const connectionState = () => state;

/** When the page went offline (a Date), or null while online. */
export const offlineSince = () => since;

/**
 * Call `listener(state)` on every change; returns the function that stops it.
 * @param {(state: string) => void} listener
 */
export function onConnectionChange(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Record what the last call found: an answer (`true`) or none (`false`). */
export function recordAnswer(answered) {
  const next = answered ? "online" : "offline";
  if (next === state) return;
  state = next;
  since = answered ? null : new Date();
  showIndicator();
  for (const listener of listeners) listener(state);
}

function showIndicator() {
  const indicator = $("#connection");
  if (!indicator) return;
  indicator.dataset.state = state;
  indicator.textContent = state === "offline" ? `Offline since ${clockFormat.format(since)} · retrying` : "Live";
  indicator.title =
    state === "offline"
      ? "The API does not answer; actions are disabled until it does. The page keeps trying."
      : "The page reads the API every few seconds.";
}
