/**
 * The jobs API on the page's own origin: calls by relative URL with the tab's token, its refusals as
 * ApiError, and the deployment's pipelines (read once per page load).
 */

import { recordAnswer, recordRead } from "./connection.js";
import { getToken } from "./token.js";

/** Answers that say the API behind the page is out of reach (the dashboard's proxy, API Gateway). */
const UNREACHABLE_STATUSES = new Set([502, 503, 504]);

/** What a gateway's reply (not the API's: no `error` in its body) says, by status. */
const GATEWAY_REPLIES = {
  500: "The API failed before it could answer",
  502: "The API's function failed or could not be reached",
  503: "The API timed out or is unavailable",
  504: "The API timed out",
};

/** An API error: the HTTP status (0: no answer), the API's code and its message. */
export class ApiError extends Error {
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
export async function api(path, { method = "GET", body, signal } = {}) {
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
    recordAnswer(false);
    throw new ApiError(0, "unreachable", "The API did not answer: is the server still running?");
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  const error = response.ok ? null : apiErrorOf(response, data, method);
  if (UNREACHABLE_STATUSES.has(response.status)) recordAnswer(false, error.message);
  else if (method === "GET") recordRead(response.status < 500, error?.message); // a 4xx: the API answered the read
  else recordAnswer(true);
  if (error) throw error;
  return data;
}

/**
 * The ApiError for a refused call: the API's own message; for a gateway's reply (a 5xx without the API's
 * `error`: a timeout, a function that failed) what it means for the call, never a bare "Internal Server Error".
 */
function apiErrorOf(response, data, method) {
  const detail = data?.error;
  const status = `${response.status} ${response.statusText}`.trim();
  let message = detail?.message ?? data?.message ?? status;
  if (!detail && response.status >= 500) message = gatewayMessage(response.status, data?.message ?? status, method);
  if (response.status === 401) {
    message += getToken() ? " (the API refused the token: set another with API token)" : " (set one with API token)";
  }
  return new ApiError(response.status, detail?.code ?? `http_${response.status}`, message, data);
}

/** "The API timed out; the action may still have happened — refresh to see (504: Endpoint request timed out)". */
function gatewayMessage(status, said, method) {
  const what = GATEWAY_REPLIES[status] ?? "The API failed before it could answer";
  const then = method === "GET" ? "the page tries again" : "the action may still have happened — refresh to see";
  return `${what}; ${then} (${status}: ${said})`;
}

export const jobPath = (jobId) => `jobs/${encodeURIComponent(jobId)}`;

/**
 * Cancel a job: its view. One already cancelled (the API's 409 `already_cancelled`, a cancel sent again, say) is
 * the job as asked: its view from the error body, not a failure.
 * @param {string} jobId
 */
export async function cancelJob(jobId) {
  try {
    return await api(`${jobPath(jobId)}/cancel`, { method: "POST" });
  } catch (error) {
    if (error instanceof ApiError && error.code === "already_cancelled" && error.body?.job) return error.body.job;
    throw error;
  }
}

let pipelinesPromise = null;

/**
 * The deployment's pipelines (`GET /pipelines`), read once per page load; a failed read is tried again
 * by the next caller. Resolves to [] when the API has no such route.
 * @returns {Promise<Array<{name: string, phases: string[], stateSchema: object, sample: any}>>}
 */
export function loadPipelines() {
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
export async function findPipeline(name) {
  try {
    return (await loadPipelines()).find((pipeline) => pipeline.name === name) ?? null;
  } catch {
    return null;
  }
}
