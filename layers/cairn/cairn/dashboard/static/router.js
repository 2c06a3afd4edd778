/**
 * Routing: the view the URL's fragment names is shown, the one before it stopped.
 */

import { clearAlert } from "./alerts.js";
import { closeDialogs } from "./dialogs.js";
import { $, h, heading } from "./dom.js";
import { failuresView } from "./view-failures.js";
import { bulksView, bulkView } from "./view-bulk.js";
import { jobView } from "./view-job.js";
import { jobsView } from "./view-jobs.js";
import { newJobView } from "./view-start.js";

/**
 * The view a fragment names: `{name: "jobs"|"job"|"new"|"failures"|"bulks"|"bulk"|"missing", id?, params}`.
 * @param {string} hash
 */
export function parseRoute(hash) {
  const raw = hash.replace(/^#/, "");
  const queryAt = raw.indexOf("?");
  const path = queryAt >= 0 ? raw.slice(0, queryAt) : raw;
  const params = new URLSearchParams(queryAt >= 0 ? raw.slice(queryAt + 1) : "");
  if (path === "" || path === "/") return { name: "jobs", params };
  if (path === "/new") return { name: "new", params };
  if (path === "/failures" || path === "/failures/") return { name: "failures", params };
  if (path === "/bulk" || path === "/bulk/") return { name: "bulks", params };
  const bulk = /^\/bulk\/([A-Za-z0-9-]{1,64})\/?$/.exec(path);
  if (bulk) return { name: "bulk", id: bulk[1], params };
  const job = /^\/jobs\/([^/]+)\/?$/.exec(path);
  if (job) {
    try {
      return { name: "job", id: decodeURIComponent(job[1]), params };
    } catch {
      return { name: "missing", params };
    }
  }
  return { name: "missing", params };
}

const VIEWS = {
  jobs: jobsView,
  job: jobView,
  new: newJobView,
  failures: failuresView,
  bulks: bulksView,
  bulk: bulkView,
  missing: missingView,
};
let currentView = null;
let firstRender = true;

/** Show the view the address names, stopping the one before (its polling and its requests). */
export function render() {
  currentView?.stop?.();
  closeDialogs();
  clearAlert();
  const route = parseRoute(location.hash);
  const main = $("#main");
  main.replaceChildren();
  main.removeAttribute("aria-busy");
  currentView = VIEWS[route.name](main, route) ?? null;
  for (const link of document.querySelectorAll("[data-nav]")) {
    const current = link.dataset.nav === (route.name === "bulk" ? "bulks" : route.name);
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (!firstRender) $("h1", main)?.focus({ preventScroll: false });
  firstRender = false;
}

/** Read the current view again now (after the token changed). */
export function refreshView() {
  currentView?.refresh?.();
}

function missingView(main) {
  main.append(
    heading("Nothing here"),
    h("p", {}, "This address names no view of the dashboard. ", h("a", { href: "#/" }, "See all jobs"), "."),
  );
}
