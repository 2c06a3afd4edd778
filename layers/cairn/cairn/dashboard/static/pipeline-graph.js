/**
 * The pipeline's graph in the job view: its phases in order (each with how often this job ran it, the one it
 * is at marked), and the transitions this job's phase runs took, counted: a retry loops on its phase, a
 * rejection that goes back to an earlier phase is an arrow back.
 */

import { h, setChildren } from "./dom.js";

/** What a phase run's outcome says about where the job went next. */
const ARROWS = {
  next: (record) => record.nextPhase,
  retry: (record) => record.phase,
  sleep: (record) => record.nextPhase,
  wait: (record) => record.nextPhase,
  map: (record) => record.nextPhase,
};

/**
 * The transitions the records show, in the order first seen: `{from, to, kind, count}`.
 * @param {object[]} records the job's phase records, oldest first
 */
export function transitionsSeen(records) {
  const seen = new Map();
  for (const record of records) {
    const to = ARROWS[record.outcome]?.(record);
    if (!to) continue;
    const key = `${record.phase}\u0000${to}`;
    const kind = to === record.phase ? "retry" : record.outcome;
    const known = seen.get(key) ?? { from: record.phase, to, kind, count: 0 };
    known.count += 1;
    seen.set(key, known);
  }
  return [...seen.values()];
}

/**
 * Render the graph: the pipeline's `phases` in order, with the job's `records` and where it is now (`current`).
 * Phases a record names that the pipeline no longer has (renamed, map items) are added after its own.
 */
export function renderPipelineGraph(container, { phases, records, current }) {
  const runs = new Map();
  for (const record of records) runs.set(record.phase, (runs.get(record.phase) ?? 0) + 1);
  const names = [...phases, ...[...runs.keys()].filter((name) => !phases.includes(name))];
  if (names.length === 0) {
    container.replaceChildren(h("p", { class: "muted" }, "The pipeline's phases are not known here."));
    return;
  }
  const order = new Map(names.map((name, index) => [name, index]));
  const node = (name) => {
    const count = runs.get(name) ?? 0;
    const classes = ["graph-node", count ? "ran" : "not-run", name === current ? "current" : ""];
    return h(
      "li",
      { class: classes.join(" ").trim(), "aria-current": name === current ? "step" : null, dataset: { phase: name } },
      h("span", { class: "mono" }, name),
      h("span", { class: "graph-runs muted" }, count ? `${count} run${count === 1 ? "" : "s"}` : "not run"),
    );
  };
  const arrow = (transition) => {
    const back = (order.get(transition.to) ?? 0) < (order.get(transition.from) ?? 0);
    const how = transition.kind === "retry" ? "retried" : back ? "back to" : "→";
    return h(
      "li",
      { class: `graph-edge edge-${transition.kind}${back ? " edge-back" : ""}` },
      h("span", { class: "mono" }, transition.from),
      ` ${how} `,
      transition.kind === "retry" ? null : h("span", { class: "mono" }, transition.to),
      h("span", { class: "muted" }, ` · ${transition.count} time${transition.count === 1 ? "" : "s"}`),
    );
  };
  const transitions = transitionsSeen(records);
  setChildren(
    container,
    h("ol", { class: "graph-nodes", "aria-label": "Phases, in order" }, names.map(node)),
    transitions.length
      ? h("ul", { class: "graph-edges", "aria-label": "Transitions this job took" }, transitions.map(arrow))
      : h("p", { class: "muted" }, "No transition yet."),
  );
}
