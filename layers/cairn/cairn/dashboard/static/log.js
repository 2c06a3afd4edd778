/**
 * The job's log, oldest first: entries appended as they come, the scroll following the tail.
 */

import { appendAll, h } from "./dom.js";
import { timeElement } from "./format.js";
import { icon } from "./icons.js";
import { KIND_LABELS } from "./labels.js";

/**
 * The log, oldest first: each entry's kind told apart by icon, label and colour, a decision with its
 * reason. Entries only ever add up (a start over resets them): new ones are appended, keeping the scroll
 * at the bottom when it was there (and putting it there on a first look at a live job).
 * @param {HTMLOListElement} list
 * @param {object[]} entries
 * @param {string} filter "" (all), "annotations" (all but plain log lines) or one kind
 * @param {boolean} [force] rebuild (the filter changed)
 * @param {boolean} [live] the job is running or waiting
 */
export function renderLog(list, entries, filter, force = false, live = false) {
  const visible = entries.filter((entry) => {
    const kind = entry.kind ?? "log";
    if (!filter) return true;
    return filter === "annotations" ? kind !== "log" : kind === filter;
  });
  const box = list.parentElement;
  // Follow the tail when the reader is at the bottom; a first look at a finished job starts at the top.
  const firstLook = !list.dataset.shown;
  list.dataset.shown = "yes";
  const atBottom = firstLook ? live : box.scrollHeight - box.scrollTop - box.clientHeight < 8;
  const first = visible[0] ? entryKey(visible[0]) : "";
  const keepsPrefix =
    !force &&
    list.dataset.first === first &&
    visible.length >= list.children.length &&
    list.children.length > 0 &&
    list.lastElementChild.dataset.key === entryKey(visible[list.children.length - 1]);
  if (!keepsPrefix) list.replaceChildren();
  list.dataset.first = first;
  appendAll(list, visible.slice(list.children.length).map(logEntry));
  if (visible.length === 0) {
    const message = entries.length ? "No entry of this kind." : "No log entries yet.";
    list.replaceChildren(h("li", { class: "muted empty-log" }, message));
    list.dataset.first = "";
  }
  if (atBottom || force) box.scrollTop = box.scrollHeight;
}

const entryKey = (entry) => `${entry.timestamp}|${entry.kind}|${entry.message.slice(0, 80)}`;

function logEntry(entry) {
  const kind = entry.kind ?? "log";
  const level = entry.level ?? "info";
  const levelNote = kind === "log" && level !== "info" ? h("span", { class: `level level-${level}` }, level) : null;
  return h(
    "li",
    { class: `entry kind-${kind} level-${level}`, dataset: { key: entryKey(entry) } },
    h("span", { class: `kind kind-${kind}` }, icon(kind), KIND_LABELS[kind] ?? kind),
    h(
      "div",
      { class: "entry-body" },
      h(
        "div",
        { class: "entry-meta muted" },
        timeElement(entry.timestamp),
        entry.phase ? h("span", { class: "mono" }, entry.phase) : null,
        levelNote,
      ),
      h("p", { class: "entry-message" }, entry.message),
      entry.reason ? h("p", { class: "entry-reason" }, h("strong", {}, "Why: "), entry.reason) : null,
    ),
  );
}
