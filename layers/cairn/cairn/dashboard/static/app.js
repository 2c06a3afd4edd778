/**
 * cairn dashboard: a static page over the jobs API. No build step, no dependencies, no network but the API.
 *
 * Views (the URL's fragment):
 *   #/                 jobs: newest first, filtered by status (the API's) and pipeline (here), paged by cursor
 *   #/?status=error&pipeline=NAME   the same, filtered (the filters are kept in the fragment)
 *   #/jobs/<id>        one job: status banner, actions, phase timeline, log, usage, checkpoint and result
 *   #/new              start a job: pipeline, optional job id, initial state as JSON (checked with its schema)
 *
 * The API is called on the page's own origin with relative URLs (`jobs`, `pipelines`...), so the page works
 * wherever it is served next to the API: `cairn dev`, `cairn dashboard` (a proxy that signs the calls) or the
 * deployed API itself. Errors come as `{"error": {"code", "message"}}`; a refusal is shown as its message in
 * the page's one `role="alert"` region.
 *
 * Auth: none locally. For an API with JWT auth the user's token is sent as `Authorization: Bearer <token>`;
 * it comes from the token dialog or from the URL fragment `#token=...` (then removed from the address bar)
 * and is kept in sessionStorage only: nothing secret is in the page.
 *
 * Live: a Poller re-reads the view every POLL_MS and stops while the tab is hidden. Changes are announced
 * politely (`aria-live`); the job's status banner is the page's one `role="status"` element and carries
 * `data-status`.
 *
 * Which action a status allows: see actionRules below.
 */

const POLL_MS = 2000;
const TOKEN_KEY = "cairn.dashboard.token";
const STATUSES = ["idle", "running", "waiting", "paused", "complete", "error", "cancelled"];
const STATUS_LABELS = {
  idle: "Idle",
  running: "Running",
  waiting: "Waiting",
  paused: "Paused",
  complete: "Complete",
  error: "Error",
  cancelled: "Cancelled",
};
const KIND_LABELS = {
  log: "Log",
  observation: "Observation",
  decision: "Decision",
  insight: "Insight",
  error: "Error",
};
const OUTCOME_LABELS = {
  next: "next",
  done: "done",
  error: "failed",
  retry: "retry",
  "unknown-phase": "unknown phase",
  sleep: "sleep",
  wait: "wait",
  map: "map",
  release: "released",
};
const JOB_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const SIGNAL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const JOB_ID_RULE = "A job id is 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit.";
const SIGNAL_NAME_RULE = "A signal's name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit.";
const MAX_TIMELINE_ROWS = 300;

/* ------------------------------------------------------------------------------------------------------------
 * DOM helpers
 * ------------------------------------------------------------------------------------------------------------ */

/**
 * Create an element. `props`: attributes, plus `class`, `text`, `dataset` and `on<event>` listeners;
 * null, undefined and false are skipped, true sets an empty attribute. Children are nodes or text.
 * @param {string} tag
 * @param {Record<string, any>} [props]
 * @param {...any} children
 * @returns {HTMLElement}
 */
function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value == null || value === false) continue;
    if (key === "class") element.className = value;
    else if (key === "text") element.textContent = String(value);
    else if (key === "dataset") Object.assign(element.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") element.addEventListener(key.slice(2), value);
    else element.setAttribute(key, value === true ? "" : String(value));
  }
  appendAll(element, children);
  return element;
}

/** Append nodes or text (arrays flattened; null, undefined and false skipped). */
function appendAll(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child == null || child === false) continue;
    parent.append(child instanceof Node ? child : String(child));
  }
}

/** Replace an element's children (nodes or text; null, undefined and false skipped). */
function setChildren(parent, ...children) {
  parent.replaceChildren();
  appendAll(parent, children);
}

const $ = (selector, root = document) => root.querySelector(selector);

/**
 * Give the focus back to `element` after an action; when it is gone or disabled (a button the job's new
 * status no longer allows), to the nearest enabled button of its group, else the view's heading. A disabled
 * control cannot hold the focus: without this a keyboard user would be sent back to the top of the page.
 * @param {Element|null} element
 */
function restoreFocus(element) {
  if (element?.isConnected && !element.disabled) {
    element.focus();
    return;
  }
  const group = element?.isConnected ? element.closest("[role=group]") : null;
  if (group) {
    const controls = [...group.querySelectorAll("button")];
    const at = controls.indexOf(element);
    const after = controls.slice(at + 1);
    const before = controls.slice(0, Math.max(at, 0)).reverse();
    const nearest = [...after, ...before].find((control) => !control.disabled);
    if (nearest) {
      nearest.focus();
      return;
    }
  }
  $("#main h1")?.focus();
}

/** Whether the focus is lost: on the page's body, or on a control that was disabled (it loses it soon). */
function focusLost() {
  const active = document.activeElement;
  return active == null || active === document.body || active.disabled === true;
}

const ICONS = {
  running: [["path", { d: "M12 3a9 9 0 1 1-9 9" }]],
  waiting: [["circle", { cx: 12, cy: 12, r: 9 }], ["path", { d: "M12 7v5l3.5 2" }]],
  paused: [["path", { d: "M9 5v14M15 5v14" }]],
  complete: [["path", { d: "M4.5 12.5l5 5L19.5 7" }]],
  error: [["path", { d: "M12 3.5l9.5 17h-19z" }], ["path", { d: "M12 10v4.5M12 17.5v.01" }]],
  cancelled: [["circle", { cx: 12, cy: 12, r: 9 }], ["path", { d: "M5.8 5.8l12.4 12.4" }]],
  idle: [["circle", { cx: 12, cy: 12, r: 8 }]],
  loading: [["circle", { cx: 12, cy: 12, r: 8 }]],
  log: [["path", { d: "M5 7h14M5 12h14M5 17h9" }]],
  observation: [
    ["path", { d: "M2.5 12S6 5.5 12 5.5 21.5 12 21.5 12 18 18.5 12 18.5 2.5 12 2.5 12z" }],
    ["circle", { cx: 12, cy: 12, r: 3 }],
  ],
  decision: [["path", { d: "M6 3v5a5 5 0 0 0 5 5h8M15.5 9.5L19 13l-3.5 3.5M6 21v-8" }]],
  insight: [["path", { d: "M12 3l2.4 5.6 6 .6-4.6 4 1.4 6L12 16.1 6.8 19.2l1.4-6-4.6-4 6-.6z" }]],
  key: [["circle", { cx: 8, cy: 15, r: 4 }], ["path", { d: "M11 12l8-8M16 7l2.5 2.5M14 9l2 2" }]],
};

/**
 * A small stroked SVG icon from ICONS (decorative: hidden from assistive technology).
 * @param {string} name
 * @returns {SVGSVGElement}
 */
function icon(name) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  svg.setAttribute("class", `icon icon-${name}`);
  for (const [tag, attributes] of ICONS[name] ?? ICONS.idle) {
    const shape = document.createElementNS(ns, tag);
    for (const [key, value] of Object.entries(attributes)) shape.setAttribute(key, String(value));
    svg.append(shape);
  }
  return svg;
}

/** A status pill: icon and word, coloured by status (the word, not the colour, carries the meaning). */
function statusBadge(status) {
  return h("span", { class: `badge status-${status}` }, icon(status), STATUS_LABELS[status] ?? status);
}

/* ------------------------------------------------------------------------------------------------------------
 * Formatting
 * ------------------------------------------------------------------------------------------------------------ */

const clockFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
const shortFormat = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
});
const fullFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
const numberFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 4 });

/** A Unix time in ms as text: the clock time today, else the date and time. */
function formatTime(ms) {
  if (ms == null) return "—";
  const date = new Date(ms);
  const today = new Date();
  return date.toDateString() === today.toDateString() ? clockFormat.format(date) : shortFormat.format(date);
}

/** A `<time>` element for a Unix time in ms, with the full date in its title. */
function timeElement(ms) {
  if (ms == null) return h("span", { class: "muted" }, "—");
  const date = new Date(ms);
  return h("time", { datetime: date.toISOString(), title: fullFormat.format(date) }, formatTime(ms));
}

/**
 * A duration in ms for people: "850 ms", "1.2 s", "2 min 05 s", "1 h 02 min".
 * @param {number} ms
 */
function formatDuration(ms) {
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
function prettyJson(value) {
  return JSON.stringify(value, null, 2);
}

/** Text quoted as the API's messages quote names. */
const quoted = (text) => `“${text}”`;

/* ------------------------------------------------------------------------------------------------------------
 * Token (JWT auth) and the API
 * ------------------------------------------------------------------------------------------------------------ */

/** The user's API token for this tab, or null. */
function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || null;
  } catch {
    return null;
  }
}

/** Keep (or, with an empty value, forget) the API token for this tab. */
function setToken(token) {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage refused (private mode): the token lasts as long as nothing, which is safe */
  }
  updateTokenButton();
}

/** Whether the fragment carries a token: `#token=...`, or an OAuth implicit-flow answer (`#access_token=...`). */
const TOKEN_FRAGMENT = /^#(token|access_token|id_token)=/;

/**
 * Take a token from the fragment (a link from a login flow: `#token=...`, or a sign-in page's redirect
 * `#id_token=...&access_token=...`), keep it, and remove it from the address bar and the history entry so
 * that it is neither shown nor bookmarked.
 */
function takeTokenFromFragment() {
  if (!TOKEN_FRAGMENT.test(location.hash)) return;
  const fields = new URLSearchParams(location.hash.slice(1));
  const token = fields.get("token") || fields.get("access_token") || fields.get("id_token");
  if (token) setToken(token);
  history.replaceState(null, "", `${location.pathname}${location.search}#/`);
}

