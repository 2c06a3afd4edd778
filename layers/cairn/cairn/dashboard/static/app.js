/**
 * cairn dashboard: a static page over the jobs API. No build step, no dependencies, no network but the API.
 * This is its entry module; every other one is a file beside it, imported by relative URL (native ES modules).
 *
 * Views (the URL's fragment; router.js):
 *   #/                 jobs: newest first, filtered by status (the API's) and pipeline (here), paged by cursor
 *   #/?status=error&pipeline=NAME   the same, filtered (the filters are kept in the fragment)
 *   #/jobs/<id>        one job: status banner, actions, phase timeline, log, usage, checkpoint and result
 *   #/new              start a job: pipeline, optional job id, initial state as JSON (checked with its schema)
 *   #/bulk             the bulk operations this browser started; #/bulk/<id> one, followed to each job's outcome
 *
 * The API is called on the page's own origin with relative URLs (`jobs`, `pipelines`...), so the page works
 * wherever it is served next to the API: `cairn dev`, `cairn dashboard` (a proxy that signs the calls) or the
 * deployed API itself. Errors come as `{"error": {"code", "message"}}`; a refusal is shown as its message in
 * the page's one `role="alert"` region (api.js, alerts.js).
 *
 * Auth: none locally. For an API with JWT auth the user's token is sent as `Authorization: Bearer <token>`;
 * it comes from the token dialog or from the URL fragment `#token=...` (then removed from the address bar)
 * and is kept in sessionStorage only: nothing secret is in the page (token.js, token-dialog.js).
 *
 * Live: a Poller re-reads the view every POLL_MS and stops while the tab is hidden (poller.js). Changes are
 * announced politely (`aria-live`); the job's status banner is the page's one `role="status"` element and
 * carries `data-status` (banner.js).
 *
 * Which action a status allows: see actionRules in actions.js.
 */

import { actionRules } from "./actions.js";
import { clearAlert } from "./alerts.js";
import { bannerText } from "./banner.js";
import { setupDialog } from "./dialogs.js";
import { $ } from "./dom.js";
import { formatDuration } from "./format.js";
import { parseRoute, render } from "./router.js";
import { validateSchema } from "./schema.js";
import { setupTokenDialog } from "./token-dialog.js";
import { takeTokenFromFragment, TOKEN_FRAGMENT, updateTokenButton } from "./token.js";

/** Wire the page's fixed parts (top bar, dialogs, alert, skip link), then show the view the address names. */
function start() {
  takeTokenFromFragment();
  updateTokenButton();
  for (const dialog of document.querySelectorAll("dialog")) setupDialog(dialog);
  setupTokenDialog();
  $("#alert-dismiss").addEventListener("click", () => clearAlert());
  $("#skip-link").addEventListener("click", (event) => {
    event.preventDefault();
    $("#main").focus();
  });
  window.addEventListener("hashchange", () => {
    if (TOKEN_FRAGMENT.test(location.hash)) takeTokenFromFragment();
    render();
  });
  render();
}

// Exposed for tests and for the curious (window.cairnDashboard.validateSchema(...) in the console).
window.cairnDashboard = { validateSchema, actionRules, bannerText, parseRoute, formatDuration };

start();
