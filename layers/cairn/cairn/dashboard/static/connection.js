/**
 * Whether the page reads the API: "online" while its reads succeed; "offline" when a call gets no answer (or
 * the gateway's: the API timed out, is unavailable); "error" when a read is answered with a failure (its
 * reason in the indicator's title). A good read is "online" again. The top bar's indicator says which;
 * views listen, to disable their actions while offline. The views' pollers keep trying, so the page
 * recovers by itself once the API is back.
 */

import { $ } from "./dom.js";
import { clockFormat } from "./format.js";

const listeners = new Set();
let state = "online";
let since = null;
let reason = "";

/** "online", "offline" or "error". */
export const connectionState = () => state;

/** When the page went offline, or its reads began to fail (a Date); null while online. */
export const offlineSince = () => since;

/**
 * Call `listener(state)` on every change; returns the function that stops it.
 * @param {(state: string) => void} listener
 */
export function onConnectionChange(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * Record what the last call found: an answer (`true`) or none (`false`, with `why`). An answer does not undo
 * an "error" (a failed read): only a good read does (recordRead).
 */
export function recordAnswer(answered, why = "") {
  if (answered) {
    if (state === "offline") change("online", "");
  } else {
    change("offline", why || "The API does not answer");
  }
}

/** Record what a read found: a good answer (`ok`), or a failure, `why` (its reason: the API's message). */
export function recordRead(ok, why = "") {
  change(ok ? "online" : "error", ok ? "" : why);
}

function change(next, why) {
  const sameState = next === state;
  if (sameState && why === reason) return;
  if (!sameState) since = next === "online" ? null : new Date();
  state = next;
  reason = why;
  showIndicator();
  if (!sameState) for (const listener of listeners) listener(state);
}

function showIndicator() {
  const indicator = $("#connection");
  if (!indicator) return;
  indicator.dataset.state = state;
  const at = since ? clockFormat.format(since) : "";
  const texts = {
    online: ["Live", "The page reads the API every few seconds."],
    offline: [
      `Offline since ${at} · retrying`,
      `${reason}: actions are disabled until it answers. The page keeps trying.`,
    ],
    error: [`Error since ${at} · retrying`, `The last read failed: ${reason}. The page keeps trying.`],
  };
  [indicator.textContent, indicator.title] = texts[state];
}