/** An API error: the HTTP status (0: no answer), the API's code and its message. */
class ApiError extends Error {
  constructor(status, code, message, body = null) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

/**
 * Call the API at `path` (relative to the page, e.g. `jobs?limit=50`) and return its JSON answer.
 * Sends the token when there is one; throws ApiError with the API's message on a 4xx/5xx or no answer.
 * @param {string} path
 * @param {{method?: string, body?: any, signal?: AbortSignal}} [options] body: sent as JSON unless undefined
 * @returns {Promise<any>}
 */
async function api(path, { method = "GET", body, signal } = {}) {
  const headers = { Accept: "application/json" };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, signal, cache: "no-store", credentials: "same-origin" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(new URL(path, document.baseURI), init);
  } catch (error) {
    if (error?.name === "AbortError") throw error;
    throw new ApiError(0, "unreachable", "The API did not answer: is the server still running?");
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) throw apiErrorOf(response, data);
  return data;
}

/** The ApiError for a refused call: the API's own message, else API Gateway's, else the HTTP status. */
function apiErrorOf(response, data) {
  const detail = data?.error;
  let message = detail?.message ?? data?.message ?? `${response.status} ${response.statusText}`.trim();
  if (response.status === 401) {
    message += getToken() ? " (the API refused the token: set another with API token)" : " (set one with API token)";
  }
  return new ApiError(response.status, detail?.code ?? `http_${response.status}`, message, data);
}

const jobPath = (jobId) => `jobs/${encodeURIComponent(jobId)}`;

let pipelinesPromise = null;

/**
 * The deployment's pipelines (`GET /pipelines`), read once per page load; a failed read is tried again
 * by the next caller. Resolves to [] when the API has no such route.
 * @returns {Promise<Array<{name: string, phases: string[], stateSchema: object, sample: any}>>}
 */
function loadPipelines() {
  if (!pipelinesPromise) {
    pipelinesPromise = api("pipelines")
      .then((data) => data?.pipelines ?? [])
      .catch((error) => {
        pipelinesPromise = null;
        if (error instanceof ApiError && error.status === 404) return [];
        throw error;
      });
  }
  return pipelinesPromise;
}

/** The pipeline named `name`, or null when the deployment does not run it (or /pipelines cannot be read). */
async function findPipeline(name) {
  try {
    return (await loadPipelines()).find((pipeline) => pipeline.name === name) ?? null;
  } catch {
    return null;
  }
}

/* ------------------------------------------------------------------------------------------------------------
 * Alert, announcements, polling
 * ------------------------------------------------------------------------------------------------------------ */

let alertSource = null;

/**
 * Show `message` in the page's alert region (role="alert"): an API refusal, a failed poll.
 * `source` tags it so that the poller can clear only its own message once the API answers again.
 */
function showAlert(message, source = "action") {
  const alert = $("#alert");
  alertSource = source;
  if (alert.textContent !== message) alert.textContent = message;
  $("#alert-dismiss").hidden = false;
}

/** Clear the alert region (only when it holds a message of `source`, if given). */
function clearAlert(source) {
  if (source && alertSource !== source) return;
  $("#alert").textContent = "";
  $("#alert-dismiss").hidden = true;
  alertSource = null;
}

/** Say `message` to screen readers, politely (live updates, finished actions). */
function announce(message) {
  const announcer = $("#announcer");
  announcer.textContent = "";
  // A fresh text node in a later task is announced even when it repeats the last message.
  setTimeout(() => {
    announcer.textContent = message;
  }, 50);
}

/** Report an error of `source`: ApiErrors (and anything else) as text in the alert region. */
function reportError(error, source = "action") {
  if (error?.name === "AbortError") return;
  showAlert(error instanceof ApiError ? error.message : `Something went wrong: ${error?.message ?? error}`, source);
  if (!(error instanceof ApiError)) console.error(error);
}

/**
 * Runs `task` now and then every `interval` ms after each run finishes, never two at once; waits while
 * the tab is hidden and runs again as soon as it is shown. `now()` runs it at once (after an action).
 */
class Poller {
  /**
   * @param {(signal: AbortSignal) => Promise<void>} task
   * @param {number} [interval]
   */
  constructor(task, interval = POLL_MS) {
    this.task = task;
    this.interval = interval;
    this.timer = null;
    this.running = false;
    this.again = false;
    this.stopped = true;
    this.controller = new AbortController();
    this.onVisibility = () => (document.hidden ? clearTimeout(this.timer) : this.now());
  }

  start() {
    this.stopped = false;
    document.addEventListener("visibilitychange", this.onVisibility);
    this.now();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.controller.abort();
    document.removeEventListener("visibilitychange", this.onVisibility);
  }

  /** Run the task now (or right after the run in progress); resolves when that run is over. */
  async now() {
    clearTimeout(this.timer);
    if (this.stopped || document.hidden) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      await this.task(this.controller.signal);
      clearAlert("poll");
    } catch (error) {
      if (!this.stopped) reportError(error, "poll");
    } finally {
      this.running = false;
    }
    if (this.stopped) return;
    if (this.again) {
      this.again = false;
      this.now();
    } else if (!document.hidden) {
      this.timer = setTimeout(() => this.now(), this.interval);
    }
  }
}

/* ------------------------------------------------------------------------------------------------------------
 * JSON schema validation (the subset pydantic emits)
 * ------------------------------------------------------------------------------------------------------------ */

const TYPE_NAMES = {
  string: "a string",
  integer: "an integer",
  number: "a number",
  boolean: "true or false",
  null: "null",
  object: "an object",
  array: "an array",
};

/** Whether `value` is of the JSON schema type `type`. */
function isOfType(value, type) {
  switch (type) {
    case "string":
      return typeof value === "string";
    case "integer":
      return typeof value === "number" && Number.isInteger(value);
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "boolean":
      return typeof value === "boolean";
    case "null":
      return value === null;
    case "object":
      return value !== null && typeof value === "object" && !Array.isArray(value);
    case "array":
      return Array.isArray(value);
    default:
      return true;
  }
}

/** Deep equality of JSON values. */
function jsonEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key], b[key]));
}

/** The schema a local `$ref` (`#/$defs/Name`, any JSON pointer into the root) points at; null if none. */
function resolveRef(root, ref) {
  if (typeof ref !== "string" || !ref.startsWith("#")) return null;
  const parts = ref.slice(1).split("/").filter(Boolean);
  let target = root;
  for (const part of parts) {
    const key = decodeURIComponent(part).replaceAll("~1", "/").replaceAll("~0", "~");
    if (target == null || typeof target !== "object" || !Object.hasOwn(target, key)) return null;
    target = target[key];
  }
  return target;
}

/** A path in the state, as people read it: `state.results[0].page`. */
function childPath(path, key) {
  if (typeof key === "number") return `${path}[${key}]`;
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/** A pattern as a JS RegExp (Python and JS agree on what pydantic emits); null when JS cannot read it. */
function schemaPattern(pattern) {
  try {
    return new RegExp(pattern, "u");
  } catch {
    try {
      return new RegExp(pattern);
    } catch {
      return null;
    }
  }
}

/**
 * Check `value` against a JSON schema: type, enum, const, $ref/$defs, anyOf/oneOf/allOf, properties,
 * required, additionalProperties (false or a schema), items, prefixItems, min/max (exclusive too),
 * multipleOf, minLength/maxLength, pattern, minItems/maxItems, uniqueItems, minProperties/maxProperties.
 * Unknown keywords (format, title, default...) are ignored: the API checks again, this catches mistakes early.
 * @param {object|boolean} schema
 * @param {any} value
 * @param {string} [rootName] how the errors name the value itself
 * @returns {{path: string, message: string}[]} the errors; empty when `value` is valid
 */
function validateSchema(schema, value, rootName = "state") {
  const errors = [];
  checkSchema(schema, value, rootName, schema, errors, 0);
  return errors.map(({ path, message }) => ({ path, message }));
}

function checkSchema(schema, value, path, root, errors, depth) {
  if (schema === true || schema == null || typeof schema !== "object") {
    if (schema === false) errors.push({ path, message: "is not allowed here", kind: "type" });
    return;
  }
  if (depth > 64) return; // a recursive model: what a JSON value this deep can reach is the API's to check
  const fail = (message, kind = "value") => errors.push({ path, message, kind });

  if (schema.$ref) {
    const target = resolveRef(root, schema.$ref);
    if (target != null) checkSchema(target, value, path, root, errors, depth + 1);
  }
  for (const part of schema.allOf ?? []) checkSchema(part, value, path, root, errors, depth + 1);
  if (Array.isArray(schema.anyOf)) checkAlternatives(schema.anyOf, value, path, root, errors, depth, false);
  if (Array.isArray(schema.oneOf)) checkAlternatives(schema.oneOf, value, path, root, errors, depth, true);

  if (Object.hasOwn(schema, "const") && !jsonEqual(value, schema.const)) {
    fail(`must be ${JSON.stringify(schema.const)}`);
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((option) => jsonEqual(option, value))) {
    fail(`must be one of ${schema.enum.map((option) => JSON.stringify(option)).join(", ")}`);
  }
  if (schema.type != null) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((type) => isOfType(value, type))) {
      fail(`must be ${types.map((type) => TYPE_NAMES[type] ?? type).join(" or ")}`, "type");
      return;
    }
  }
  if (typeof value === "number") checkNumber(schema, value, fail);
  else if (typeof value === "string") checkString(schema, value, fail);
  else if (Array.isArray(value)) checkArray(schema, value, path, root, errors, depth, fail);
  else if (value !== null && typeof value === "object") checkObject(schema, value, path, root, errors, depth, fail);
}

