/**
 * Which code each phase run ran (its record's codeVersion, core/versions.py): shown short, like a git
 * hash, and marked where it changed from the previous run of the same phase (a deploy between them).
 */

import { h } from "./dom.js";

const HASH_PREFIX = "sha256:"; // a hash of the phase's module
const SHORT_HASH = 12;
const LONG_HASH = /^[0-9a-f]{16,}$/i; // a hash to shorten (a commit's 40 hex digits), not a build number
const SHORT_VERSION = 20;

/** A code version as a row shows it: "sha256:3f2a9c1b7d4e" is "3f2a9c1b7d4e"; "lambda:7" stays; a long one is cut. */
export function shortVersion(version) {
  if (!version) return null;
  const shown = version.startsWith(HASH_PREFIX) && version.length > HASH_PREFIX.length ? version.slice(HASH_PREFIX.length) : version;
  if (LONG_HASH.test(shown)) return shown.slice(0, SHORT_HASH);
  return shown.length <= SHORT_VERSION ? shown : `${shown.slice(0, SHORT_VERSION - 1)}…`;
}

/**
 * For each phase record, the code version the previous run of the same phase ran when its own differs;
 * null otherwise (its first run, the same code, or a record without a version, which neither changes nor compares).
 * @param {object[]} records the job's phase records, oldest first
 */
export function codeChanges(records) {
  const last = new Map();
  return records.map((record) => {
    const version = record.codeVersion;
    if (!version) return null;
    const before = last.get(record.phase) ?? null;
    last.set(record.phase, version);
    return before !== null && before !== version ? before : null;
  });
}

/** The tooltip's words for a run's code: "code sha256:…", and what it ran before when that changed. */
export function codeTitle(version, before) {
  if (!version) return null;
  return before ? `code ${version} (changed from ${before})` : `code ${version}`;
}

/** A run's code in its row: "code 3f2a9c1b7d4e", and a "changed" mark when it differs from the phase's previous run. */
export function codeLabel(version, before) {
  if (!version) return null;
  return h(
    "span",
    { class: "code-version", title: codeTitle(version, before) },
    "code ",
    h("span", { class: "mono" }, shortVersion(version)),
    before
      ? h("span", { class: "code-changed", title: `The code changed since this phase's previous run (${before})` }, "changed")
      : null,
  );
}
