/**
 * The jobs list's keyboard shortcuts: `/` to the job id search, `j` / `k` to the next / previous job, Enter to
 * open it (the focused row's link); Enter in the search opens the job whose id was typed in full (asked of
 * the API when no row shows it yet), or else the only job shown. Keys typed into a field, with a modifier, or while a dialog is open are left alone.
 */

import { api, jobPath } from "./api.js";

const TYPING = new Set(["INPUT", "TEXTAREA", "SELECT"]);

/** The row's link to its job. */
const linkOf = (row) => row?.querySelector("a.job-link") ?? null;

/**
 * Listen for the shortcuts until the returned function is called.
 * @param {{search: HTMLInputElement, rows: () => HTMLTableRowElement[]}} list
 * @returns {() => void}
 */
export function listShortcuts({ search, rows }) {
  function move(step) {
    const shown = rows();
    if (shown.length === 0) return;
    const at = shown.findIndex((row) => row.contains(document.activeElement));
    const next = at < 0 ? (step > 0 ? 0 : shown.length - 1) : Math.min(shown.length - 1, Math.max(0, at + step));
    for (const row of shown) row.classList.toggle("current", row === shown[next]);
    linkOf(shown[next])?.focus();
    shown[next].scrollIntoView({ block: "nearest" });
  }

  /** The job whose id is `typed`, if the API has it; else the only row shown, if there is one. */
  async function openById(typed, onlyRow) {
    try {
      await api(jobPath(typed));
      location.hash = `#/jobs/${encodeURIComponent(typed)}`;
    } catch {
      if (onlyRow) linkOf(onlyRow)?.click();
    }
  }

  function onKey(event) {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
    if (document.querySelector("dialog[open]")) return;
    const target = event.target;
    if (target === search && event.key === "Enter") {
      const typed = search.value.trim();
      const shown = rows();
      event.preventDefault();
      const row = shown.find((each) => each.dataset.jobId === typed);
      if (row) linkOf(row)?.click();
      else if (typed) openById(typed, shown.length === 1 ? shown[0] : null);
      return;
    }
    if (TYPING.has(target?.tagName) || target?.isContentEditable) return;
    if (event.key === "/") {
      event.preventDefault();
      search.focus();
      search.select();
    } else if (event.key === "j") {
      event.preventDefault();
      move(1);
    } else if (event.key === "k") {
      event.preventDefault();
      move(-1);
    }
  }

  document.addEventListener("keydown", onKey);
  return () => document.removeEventListener("keydown", onKey);
}