/** anyOf (at least one alternative) or oneOf (exactly one): explain with the closest alternative's errors. */
function checkAlternatives(options, value, path, root, errors, depth, exactlyOne) {
  const results = options.map((option) => {
    const found = [];
    checkSchema(option, value, path, root, found, depth + 1);
    return found;
  });
  const passing = results.filter((found) => found.length === 0).length;
  if (exactlyOne ? passing === 1 : passing > 0) return;
  if (exactlyOne && passing > 1) {
    errors.push({ path, message: "matches more than one of the allowed forms", kind: "value" });
    return;
  }
  const wrongType = (found) => found.length === 1 && found[0].kind === "type" && found[0].path === path;
  const closer = results.filter((found) => !wrongType(found));
  if (closer.length === 0) {
    const wanted = [...new Set(results.map((found) => found[0].message.replace(/^must be /, "")))];
    errors.push({ path, message: `must be ${wanted.join(" or ")}`, kind: "type" });
    return;
  }
  errors.push(...closer.reduce((best, found) => (found.length < best.length ? found : best)));
}

function checkNumber(schema, value, fail) {
  if (typeof schema.minimum === "number" && value < schema.minimum) fail(`must be at least ${schema.minimum}`);
  if (typeof schema.maximum === "number" && value > schema.maximum) fail(`must be at most ${schema.maximum}`);
  if (typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum) {
    fail(`must be more than ${schema.exclusiveMinimum}`);
  }
  if (typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum) {
    fail(`must be less than ${schema.exclusiveMaximum}`);
  }
  if (typeof schema.multipleOf === "number" && schema.multipleOf > 0) {
    const ratio = value / schema.multipleOf;
    if (Math.abs(ratio - Math.round(ratio)) > 1e-9) fail(`must be a multiple of ${schema.multipleOf}`);
  }
}

function checkString(schema, value, fail) {
  const length = [...value].length;
  if (typeof schema.minLength === "number" && length < schema.minLength) {
    fail(`must have at least ${schema.minLength} character${schema.minLength === 1 ? "" : "s"}`);
  }
  if (typeof schema.maxLength === "number" && length > schema.maxLength) {
    fail(`must have at most ${schema.maxLength} characters`);
  }
  if (typeof schema.pattern === "string") {
    const pattern = schemaPattern(schema.pattern);
    if (pattern && !pattern.test(value)) fail(`must match the pattern ${schema.pattern}`);
  }
}

function checkArray(schema, value, path, root, errors, depth, fail) {
  if (typeof schema.minItems === "number" && value.length < schema.minItems) {
    fail(`must have at least ${schema.minItems} item${schema.minItems === 1 ? "" : "s"}`);
  }
  if (typeof schema.maxItems === "number" && value.length > schema.maxItems) {
    fail(`must have at most ${schema.maxItems} items`);
  }
  const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
  value.forEach((item, index) => {
    const itemSchema = index < prefix.length ? prefix[index] : schema.items;
    if (itemSchema === false) fail(`must have at most ${prefix.length} items`);
    else if (itemSchema != null) checkSchema(itemSchema, item, childPath(path, index), root, errors, depth + 1);
  });
  if (schema.uniqueItems === true) {
    const repeated = value.findIndex((item, index) => value.slice(0, index).some((seen) => jsonEqual(seen, item)));
    if (repeated >= 0) fail(`must not repeat an item (item ${repeated} repeats an earlier one)`);
  }
}

function checkObject(schema, value, path, root, errors, depth, fail) {
  const properties = schema.properties ?? {};
  for (const name of schema.required ?? []) {
    if (!Object.hasOwn(value, name)) {
      errors.push({ path: childPath(path, name), message: "is required", kind: "value" });
    }
  }
  const patterns = Object.entries(schema.patternProperties ?? {})
    .map(([pattern, patternSchema]) => [schemaPattern(pattern), patternSchema])
    .filter(([pattern]) => pattern);
  for (const [name, item] of Object.entries(value)) {
    const where = childPath(path, name);
    if (Object.hasOwn(properties, name)) {
      checkSchema(properties[name], item, where, root, errors, depth + 1);
      continue;
    }
    const matching = patterns.filter(([pattern]) => pattern.test(name));
    for (const [, patternSchema] of matching) checkSchema(patternSchema, item, where, root, errors, depth + 1);
    if (matching.length > 0) continue;
    if (schema.additionalProperties === false) {
      const known = Object.keys(properties);
      const hint = known.length ? ` (known: ${known.join(", ")})` : "";
      errors.push({ path: where, message: `is not a known field${hint}`, kind: "value" });
    } else if (schema.additionalProperties && typeof schema.additionalProperties === "object") {
      checkSchema(schema.additionalProperties, item, where, root, errors, depth + 1);
    }
  }
  const count = Object.keys(value).length;
  if (typeof schema.minProperties === "number" && count < schema.minProperties) {
    fail(`must have at least ${schema.minProperties} fields`);
  }
  if (typeof schema.maxProperties === "number" && count > schema.maxProperties) {
    fail(`must have at most ${schema.maxProperties} fields`);
  }
}

/**
 * Read a JSON text field: `{empty: true}` when blank, `{value}` when it parses, `{error}` (with the line and
 * column when the browser says where) when it does not.
 * @param {string} text
 */
function parseJsonField(text) {
  if (!text.trim()) return { empty: true };
  try {
    return { value: JSON.parse(text) };
  } catch (error) {
    const position = /position (\d+)/.exec(error.message);
    let where = "";
    if (position) {
      const before = text.slice(0, Number(position[1]));
      const line = before.split("\n").length;
      const column = before.length - before.lastIndexOf("\n");
      where = ` (line ${line}, column ${column})`;
    }
    return { error: `Not valid JSON${where}: ${error.message}` };
  }
}

/**
 * Show `messages` under a field (its error list is named in its aria-describedby) and mark it invalid.
 * @param {HTMLElement} field
 * @param {HTMLElement} list the field's `<ul class="field-errors">`
 * @param {string[]} messages none: the field is valid
 */
function showFieldErrors(field, list, messages) {
  list.replaceChildren(...messages.slice(0, 20).map((message) => h("li", {}, message)));
  if (messages.length > 20) list.append(h("li", {}, `…and ${messages.length - 20} more`));
  if (messages.length) field.setAttribute("aria-invalid", "true");
  else field.removeAttribute("aria-invalid");
}

/**
 * Check a JSON state field against a schema. Returns `{ok, state}` (state undefined when the field is
 * empty) and shows the errors under the field otherwise.
 * @param {HTMLTextAreaElement} field
 * @param {HTMLElement} list
 * @param {object|null} schema the pipeline's stateSchema ({} or null: any JSON)
 * @param {string} [name] how the messages name the value
 */
function checkJsonField(field, list, schema, name = "state") {
  const parsed = parseJsonField(field.value);
  if (parsed.error) {
    showFieldErrors(field, list, [parsed.error]);
    return { ok: false };
  }
  if (parsed.empty) {
    showFieldErrors(field, list, []);
    return { ok: true, state: undefined };
  }
  const errors = schema && Object.keys(schema).length ? validateSchema(schema, parsed.value, name) : [];
  showFieldErrors(field, list, errors.map((error) => `${error.path} ${error.message}`));
  return { ok: errors.length === 0, state: parsed.value };
}

/** Re-indent a JSON text field when it parses (the "Format JSON" buttons). */
function formatJsonField(field) {
  const parsed = parseJsonField(field.value);
  if (!parsed.error && !parsed.empty) field.value = prettyJson(parsed.value);
}

/* ------------------------------------------------------------------------------------------------------------
 * Dialogs
 * ------------------------------------------------------------------------------------------------------------ */

/**
 * Wire a `<dialog>`: its [data-close] buttons close it, its form's submit runs the handler given to
 * openDialog; a handler that returns false keeps it open (invalid input); an API refusal is shown in
 * the dialog and in the page's alert region, and the dialog stays open so that nothing typed is lost.
 * @param {HTMLDialogElement} dialog
 */
function setupDialog(dialog) {
  const form = $("form", dialog);
  for (const button of dialog.querySelectorAll("[data-close]")) {
    button.addEventListener("click", () => dialog.close("close"));
  }
  for (const button of dialog.querySelectorAll("[data-format]")) {
    button.addEventListener("click", () => formatJsonField(document.getElementById(button.dataset.format)));
  }
  dialog.addEventListener("close", () => {
    const opener = dialog.opener;
    dialog.opener = null;
    dialog.submitHandler = null;
    if (opener?.isConnected) restoreFocus(opener);
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!dialog.submitHandler || form.getAttribute("aria-busy") === "true") return;
    const submit = $("[type=submit]", form);
    const focused = document.activeElement;
    setDialogError(dialog, "");
    form.setAttribute("aria-busy", "true");
    submit.disabled = true;
    try {
      if ((await dialog.submitHandler()) !== false) dialog.close("done");
    } catch (error) {
      const message = error instanceof ApiError ? error.message : String(error?.message ?? error);
      setDialogError(dialog, message);
      reportError(error);
    } finally {
      form.removeAttribute("aria-busy");
      submit.disabled = false;
      // Disabling the submit button while the request ran took the focus from it: give it back.
      if (dialog.open && !dialog.contains(document.activeElement)) restoreFocus(focused);
    }
  });
}

function setDialogError(dialog, message) {
  $("[data-slot=error]", dialog).textContent = message;
}

/**
 * Open a wired dialog as a modal; `onSubmit` runs when its form is submitted. Focus returns to the
 * element that had it when the dialog closes.
 * @param {HTMLDialogElement} dialog
 * @param {() => Promise<boolean|void>} onSubmit
 * @param {HTMLElement} [focus] the field to focus first (default: the first field)
 */
