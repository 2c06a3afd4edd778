/**
 * Bulk operations: #/bulk lists the ones this browser started (newest first, each with its progress), and
 * #/bulk/<id> follows one to its end: progress, then each job's outcome with its status now. The bulk runs on
 * the server, so this page may be closed and opened again (or in another tab) at any time.
 */

import { api } from "./api.js";
import { bulkHref, bulkPath, followBulk, progressText, recentBulks } from "./bulk-progress.js";
import { h, heading } from "./dom.js";
import { fullFormat } from "./format.js";

const ACTIONS = { retry: "Retry", restart: "Start over", cancel: "Cancel" };

/** #/bulk/<id>: one bulk, followed. */
export function bulkView(main, route) {
  const progress = h("progress", { hidden: true, "aria-label": "Jobs settled" });
  const text = h("p", { "aria-live": "polite" }, "Reading the bulk…");
  const results = h("ul", { class: "bulk-results", "aria-label": "Outcome per job" });
  const about = h("p", { class: "muted" });
  main.append(heading("Bulk ", h("span", { class: "mono" }, route.id)), about, progress, text, results);
  const follower = followBulk(route.id, {
    progress,
    text,
    results,
    shown: (bulk) => {
      const filter = Object.entries(bulk.filter ?? {})
        .map(([name, value]) => `${name} ${value}`)
        .join(", ");
      about.textContent = `${ACTIONS[bulk.action] ?? bulk.action} by ${bulk.by}, ${fullFormat.format(
        new Date(bulk.createdAt),
      )}; selected by ${filter || "id"}, at most ${bulk.limit}.`;
    },
  });
  return { stop: () => follower.stop() };
}

/** #/bulk: the bulks this browser started, each with its progress (one read each). */
export function bulksView(main) {
  const list = h("ul", { class: "bulk-list", "aria-label": "Bulk operations started here" });
  main.append(
    heading("Bulk operations"),
    h("p", { class: "muted" }, "The bulk retries, cancels and restarts started from this browser, newest first."),
    list,
  );
  const controller = new AbortController();
  const ids = recentBulks();
  if (ids.length === 0) list.append(h("li", {}, "None yet: select jobs in the list, then Retry, Cancel or Start over."));
  for (const bulkId of ids) {
    const item = h("li", {}, h("a", { href: bulkHref(bulkId), class: "mono" }, bulkId), ": reading…");
    list.append(item);
    api(bulkPath(bulkId), { signal: controller.signal })
      .then((bulk) => item.replaceChildren(item.firstChild, `: ${ACTIONS[bulk.action] ?? bulk.action}. ${progressText(bulk)}`))
      .catch((error) => {
        if (error?.name !== "AbortError") item.replaceChildren(item.firstChild, `: ${error?.message ?? error}`);
      });
  }
  return { stop: () => controller.abort() };
}
