/**
 * Building and updating the page: elements from props and children, lookups, the focus after an action.
 */

/**
 * Create an element. `props`: attributes, plus `class`, `text`, `dataset` and `on<event>` listeners;
 * null, undefined and false are skipped, true sets an empty attribute. Children are nodes or text.
 * @param {string} tag
 * @param {Record<string, any>} [props]
 * @param {...any} children
 * @returns {HTMLElement}
 */
export function h(tag, props = {}, ...children) {
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
export function appendAll(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child == null || child === false) continue;
    parent.append(child instanceof Node ? child : String(child));
  }
}

/** Replace an element's children (nodes or text; null, undefined and false skipped). */
export function setChildren(parent, ...children) {
  parent.replaceChildren();
  appendAll(parent, children);
}

export const $ = (selector, root = document) => root.querySelector(selector);

/**
 * Give the focus back to `element` after an action; when it is gone or disabled (a button the job's new
 * status no longer allows), to the nearest enabled button of its group, else the view's heading. A disabled
 * control cannot hold the focus: without this a keyboard user would be sent back to the top of the page.
 * @param {Element|null} element
 */
export function restoreFocus(element) {
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
export function focusLost() {
  const active = document.activeElement;
  return active == null || active === document.body || active.disabled === true;
}

/** A heading that takes focus after a navigation (so that a screen reader starts there). */
export function heading(...children) {
  return h("h1", { tabindex: "-1" }, ...children);
}