function openDialog(dialog, onSubmit, focus) {
  dialog.opener = document.activeElement;
  dialog.submitHandler = onSubmit;
  setDialogError(dialog, "");
  if (!dialog.open) dialog.showModal();
  (focus ?? $("input, select, textarea, button", dialog))?.focus();
}

function closeDialogs() {
  for (const dialog of document.querySelectorAll("dialog[open]")) dialog.close("navigation");
}

/** The token dialog: save or forget the tab's API token. */
function openTokenDialog() {
  const dialog = $("#token-dialog");
  const input = $("#token-input");
  input.value = "";
  $("[data-slot=token-state]", dialog).textContent = getToken()
    ? "A token is set for this tab. Save another to replace it."
    : "No token is set for this tab.";
  openDialog(dialog, async () => {
    const token = input.value.trim();
    if (!token) {
      setDialogError(dialog, "Paste a token first, or use Forget token.");
      return false;
    }
    setToken(token);
    announce("The API token is saved for this tab.");
    clearAlert();
    refreshView();
  }, input);
}

function updateTokenButton() {
  const button = $("#token-button");
  if (!button) return;
  const set = Boolean(getToken());
  setChildren(button, icon("key"), h("span", { class: "token-label" }, set ? "API token (set)" : "API token"));
  button.classList.toggle("token-set", set);
}

/* ------------------------------------------------------------------------------------------------------------
 * Routing
 * ------------------------------------------------------------------------------------------------------------ */

/**
 * The view a fragment names: `{name: "jobs"|"job"|"new"|"missing", id?, params}`.
 * @param {string} hash
 */
