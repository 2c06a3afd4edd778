/**
 * Times, durations, numbers and JSON as people read them.
 */

import { h } from "./dom.js";

export const clockFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
const shortFormat = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
});
export const fullFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
export const numberFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 4 });

/** A Unix time in ms as text: the clock time today, else the date and time. */
export function formatTime(ms) {
  if (ms == null) return "—";
  const date = new Date(ms);
  const today = new Date();
  return date.toDateString() === today.toDateString() ? clockFormat.format(date) : shortFormat.format(date);
}

/** A `<time>` element for a Unix time in ms, with the full date in its title. */
export function timeElement(ms) {
  if (ms == null) return h("span", { class: "muted" }, "—");
  const date = new Date(ms);
  return h("time", { datetime: date.toISOString(), title: fullFormat.format(date) }, formatTime(ms));
}

/**
 * A duration in ms for people: "850 ms", "1.2 s", "2 min 05 s", "1 h 02 min".
 * @param {number} ms
 */
export function formatDuration(ms) {
  if (!Number.isFinite(ms)) return "—";
  const value = Math.max(0, ms);
  if (value < 1000) return `${Math.round(value)} ms`;
  if (value < 60_000) return `${(value / 1000).toFixed(value < 10_000 ? 1 : 0)} s`;
  const seconds = Math.round(value / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, "0")} s`;
  const minutes = Math.round(seconds / 60);
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, "0")} min`;
}

/** Pretty JSON for display. */
export function prettyJson(value) {
  return JSON.stringify(value, null, 2);
}

/** Text quoted as the API's messages quote names. */
export const quoted = (text) => `“${text}”`;
