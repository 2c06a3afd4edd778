/**
 * The API token of a JWT-auth API: kept in this tab's sessionStorage only, taken from a login
 * flow's fragment (`#token=...`), shown on the top bar's button.
 */

import { $, h, setChildren } from "./dom.js";
import { icon } from "./icons.js";

const TOKEN_KEY = "cairn.dashboard.token";

/** The user's API token for this tab, or null. */
export function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || null;
  } catch {
    return null;
  }
}

/** Keep (or, with an empty value, forget) the API token for this tab. */
export function setToken(token) {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage refused (private mode): the token lasts as long as nothing, which is safe */
  }
  updateTokenButton();
}

/** Whether the fragment carries a token: `#token=...`, or an OAuth implicit-flow answer (`#access_token=...`). */
export const TOKEN_FRAGMENT = /^#(token|access_token|id_token)=/;

/**
 * Take a token from the fragment (a link from a login flow: `#token=...`, or a sign-in page's redirect
 * `#id_token=...&access_token=...`), keep it, and remove it from the address bar and the history entry so
 * that it is neither shown nor bookmarked.
 */
export function takeTokenFromFragment() {
  if (!TOKEN_FRAGMENT.test(location.hash)) return;
  const fields = new URLSearchParams(location.hash.slice(1));
  const token = fields.get("token") || fields.get("access_token") || fields.get("id_token");
  if (token) setToken(token);
  history.replaceState(null, "", `${location.pathname}${location.search}#/`);
}

/** Show on the top bar's button whether this tab has a token. */
export function updateTokenButton() {
  const button = $("#token-button");
  if (!button) return;
  const set = Boolean(getToken());
  setChildren(button, icon("key"), h("span", { class: "token-label" }, set ? "API token (set)" : "API token"));
  button.classList.toggle("token-set", set);
}