function parseRoute(hash) {
  const raw = hash.replace(/^#/, "");
  const queryAt = raw.indexOf("?");
  const path = queryAt >= 0 ? raw.slice(0, queryAt) : raw;
  const params = new URLSearchParams(queryAt >= 0 ? raw.slice(queryAt + 1) : "");
  if (path === "" || path === "/") return { name: "jobs", params };
  if (path === "/new") return { name: "new", params };
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

const VIEWS = { jobs: jobsView, job: jobView, new: newJobView, missing: missingView };
let currentView = null;
let firstRender = true;

/** Show the view the address names, stopping the one before (its polling and its requests). */
function render() {
  currentView?.stop?.();
  closeDialogs();
  clearAlert();
  const route = parseRoute(location.hash);
  const main = $("#main");
  main.replaceChildren();
  main.removeAttribute("aria-busy");
  currentView = VIEWS[route.name](main, route) ?? null;
  for (const link of document.querySelectorAll("[data-nav]")) {
    const current = link.dataset.nav === route.name;
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (!firstRender) $("h1", main)?.focus({ preventScroll: false });
  firstRender = false;
}

/** Read the current view again now (after the token changed). */
function refreshView() {
  currentView?.refresh?.();
}

/** A heading that takes focus after a navigation (so that a screen reader starts there). */
function heading(...children) {
  return h("h1", { tabindex: "-1" }, ...children);
}

function missingView(main) {
  main.append(
    heading("Nothing here"),
    h("p", {}, "This address names no view of the dashboard. ", h("a", { href: "#/" }, "See all jobs"), "."),
  );
}

/* ------------------------------------------------------------------------------------------------------------
 * Jobs view
 * ------------------------------------------------------------------------------------------------------------ */

const PAGE_SIZE = 50;
const JOB_COLUMNS = ["Job", "Pipeline", "Status", "Phase", "Attempt", "Created", "Updated"];

/**
 * Every job of the caller, newest first; filters for status (the API's) and pipeline (applied here);
 * "Load more" fetches the next page with the API's cursor. Each poll reads again as many pages as are
 * shown, so that new jobs and status changes appear in place.
 * @param {HTMLElement} main
 * @param {{params: URLSearchParams}} route
 */
function jobsView(main, route) {
  const filters = {
    status: STATUSES.includes(route.params.get("status")) ? route.params.get("status") : "",
    pipeline: route.params.get("pipeline") ?? "",
  };
  const view = { jobs: [], pages: 1, cursor: null, loaded: false, known: new Map() };

  const statusSelect = h(
    "select",
    { id: "filter-status", name: "status" },
    h("option", { value: "" }, "Any status"),
    STATUSES.map((status) => h("option", { value: status }, STATUS_LABELS[status])),
  );
  statusSelect.value = filters.status;
  const pipelineSelect = h(
    "select",
    { id: "filter-pipeline", name: "pipeline" },
    h("option", { value: "" }, "Any pipeline"),
  );
  const liveNote = h("p", { class: "live-note muted" }, "Loading…");
  const tbody = h("tbody");
  const table = h(
    "table",
    { class: "jobs-table" },
    h("caption", { class: "visually-hidden" }, "Jobs, newest first"),
    h(
      "thead",
      {},
      h("tr", {}, JOB_COLUMNS.map((name) => h("th", { scope: "col" }, name))),
    ),
    tbody,
  );
  const empty = h("div", { class: "empty", hidden: true });
  const moreButton = h("button", { type: "button", class: "more", hidden: true }, "Load more");

  main.append(
    h(
      "div",
      { class: "view-head" },
      heading("Jobs"),
      h("a", { class: "button primary", href: "#/new" }, "New job"),
    ),
    h(
      "form",
      { class: "filters", role: "search", "aria-label": "Filter jobs", onsubmit: (event) => event.preventDefault() },
      h("div", { class: "field inline" }, h("label", { for: "filter-status" }, "Status"), statusSelect),
      h("div", { class: "field inline" }, h("label", { for: "filter-pipeline" }, "Pipeline"), pipelineSelect),
      liveNote,
    ),
    h("div", { class: "table-wrap" }, table),
    empty,
    h("div", { class: "more-row" }, moreButton),
  );

  /** Keep the filters in the address (without a navigation) so that a reload or a shared link keeps them. */
  function rememberFilters() {
    const params = new URLSearchParams();
    if (filters.status) params.set("status", filters.status);
    if (filters.pipeline) params.set("pipeline", filters.pipeline);
    const query = params.toString();
    history.replaceState(null, "", `#/${query ? `?${query}` : ""}`);
  }

  /** The status filter is the API's: read again from the first page. */
  statusSelect.addEventListener("change", () => {
    filters.status = statusSelect.value;
    rememberFilters();
    view.pages = 1;
    view.loaded = false;
    view.known = new Map();
    poller.now();
  });
  /** The pipeline filter is applied here, to the jobs already read. */
  pipelineSelect.addEventListener("change", () => {
    filters.pipeline = pipelineSelect.value;
    rememberFilters();
    show();
  });

  moreButton.addEventListener("click", async () => {
    view.pages += 1;
    moreButton.disabled = true;
    moreButton.textContent = "Loading…";
    await poller.now();
  });

  /** Read as many pages as are shown, from the first. */
  async function load(signal) {
    const jobs = [];
    let cursor = null;
    let page = 0;
    do {
      const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
      if (filters.status) params.set("status", filters.status);
      if (cursor) params.set("cursor", cursor);
      const data = await api(`jobs?${params}`, { signal });
      jobs.push(...(data?.jobs ?? []));
      cursor = data?.cursor ?? data?.nextCursor ?? null;
      page += 1;
    } while (cursor && page < view.pages);
    view.pages = page;
    view.cursor = cursor;
    announceChanges(jobs);
    const seen = new Set();
    view.jobs = jobs.filter((job) => !seen.has(job.jobId) && seen.add(job.jobId));
    view.loaded = true;
    show();
    fillPipelines();
  }

  /** Announce new jobs and status changes since the last read (not on the first read). */
  function announceChanges(jobs) {
    const messages = [];
    if (view.loaded) {
      const fresh = jobs.filter((job) => !view.known.has(job.jobId));
      if (fresh.length === 1) messages.push(`New job ${fresh[0].jobId}, ${fresh[0].status}.`);
      else if (fresh.length > 1) messages.push(`${fresh.length} new jobs.`);
      const changed = jobs.filter((job) => view.known.has(job.jobId) && view.known.get(job.jobId) !== job.status);
      if (changed.length > 0 && changed.length <= 3) {
        for (const job of changed) messages.push(`Job ${job.jobId} is now ${job.status}.`);
      } else if (changed.length > 3) {
        messages.push(`${changed.length} jobs changed status.`);
      }
    }
    view.known = new Map(jobs.map((job) => [job.jobId, job.status]));
    if (messages.length) announce(messages.join(" "));
  }

  /** The pipelines to filter by: the deployment's, and any a listed job names. */
  async function fillPipelines() {
    let names = view.jobs.map((job) => job.pipeline);
    try {
      names = names.concat((await loadPipelines()).map((pipeline) => pipeline.name));
    } catch {
      /* the filter offers the pipelines of the listed jobs only */
    }
    if (filters.pipeline) names.push(filters.pipeline);
    const wanted = [...new Set(names)].sort();
    const present = [...pipelineSelect.options].slice(1).map((option) => option.value);
    if (jsonEqual(wanted, present)) return;
    setChildren(
      pipelineSelect,
      h("option", { value: "" }, "Any pipeline"),
      wanted.map((name) => h("option", { value: name }, name)),
    );
    pipelineSelect.value = filters.pipeline;
  }

  /** Render the rows that pass the pipeline filter, the empty message and the Load more button. */
  function show() {
    const shown = filters.pipeline ? view.jobs.filter((job) => job.pipeline === filters.pipeline) : view.jobs;
    renderJobRows(tbody, shown);
    table.hidden = shown.length === 0;
    empty.hidden = !view.loaded || shown.length > 0;
    empty.replaceChildren(...emptyMessage());
    moreButton.hidden = !view.cursor;
    moreButton.disabled = false;
    moreButton.textContent = "Load more";
    const count = `${shown.length} job${shown.length === 1 ? "" : "s"}${view.cursor ? " (more to load)" : ""}`;
    liveNote.textContent = `${count} · live, updated ${clockFormat.format(new Date())}`;
  }

  function emptyMessage() {
    if (view.jobs.length === 0 && !filters.status && !view.cursor) {
      return [h("p", {}, "No jobs yet: ", h("a", { href: "#/new" }, "start one"), " and watch it here.")];
    }
    const more = view.cursor ? " among the jobs loaded so far; Load more looks further" : "";
    return [h("p", {}, `No job matches these filters${more}.`)];
  }

  const poller = new Poller(load);
  poller.start();
  return { stop: () => poller.stop(), refresh: () => poller.now() };
}

/**
 * Update the table's rows in place, keyed by job id, and in a row only the cells whose content changed:
 * the link to a job is never rebuilt, so the focus (a keyboard user on a link) survives a poll.
 * @param {HTMLTableSectionElement} tbody
 * @param {object[]} jobs
 */
function renderJobRows(tbody, jobs) {
  const rows = new Map([...tbody.rows].map((row) => [row.dataset.jobId, row]));
  jobs.forEach((job, index) => {
    let row = rows.get(job.jobId);
    rows.delete(job.jobId);
    if (!row) row = h("tr", { dataset: { jobId: job.jobId } });
    const signature = JSON.stringify([
      job.status,
      job.pipeline,
      job.nextPhase,
      job.attempt,
      job.updatedAt,
      job.corrupt,
    ]);
    if (row.dataset.signature !== signature) {
      row.dataset.signature = signature;
      row.dataset.status = job.status;
      updateCells(row, jobCells(job));
    }
    if (tbody.rows[index] !== row) tbody.insertBefore(row, tbody.rows[index] ?? null);
  });
  for (const row of rows.values()) row.remove();
}

/** Put `cells` in `row`, replacing only the cells whose markup differs from the one in their place. */
function updateCells(row, cells) {
  cells.forEach((cell, index) => {
    const present = row.cells[index];
    if (!present) row.append(cell);
    else if (present.innerHTML !== cell.innerHTML) present.replaceWith(cell);
  });
  while (row.cells.length > cells.length) row.lastElementChild.remove();
}

/** The cells of a job's row (each with its column's name, shown as a label on a phone). */
function jobCells(job) {
  const cell = (label, ...children) => h("td", { "data-label": label }, ...children);
  return [
    cell("Job", h("a", { class: "job-link mono", href: `#/jobs/${encodeURIComponent(job.jobId)}` }, job.jobId)),
    cell("Pipeline", job.pipeline),
    cell(
      "Status",
      statusBadge(job.status),
      job.corrupt ? h("span", { class: "badge status-error", title: job.error ?? "" }, "unreadable") : null,
    ),
    cell("Phase", job.nextPhase ? h("span", { class: "mono" }, job.nextPhase) : h("span", { class: "muted" }, "—")),
    cell("Attempt", String(job.attempt ?? 1)),
    cell("Created", timeElement(job.createdAt)),
    cell("Updated", timeElement(job.updatedAt)),
  ];
}

/* ------------------------------------------------------------------------------------------------------------
 * Job view
 * ------------------------------------------------------------------------------------------------------------ */

/**
 * Which action each status allows: `{allowed, reason}` per button (the reason is the disabled button's title).
 *
 *   Retry            resume from the checkpoint: error, cancelled, paused, idle. Not for a complete job (it
 *                    has no checkpoint to resume; Start over runs it again), nor while running (nothing to
 *                    retry) or waiting (the API refuses: send the signal, or start over).
 *   Start over       always (a running job's worker is fenced off); asks for confirmation first.
 *   Rerun from phase always, when the pipeline's phases are known; it offers the job's rerunPhases (not
 *                    the phases the job runs only as a map's items).
 *   Pause            only a running job (the API's rule).
 *   Resume           only a paused job.
 *   Cancel           any job but a complete or cancelled one (the API's rule).
 *   Send signal      only a waiting job.
 *
 * @param {object} job a JobView
 * @param {string[]} phases the pipeline's phases ([] when unknown)
 * @returns {Record<string, {allowed: boolean, reason: string}>}
 */
function actionRules(job, phases) {
  const status = job.status;
  const is = (...statuses) => statuses.includes(status);
  const where = job.nextPhase ? ` at ${quoted(job.nextPhase)}` : "";
  const rule = (allowed, yes, no) => ({ allowed, reason: allowed ? yes : no });
  const retryRefusal = is("complete")
    ? "A complete job has no checkpoint to resume: Start over runs it again"
    : is("waiting")
      ? `The job waits for signal ${quoted(job.waitingFor ?? "")}: send it, or start over`
      : "The job is running: there is nothing to retry";
  return {
    Retry: rule(is("error", "cancelled", "paused", "idle"), `Resumes from the checkpoint${where}`, retryRefusal),
    "Start over": rule(true, "Discards the checkpoint and the log and runs from the first phase", ""),
    "Rerun from phase": rule(
      phases.length > 0,
      "Reruns the job from a phase you pick, with a state you can edit",
      `The pipeline ${quoted(job.pipeline)} is not one this API runs`,
    ),
    Pause: rule(
      is("running"),
      "Stops the job after the phase in flight",
      `Only a running job can be paused; this one is ${status}`,
    ),
    Resume: rule(is("paused"), `Continues the job${where}`, `Only a paused job resumes; this one is ${status}`),
    Cancel: rule(
      !is("complete", "cancelled"),
      "Stops the job; its checkpoint stays, so Retry can resume it",
      `A ${status} job cannot be cancelled`,
    ),
    "Send signal": rule(
      is("waiting"),
      `Delivers the signal ${quoted(job.waitingFor ?? "")} the job waits for`,
      `Only a waiting job takes a signal; this one is ${status}`,
    ),
  };
}

const ACTION_NAMES = ["Retry", "Start over", "Rerun from phase", "Pause", "Resume", "Cancel", "Send signal"];

/** The phase that failed: the last phase record with outcome error, else the checkpoint's next phase. */
function failedPhase(job) {
  const records = job.phases ?? [];
  for (let index = records.length - 1; index >= 0; index -= 1) {
    if (records[index].outcome === "error") return records[index].phase;
  }
  return job.nextPhase ?? null;
}

/**
 * What the banner says about a job: a title and a sentence of detail.
 * @param {object} job a JobView
 * @returns {{title: string, detail: string}}
 */
function bannerText(job, now = Date.now()) {
  const phase = job.nextPhase ? quoted(job.nextPhase) : null;
  const last = (job.phases ?? []).at(-1);
  switch (job.status) {
    case "running": {
      if (job.wakeAt && job.wakeAt > now) {
        const when = formatTime(job.wakeAt);
        if (last?.outcome === "retry") {
          const detail = `Attempt ${job.attempt} of phase ${phase ?? "?"} starts at ${when}.`;
          return { title: "Running: retrying after a backoff", detail };
        }
        return { title: "Running: sleeping", detail: `Phase ${phase ?? "?"} runs at ${when}.` };
      }
      const detail = phase ? `Phase ${phase} is running (attempt ${job.attempt}).` : "The job is starting.";
      return { title: "Running", detail };
    }
    case "waiting": {
      const deadline = job.waitDeadline
        ? `The wait times out at ${formatTime(job.waitDeadline)}.`
        : "The wait has no deadline.";
      const then = phase ? ` The job then continues at ${phase}.` : "";
      return {
        title: `Waiting for signal ${quoted(job.waitingFor ?? "?")}`,
        detail: `${deadline}${then} Send signal delivers it.`,
      };
    }
    case "paused": {
      const detail = phase ? `Stopped before phase ${phase}; Resume continues there.` : "Resume continues the job.";
      return { title: "Paused", detail };
    }
    case "complete": {
      const runs = job.phases?.length ?? 0;
      const took = formatDuration(job.updatedAt - job.createdAt);
      return {
        title: "Complete",
        detail: `Finished at ${formatTime(job.updatedAt)} after ${runs} phase run${runs === 1 ? "" : "s"} in ${took}.`,
      };
    }
    case "error": {
      const failed = failedPhase(job);
      return {
        title: failed ? `Error in phase ${quoted(failed)}` : "Error",
        detail: job.error ?? "The job failed.",
      };
    }
    case "cancelled": {
      const detail = phase ? `Stopped at phase ${phase}; Retry resumes it from there.` : "The job was cancelled.";
      return { title: "Cancelled", detail };
    }
    case "idle":
      return { title: "Idle", detail: "The job is stored but not scheduled; Retry schedules it." };
    default:
      return { title: job.status, detail: "" };
  }
}

/**
 * One job, live: status banner, actions, timeline, log, usage, checkpoint and result.
 * @param {HTMLElement} main
 * @param {{id: string}} route
 */
function jobView(main, route) {
  const jobId = route.id;
  const view = { job: null, log: [], logKey: null, phases: [], schema: null, stateKey: null, busy: false };

  const banner = h(
    "div",
    { class: "banner", role: "status", "aria-atomic": "true", "data-status": "loading" },
    icon("loading"),
    h("div", {}, h("p", { class: "banner-title" }, "Loading the job…"), h("p", { class: "banner-detail" })),
  );
  const buttons = new Map(
    ACTION_NAMES.map((name) => [name, h("button", { type: "button", class: actionClass(name), disabled: true }, name)]),
  );
  const actions = h("div", { class: "actions", role: "group", "aria-label": "Actions" }, [...buttons.values()]);
  const meta = h("p", { class: "job-meta muted" });
  const timeline = h("div", { class: "timeline" });
  const logFilter = h(
    "select",
    { id: "log-filter" },
    h("option", { value: "" }, "Everything"),
    h("option", { value: "annotations" }, "Annotations only"),
    Object.entries(KIND_LABELS).map(([kind, label]) => h("option", { value: kind }, `${label} only`)),
  );
  const logCount = h("span", { class: "count" });
  const logList = h("ol", { class: "log", "aria-label": "Log entries, oldest first" });
  const logBox = h("div", { class: "log-box", tabindex: "0", "aria-label": "Log" }, logList);
  const usage = h("div", { class: "usage" });
  const checkpoint = h("div", { class: "checkpoint" });
  const statePre = h("pre", { class: "json", tabindex: "0" });
  const stateDetails = h("details", { class: "state" }, h("summary", {}, "State"), statePre);
  const result = h("div", { class: "result" });

  main.append(
    heading("Job ", h("span", { class: "mono job-id" }, jobId)),
    meta,
    banner,
    actions,
    h(
      "div",
      { class: "job-grid" },
      h(
        "div",
        { class: "job-main" },
        h(
          "section",
          { class: "panel timeline-panel", "aria-labelledby": "timeline-title" },
          h("h2", { id: "timeline-title" }, "Timeline"),
          timeline,
        ),
        h(
          "section",
          { class: "panel log-panel", "aria-labelledby": "log-title" },
          h(
            "div",
            { class: "panel-head" },
            h("h2", { id: "log-title" }, "Log ", logCount),
            h("div", { class: "field inline" }, h("label", { for: "log-filter" }, "Show"), logFilter),
          ),
          logBox,
        ),
      ),
      h(
        "div",
        { class: "job-side" },
        h(
          "section",
          { class: "panel usage-panel", "aria-labelledby": "usage-title" },
          h("h2", { id: "usage-title" }, "Usage"),
          usage,
        ),
        h(
          "section",
          { class: "panel checkpoint-panel", "aria-labelledby": "checkpoint-title" },
          h("h2", { id: "checkpoint-title" }, "Checkpoint"),
          checkpoint,
          stateDetails,
          h("h3", {}, "Result"),
          result,
        ),
      ),
    ),
  );

  /** Read the job; its log and state only when it changed (every write advances its sequence). */
  async function load(signal) {
    let job;
    try {
      job = await api(jobPath(jobId), { signal });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        notFound(error);
        return;
      }
      throw error;
    }
    const key = `${job.sequence}:${job.updatedAt}:${job.status}`;
    if (key !== view.logKey) {
      view.log = await readLog(job, signal);
      view.logKey = key;
    }
    if (!view.phases.length || view.job?.pipeline !== job.pipeline) await readPipeline(job);
    view.job = job;
    show();
    if (stateDetails.open && view.stateKey !== key) await readState(signal, key);
  }

  async function readLog(job, signal) {
    try {
      return (await api(`${jobPath(jobId)}/log`, { signal }))?.entries ?? [];
    } catch (error) {
      if (error instanceof ApiError && error.status === 404 && Array.isArray(job.log)) return job.log;
      throw error;
    }
  }

  async function readPipeline(job) {
    const pipeline = await findPipeline(job.pipeline);
    view.schema = pipeline?.stateSchema ?? null;
    const seen = [...(job.phases ?? []).map((record) => record.phase), job.nextPhase].filter(Boolean);
    view.phases = pipeline?.phases?.length ? pipeline.phases : [...new Set(seen)];
  }

  /** The checkpoint's state, fetched only while its `<details>` is open (a state can be large). */
  async function readState(signal, key = view.logKey) {
    statePre.setAttribute("aria-busy", "true");
    try {
      const full = await api(`${jobPath(jobId)}?includeState=true`, { signal });
      view.stateKey = key;
      statePre.textContent = full.state == null ? "No state: the job has no checkpoint." : prettyJson(full.state);
      return full.state;
    } finally {
      statePre.removeAttribute("aria-busy");
    }
  }

  stateDetails.addEventListener("toggle", () => {
    if (stateDetails.open && view.stateKey !== view.logKey) {
      statePre.textContent = "Loading the state…";
      readState(poller.controller.signal).catch((error) => reportError(error));
    }
  });
  logFilter.addEventListener("change", () => renderLog(logList, view.log, logFilter.value, true));

  function notFound(error) {
    poller.stop();
    banner.dataset.status = "missing";
    banner.replaceChildren(
      icon("cancelled"),
      h("div", {}, h("p", { class: "banner-title" }, "No such job"), h("p", { class: "banner-detail" }, error.message)),
    );
    for (const button of buttons.values()) button.disabled = true;
  }

  /** Render everything from the last read. */
  function show() {
    const job = view.job;
    if (!job) return;
    meta.replaceChildren(
      "Pipeline ",
      h("strong", {}, job.pipeline),
      " · created ",
      timeElement(job.createdAt),
      " · updated ",
      timeElement(job.updatedAt),
      ` · ${job.sequence} write${job.sequence === 1 ? "" : "s"}`,
    );
    renderBanner(banner, job);
    if (!view.busy) renderActions(buttons, job, view.phases);
    renderTimeline(timeline, job, view.log);
    renderLog(logList, view.log, logFilter.value, false, ["running", "waiting"].includes(job.status));
    logCount.textContent = `(${view.log.length})`;
    renderUsage(usage, job.usage ?? {});
    renderCheckpoint(checkpoint, job);
    renderResult(result, job);
  }

  /**
   * Send an action's request; on success show the answered job, announce it and read again now.
   * @param {string} name the action, for the announcement
   * @param {() => Promise<any>} send
   */
  async function act(name, send) {
    const focused = actions.contains(document.activeElement) ? document.activeElement : null;
    view.busy = true;
    actions.setAttribute("aria-busy", "true");
    for (const button of buttons.values()) button.disabled = true;
    clearAlert();
    try {
      const answered = await send();
      if (answered?.jobId === jobId) {
        view.job = { ...view.job, ...answered };
        view.logKey = null;
      }
      announce(`${name}: the job is now ${answered?.status ?? "updated"}.`);
      return answered;
    } finally {
      view.busy = false;
      actions.removeAttribute("aria-busy");
      show();
      // The buttons were disabled while the request ran, the one pressed with them: keep the keyboard here.
      if (focused && focusLost()) restoreFocus(focused);
      poller.now();
    }
  }

  const post = (path, body) => api(`${jobPath(jobId)}/${path}`, { method: "POST", body });
  const onAction = {
    Retry: () => act("Retry", () => post("retry", { mode: "resume" })),
    Resume: () => act("Resume", () => post("retry", { mode: "resume" })),
    Pause: () => act("Pause", () => post("pause")),
    Cancel: () => act("Cancel", () => post("cancel")),
    "Start over": () => openStartOver(view, (send) => act("Start over", send), post),
    "Rerun from phase": () => openRerun(view, readState, (send) => act("Rerun from phase", send), post),
    "Send signal": () => openSignal(view, (send) => act("Send signal", send), jobId),
  };
  for (const [name, button] of buttons) {
    button.addEventListener("click", () => {
      const run = onAction[name]();
      if (run instanceof Promise) run.catch((error) => reportError(error));
    });
  }

  const poller = new Poller(load);
  poller.start();
  return { stop: () => poller.stop(), refresh: () => poller.now() };
}

function actionClass(name) {
  if (name === "Start over" || name === "Cancel") return "danger-outline";
  if (name === "Retry") return "primary";
  return "";
}

/** Update the banner only when its text changes (each change is announced: it is role="status"). */
function renderBanner(banner, job) {
  const { title, detail } = bannerText(job);
  if (banner.dataset.status === job.status && banner.dataset.text === title + detail) return;
  banner.dataset.status = job.status;
  banner.dataset.text = title + detail;
  banner.replaceChildren(
    icon(job.status),
    h("div", {}, h("p", { class: "banner-title" }, title), h("p", { class: "banner-detail" }, detail)),
  );
}

/**
 * Enable the buttons the job's status allows; a disabled one says why in its title. A focused button that
 * the new status disables hands the focus to its nearest enabled neighbour.
 */
function renderActions(buttons, job, phases) {
  const rules = actionRules(job, phases);
  const focused = [...buttons.values()].find((button) => button === document.activeElement) ?? null;
  for (const [name, button] of buttons) {
    const { allowed, reason } = rules[name];
    button.disabled = !allowed;
    button.title = reason;
  }
  if (focused?.disabled) restoreFocus(focused);
}

/** A log line written when a job is started again at a phase (a start, resume, start over or rerun). */
const RESTART_ENTRY = /^(Job (started|retried|rerun)|Rerun from phase|Resumed)/;

/**
 * The timeline: one bar per phase run (start and length on a shared time axis, coloured and labelled by
 * outcome), the backoff before a retried attempt as a dashed gap, and the phase in flight (or its wait)
 * growing to now while the job runs.
 * @param {HTMLElement} container
 * @param {object} job a JobView
 */
function renderTimeline(container, job, log = [], now = Date.now()) {
  const all = job.phases ?? [];
  const records = all.slice(-MAX_TIMELINE_ROWS);
  const live = currentRun(job, log, now);
  if (records.length === 0 && !live) {
    container.replaceChildren(h("p", { class: "muted" }, "No phase has run yet."));
    return;
  }
  const starts = records.map((record) => record.startedAt).concat(live ? [live.start] : []);
  const ends = records.map((record) => record.endedAt).concat(live ? [live.end] : []);
  const origin = Math.min(...starts, job.createdAt ?? Infinity);
  const span = Math.max(Math.max(...ends) - origin, 1);
  const at = (ms) => `${(((ms - origin) / span) * 100).toFixed(3)}%`;
  const width = (ms) => `${Math.max((ms / span) * 100, 0.4).toFixed(3)}%`;

  const rows = records.map((record, index) => {
    const previous = findPrevious(records, index);
    const delay = previous ? record.startedAt - previous.endedAt : 0;
    const duration = record.endedAt - record.startedAt;
    const outcome = OUTCOME_LABELS[record.outcome] ?? record.outcome;
    const then = record.outcome === "next" && record.nextPhase ? ` → ${record.nextPhase}` : "";
    const parts = [`${formatDuration(duration)}`, `${outcome}${then}`];
    if (delay > 0) parts.push(`after ${formatDuration(delay)} backoff`);
    return timelineRow({
      phase: record.phase,
      attempt: record.attempt,
      outcome: record.outcome,
      summary: parts.join(" · "),
      title: [
        `${record.phase}, attempt ${record.attempt}: started ${fullFormat.format(new Date(record.startedAt))}`,
        ...parts,
        record.codeVersion ? `code ${record.codeVersion}` : null,
      ]
        .filter(Boolean)
        .join(", "),
      error: record.error,
      bar: { left: at(record.startedAt), width: width(duration) },
      gap: delay > 0 ? { left: at(previous.endedAt), width: width(delay) } : null,
    });
  });
  if (live) rows.push(timelineRow(live.row(at, width)));

  setChildren(
    container,
    all.length > records.length
      ? h("p", { class: "muted" }, `The last ${records.length} of ${all.length} phase runs.`)
      : null,
    h("ol", { class: "timeline-rows" }, rows),
    h(
      "div",
      { class: "timeline-axis muted", "aria-hidden": "true" },
      h("span", {}, formatTime(origin)),
      h("span", {}, `${formatDuration(span)} in all`),
    ),
  );
}

/** The earlier run of the same phase that a retried attempt follows (for the backoff between them). */
function findPrevious(records, index) {
  const record = records[index];
  if (record.attempt <= 1) return null;
  for (let before = index - 1; before >= 0; before -= 1) {
    if (records[before].phase === record.phase) return records[before].outcome === "retry" ? records[before] : null;
  }
  return null;
}

/**
 * The run in flight of a running job, for the timeline: its phase growing to now, or the backoff or sleep
 * it waits out (until `wakeAt`), or the wait of a waiting job. Null when nothing is in flight.
 */
function currentRun(job, log, now) {
  if (!["running", "waiting"].includes(job.status) || !job.nextPhase) return null;
  const lastEnd = (job.phases ?? []).at(-1)?.endedAt ?? job.createdAt ?? now;
  // The run in flight began when the last phase run ended, or later when the job was started again (a resume,
  // a rerun: the log says so). Not at the checkpoint's time: a phase's own saves move that while it runs.
  const restarted = log
    .filter((entry) => entry.timestamp > lastEnd && RESTART_ENTRY.test(entry.message ?? ""))
    .map((entry) => entry.timestamp);
  const start = Math.max(lastEnd, ...restarted);
  const waitingOut = job.status === "running" && job.wakeAt && job.wakeAt > now;
  if (job.status === "waiting") {
    return {
      start,
      end: now,
      row: (at, width) => ({
        phase: job.nextPhase,
        attempt: job.attempt,
        outcome: "waiting",
        summary: `waiting for ${quoted(job.waitingFor ?? "?")} · ${formatDuration(now - start)} so far`,
        title: `Waiting for signal ${job.waitingFor ?? "?"} since ${fullFormat.format(new Date(start))}`,
        gap: { left: at(start), width: width(now - start) },
      }),
    };
  }
  if (waitingOut) {
    return {
      start,
      end: job.wakeAt,
      row: (at, width) => ({
        phase: job.nextPhase,
        attempt: job.attempt,
        outcome: "pending",
        summary: `starts at ${formatTime(job.wakeAt)} (in ${formatDuration(job.wakeAt - now)})`,
        title: `Attempt ${job.attempt} of ${job.nextPhase} waits until ${fullFormat.format(new Date(job.wakeAt))}`,
        gap: { left: at(start), width: width(job.wakeAt - start) },
      }),
    };
  }
  return {
    start,
    end: now,
    row: (at, width) => ({
      phase: job.nextPhase,
      attempt: job.attempt,
      outcome: "running",
      summary: `running · ${formatDuration(now - start)} so far`,
      title: `${job.nextPhase}, attempt ${job.attempt}: running since ${fullFormat.format(new Date(start))}`,
      bar: { left: at(start), width: width(now - start) },
    }),
  };
}

/** One row of the timeline: the phase and attempt, the track with its bar (and gap), the summary. */
function timelineRow({ phase, attempt, outcome, summary, title, error, bar, gap }) {
  const track = h("div", { class: "track", "aria-hidden": "true" });
  const place = (element, { left, width }) => {
    // Set through the CSSOM, not a style attribute: a strict Content-Security-Policy allows it.
    element.style.left = left;
    element.style.width = width;
    return element;
  };
  if (gap) track.append(place(h("span", { class: "gap" }), gap));
  if (bar) track.append(place(h("span", { class: `bar outcome-${outcome}` }), bar));
  return h(
    "li",
    { class: `timeline-row outcome-${outcome}`, title },
    h(
      "div",
      { class: "timeline-label" },
      h("span", { class: "mono phase-name" }, phase),
      attempt > 1 ? h("span", { class: "attempt" }, `attempt ${attempt}`) : null,
    ),
    track,
    h("div", { class: "timeline-summary" }, summary),
    error ? h("p", { class: "timeline-error" }, error) : null,
  );
}

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
function renderLog(list, entries, filter, force = false, live = false) {
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

/** The usage counters as a definition list. */
function renderUsage(container, usage) {
  const entries = Object.entries(usage).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) {
    container.replaceChildren(h("p", { class: "muted" }, "No usage recorded."));
    return;
  }
  container.replaceChildren(
    h(
      "dl",
      { class: "counters" },
      entries.map(([name, value]) => h("div", {}, h("dt", {}, name), h("dd", {}, numberFormat.format(value)))),
    ),
  );
}

/** The checkpoint's facts: next phase, when it was written, sequence, attempt, expiry. */
function renderCheckpoint(container, job) {
  const row = (term, ...value) => h("div", {}, h("dt", {}, term), h("dd", {}, ...value));
  const hasCheckpoint = job.nextPhase != null;
  setChildren(
    container,
    h(
      "dl",
      { class: "facts" },
      row(
        "Next phase",
        hasCheckpoint ? h("span", { class: "mono" }, job.nextPhase) : h("span", { class: "muted" }, "none"),
      ),
      hasCheckpoint ? row("Written", timeElement(job.checkpointCreatedAt)) : null,
      hasCheckpoint ? row("Attempt", String(job.attempt ?? 1)) : null,
      job.waitingFor ? row("Waits for", h("span", { class: "mono" }, job.waitingFor)) : null,
      job.wakeAt ? row("Wakes at", timeElement(job.wakeAt)) : null,
      row("Job expires", timeElement(job.expiresAt != null ? job.expiresAt * 1000 : null)),
    ),
    hasCheckpoint
      ? null
      : h(
          "p",
          { class: "muted note" },
          job.status === "complete" ? "No checkpoint: a complete job keeps none." : "No checkpoint.",
        ),
  );
}

function renderResult(container, job) {
  const text = job.result == null ? null : prettyJson(job.result);
  if (container.dataset.text === String(text)) return;
  container.dataset.text = String(text);
  container.replaceChildren(
    text == null ? h("p", { class: "muted" }, "No result yet.") : h("pre", { class: "json", tabindex: "0" }, text),
  );
}

/* ------------------------------------------------------------------------------------------------------------
 * Job actions with dialogs
 * ------------------------------------------------------------------------------------------------------------ */

/** Start over: say what is lost, then send {"mode": "full"}. */
function openStartOver(view, act, post) {
  const job = view.job;
  const dialog = $("#full-dialog");
  const slot = (name) => $(`[data-slot=${name}]`, dialog);
  slot("job").textContent = job.jobId;
  slot("first").textContent = view.phases[0] ?? "the first phase";
  const log = `its log (${view.log.length} entr${view.log.length === 1 ? "y" : "ies"})`;
  slot("lost").textContent = job.nextPhase
    ? `its checkpoint (at ${quoted(job.nextPhase)}, with its state) and ${log}`
    : log;
  openDialog(dialog, () => act(() => post("retry", { mode: "full" })), $("[data-close]", dialog));
}

/**
 * Rerun from phase: pick a phase and edit the state (prefilled with the checkpoint's), checked against the
 * pipeline's schema before sending {"mode": "from", "phase", "state"}; an empty state lets the API use the
 * state the job had when it last entered that phase.
 */
async function openRerun(view, readState, act, post) {
  const job = view.job;
  const dialog = $("#rerun-dialog");
  const select = $("#rerun-phase");
  const field = $("#rerun-state");
  const errors = $("#rerun-state-errors");
  const preferred = job.status === "error" ? failedPhase(job) : job.nextPhase;
  // the API leaves out the phases this job runs only as a map's items: a rerun from one is refused
  const phases = Array.isArray(job.rerunPhases) ? job.rerunPhases : view.phases;
  select.replaceChildren(...phases.map((phase) => h("option", { value: phase }, phase)));
  select.value = phases.includes(preferred) ? preferred : phases[0];
  showFieldErrors(field, errors, []);
  field.value = "";
  field.placeholder = "Loading the checkpoint's state…";
  openDialog(
    dialog,
    async () => {
      const checked = checkJsonField(field, errors, view.schema);
      if (!checked.ok) {
        field.focus();
        return false;
      }
      const body = { mode: "from", phase: select.value };
      if (checked.state !== undefined) body.state = checked.state;
      await act(() => post("retry", body));
    },
    select,
  );
  try {
    const state = await readState();
    if (dialog.open && !field.value) field.value = state == null ? "" : prettyJson(state);
  } finally {
    field.placeholder = "";
  }
}

/** Send signal: a name (prefilled with what the job waits for) and a JSON payload (empty: none). */
function openSignal(view, act, jobId) {
  const dialog = $("#signal-dialog");
  const name = $("#signal-name");
  const payload = $("#signal-payload");
  const nameErrors = $("#signal-name-errors");
  const payloadErrors = $("#signal-payload-errors");
  name.value = view.job.waitingFor ?? "";
  payload.value = "";
  showFieldErrors(name, nameErrors, []);
  showFieldErrors(payload, payloadErrors, []);
  openDialog(
    dialog,
    async () => {
      const signalName = name.value.trim();
      const nameOk = SIGNAL_NAME_PATTERN.test(signalName);
      showFieldErrors(name, nameErrors, nameOk ? [] : [SIGNAL_NAME_RULE]);
      const checked = checkJsonField(payload, payloadErrors, null, "payload");
      if (!nameOk || !checked.ok) {
        (nameOk ? payload : name).focus();
        return false;
      }
      const path = `${jobPath(jobId)}/signals/${encodeURIComponent(signalName)}`;
      await act(() => api(path, { method: "POST", body: checked.state }));
    },
    view.job.waitingFor ? payload : name,
  );
}

/* ------------------------------------------------------------------------------------------------------------
 * Start a job
 * ------------------------------------------------------------------------------------------------------------ */

/**
 * Start a job: pick a pipeline, optionally name the job, edit its initial state as JSON (prefilled with
 * the pipeline's sample, checked against its state schema); on success go to the new job's view.
 * @param {HTMLElement} main
 * @param {{params: URLSearchParams}} route `?pipeline=NAME` preselects one
 */
function newJobView(main, route) {
  let pipelines = [];
  let stopped = false;
  const form = h("form", { class: "start-form panel", novalidate: true });
  main.append(heading("Start a job"), form);
  form.append(h("p", { class: "muted" }, "Loading the pipelines…"));

  loadPipelines()
    .then((found) => {
      pipelines = found;
      if (!stopped) build();
    })
    .catch((error) => {
      reportError(error);
      if (!stopped) build();
    });

  function build() {
    const pipelineField = pipelines.length
      ? h(
          "select",
          { id: "new-pipeline", name: "pipeline", required: true },
          pipelines.map((pipeline) => h("option", { value: pipeline.name }, pipeline.name)),
        )
      : h("input", { id: "new-pipeline", name: "pipeline", type: "text", required: true, autocomplete: "off" });
    const pipelineErrors = h("ul", { class: "field-errors", id: "new-pipeline-errors" });
    pipelineField.setAttribute("aria-describedby", "new-pipeline-hint new-pipeline-errors");
    const phasesHint = h("p", { class: "hint", id: "new-pipeline-hint" });
    const jobIdField = h("input", {
      id: "new-job-id",
      name: "jobId",
      type: "text",
      autocomplete: "off",
      spellcheck: "false",
      autocapitalize: "off",
      maxlength: "128",
      "aria-describedby": "new-job-id-hint new-job-id-errors",
    });
    const jobIdErrors = h("ul", { class: "field-errors", id: "new-job-id-errors" });
    const stateField = h("textarea", {
      id: "new-state",
      name: "state",
      rows: "14",
      spellcheck: "false",
      autocapitalize: "off",
      autocomplete: "off",
      "aria-describedby": "new-state-hint new-state-errors",
    });
    const stateErrors = h("ul", { class: "field-errors", id: "new-state-errors" });
    const stateHint = h("p", { class: "hint", id: "new-state-hint" });
    const schemaPre = h("pre", { class: "json", tabindex: "0" });
    const submit = h("button", { type: "submit", class: "primary" }, "Start job");
    let submitted = false;

    const chosen = () => pipelines.find((pipeline) => pipeline.name === pipelineField.value) ?? null;

    /** Show the chosen pipeline's phases, schema and sample. */
    function choose() {
      const pipeline = chosen();
      phasesHint.textContent = pipeline
        ? `Phases: ${pipeline.phases.join(" → ") || "none"}`
        : "The name of a pipeline this API runs.";
      const schema = pipeline?.stateSchema ?? {};
      schemaPre.textContent = Object.keys(schema).length
        ? prettyJson(schema)
        : "Any JSON (the pipeline declares no state model).";
      stateField.value = sampleText(pipeline);
      stateHint.textContent = pipeline?.sample != null
        ? "Prefilled with the pipeline's sample. Leave it empty to start from the pipeline's empty state."
        : "Leave it empty to start from the pipeline's empty state.";
      showFieldErrors(stateField, stateErrors, []);
    }

    form.replaceChildren(
      h(
        "div",
        { class: "field" },
        h("label", { for: "new-pipeline" }, "Pipeline"),
        pipelineField,
        phasesHint,
        pipelineErrors,
      ),
      h(
        "div",
        { class: "field" },
        h("label", { for: "new-job-id" }, "Job id (optional)"),
        jobIdField,
        h(
          "p",
          { class: "hint", id: "new-job-id-hint" },
          "Leave it empty for a new UUID. 1-128 letters, digits, '.', '_' or '-'.",
        ),
        jobIdErrors,
      ),
      h(
        "div",
        { class: "field" },
        h("label", { for: "new-state" }, "Initial state (JSON)"),
        stateHint,
        stateField,
        stateErrors,
        h(
          "div",
          { class: "row" },
          h("button", { type: "button", class: "quiet small", onclick: formatState }, "Format JSON"),
          h("button", { type: "button", class: "quiet small", onclick: useSample }, "Use the sample"),
        ),
      ),
      h("details", { class: "schema" }, h("summary", {}, "State schema"), schemaPre),
      h("div", { class: "form-actions" }, submit),
    );
    if (pipelines.length === 0) {
      const note = "The API lists no pipelines (GET /pipelines): type the pipeline's name.";
      form.prepend(h("p", { class: "muted" }, note));
    }

    function formatState() {
      formatJsonField(stateField);
    }

    function useSample() {
      stateField.value = sampleText(chosen());
      if (submitted) validate();
    }

    /** Check every field; show the errors under each. */
    function validate() {
      const pipelineName = pipelineField.value.trim();
      showFieldErrors(pipelineField, pipelineErrors, pipelineName ? [] : ["Choose a pipeline."]);
      const jobId = jobIdField.value.trim();
      const jobIdOk = !jobId || JOB_ID_PATTERN.test(jobId);
      showFieldErrors(jobIdField, jobIdErrors, jobIdOk ? [] : [JOB_ID_RULE]);
      const checked = checkJsonField(stateField, stateErrors, chosen()?.stateSchema ?? null);
      const fields = [pipelineField, jobIdField, stateField];
      const firstBad = fields.find((field) => field.getAttribute("aria-invalid") === "true");
      return { ok: !firstBad, firstBad, pipelineName, jobId, state: checked.state };
    }

    pipelineField.addEventListener("change", choose);
    stateField.addEventListener("input", () => submitted && validate());
    jobIdField.addEventListener("input", () => submitted && validate());

    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      submitted = true;
      const checked = validate();
      if (!checked.ok) {
        checked.firstBad.focus();
        return;
      }
      const body = { pipeline: checked.pipelineName };
      if (checked.jobId) body.jobId = checked.jobId;
      if (checked.state !== undefined) body.state = checked.state;
      submit.disabled = true;
      form.setAttribute("aria-busy", "true");
      clearAlert();
      $(".note", form)?.remove();
      try {
        const job = await api("jobs", { method: "POST", body });
        announce(`Job ${job.jobId} started.`);
        location.hash = `#/jobs/${encodeURIComponent(job.jobId)}`;
      } catch (error) {
        reportError(error);
        const existing = error?.body?.job?.jobId;
        if (existing) {
          const link = h("a", { href: `#/jobs/${encodeURIComponent(existing)}` }, `see job ${existing}`);
          form.append(h("p", { class: "note" }, "That job already exists: ", link, "."));
        }
      } finally {
        submit.disabled = false;
        form.removeAttribute("aria-busy");
      }
    });

    const wanted = route.params.get("pipeline");
    if (wanted) pipelineField.value = wanted;
    if (!pipelineField.value && pipelines.length) pipelineField.value = pipelines[0].name;
    choose();
  }

  return {
    stop: () => {
      stopped = true;
    },
  };
}

/** The text a pipeline's state field starts with: its sample, else `{}` for an object state, else empty. */
function sampleText(pipeline) {
  if (pipeline?.sample != null) return prettyJson(pipeline.sample);
  return pipeline?.stateSchema?.type === "object" ? "{}" : "";
}

/* ------------------------------------------------------------------------------------------------------------
 * Start
 * ------------------------------------------------------------------------------------------------------------ */

function start() {
  takeTokenFromFragment();
  updateTokenButton();
  for (const dialog of document.querySelectorAll("dialog")) setupDialog(dialog);
  $("#token-button").addEventListener("click", openTokenDialog);
  $("[data-forget]", $("#token-dialog")).addEventListener("click", () => {
    setToken(null);
    $("#token-dialog").close("forget");
    announce("The API token is forgotten.");
  });
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
