/**
 * The page's small stroked icons, and the status pill that pairs one with its word.
 */

import { h } from "./dom.js";
import { STATUS_LABELS } from "./labels.js";

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
  action: [["circle", { cx: 12, cy: 8, r: 3.5 }], ["path", { d: "M5 20c.8-4 3.6-6 7-6s6.2 2 7 6" }]],
  key: [["circle", { cx: 8, cy: 15, r: 4 }], ["path", { d: "M11 12l8-8M16 7l2.5 2.5M14 9l2 2" }]],
};

/**
 * A small stroked SVG icon from ICONS (decorative: hidden from assistive technology).
 * @param {string} name
 * @returns {SVGSVGElement}
 */
export function icon(name) {
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
export function statusBadge(status) {
  return h("span", { class: `badge status-${status}` }, icon(status), STATUS_LABELS[status] ?? status);
}
