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
/** The absolute time with its zone ("2 Dec 2026, 21:30:05 GMT+1"): what a time's title says on hover. */
export const fullFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "long" });
const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;
const relativeFormat = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
/** How far a relative time reaches, by unit: past a week, the date is clearer than "23 days ago". */
const RELATIVE_UNITS = [
  ["second", 60_000, 1000],
  ["minute", 3_600_000, 60_000],
  ["hour", 86_400_000, 3_600_000],
  ["day", 604_800_000, 86_400_000],
];
export const numberFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 4 });

/** A Unix time in ms as text: the clock time today, else the date and time. */
export function formatTime(ms) {
  if (ms == null) return "—";
  const date = new Date(ms);
  const today = new Date();
  return date.toDateString() === today.toDateString() ? clockFormat.format(date) : shortFormat.format(date);
}

/**
 * A Unix time in ms relative to `now` ("5 minutes ago", "in 2 hours", "now"); past a week either way, the
 * date and time (formatTime).
 */
export function formatRelative(ms, now = Date.now()) {
  if (ms == null) return "—";
  const distance = ms - now;
  if (Math.abs(distance) < 5000) return relativeFormat.format(0, "second");
  for (const [unit, within, size] of RELATIVE_UNITS) {
    if (Math.abs(distance) < within) return relativeFormat.format(Math.trunc(distance / size), unit);
  }
  return formatTime(ms);
}

/** The absolute time and the zone it is shown in, for a title: "2 Dec 2026, 21:30:05 GMT+1 (Europe/Berlin)". */
export function absoluteTime(ms) {
  return `${fullFormat.format(new Date(ms))}${ZONE ? ` (${ZONE})` : ""}`;
}

/** A `<time>` element for a Unix time in ms: relative ("3 minutes ago"), the absolute time and zone on hover. */
export function timeElement(ms) {
  if (ms == null) return h("span", { class: "muted" }, "—");
  const date = new Date(ms);
  return h("time", { datetime: date.toISOString(), title: absoluteTime(ms) }, formatRelative(ms));
}

/** A `<time>` element as a clock time (a log's entries, read in sequence), the absolute time and zone on hover. */
export function clockElement(ms) {
  if (ms == null) return h("span", { class: "muted" }, "—");
  const date = new Date(ms);
  return h("time", { datetime: date.toISOString(), title: absoluteTime(ms) }, formatTime(ms));
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
