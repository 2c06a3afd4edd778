/**
 * A job's action buttons: which one the job's status allows, and why a disabled one is disabled.
 */

import { connectionState } from "./connection.js";
import { restoreFocus } from "./dom.js";
import { quoted } from "./format.js";
import { nudgeRule } from "./stalled.js";

/** Why every button is disabled while the API does not answer. */
const OFFLINE_REASON = "The API does not answer: actions wait until it does (the page keeps trying)";

/**
 * Which action each status allows: `{allowed, reason}` per button (the reason is the disabled button's title).
 *
 *   Retry            resume from the checkpoint: error, cancelled, paused, idle. Not for a complete job (it
 *                    has no checkpoint to resume; Start over runs it again), nor while running or pausing (a
 *                    paused job whose phase is still in flight: nothing to retry) or waiting (the API refuses:
 *                    send the signal, or start over).
 *   Start over       always (a running job's worker is fenced off); asks for confirmation first.
 *   Rerun from phase always, when the pipeline's phases are known; it offers the job's rerunPhases (not
 *                    the phases the job runs only as a map's items).
 *   Pause            only a running job (the API's rule).
 *   Resume           only a paused job.
 *   Cancel           any job but a complete or cancelled one (the API's rule).
 *   Send signal      only a waiting job.
 *   Nudge            only a stalled job (stalled.js); primary then, and hidden otherwise.
 *
 * One of them is `primary` (the button drawn as the way on), when the job has one: Retry for a failed,
 * cancelled or idle job, Resume for a paused one whose phase has ended, Send signal for a waiting one, Nudge for
 * a stalled one; none
 * while it runs or is pausing (the phase in flight decides), nor once it is complete.
 * @param {object} job a JobView
 * @param {string[]} phases the pipeline's phases ([] when unknown)
 * @returns {Record<string, {allowed: boolean, reason: string, primary: boolean}>}
 */
export function actionRules(job, phases) {
  const status = job.status;
  const is = (...statuses) => statuses.includes(status);
  const pausing = is("paused") && Boolean(job.claimedAt); // paused while a worker still runs its phase
  const where = job.nextPhase ? ` at ${quoted(job.nextPhase)}` : "";
  const rule = (allowed, yes, no) => ({ allowed, reason: allowed ? yes : no });
  const retryRefusal = is("complete")
    ? "A complete job has no checkpoint to resume: Start over runs it again"
    : is("waiting")
      ? `The job waits for signal ${quoted(job.waitingFor ?? "")}: send it, or start over`
      : pausing
        ? `The job pauses after phase ${quoted(job.nextPhase ?? "?")}, still running: there is nothing to retry`
        : "The job is running: there is nothing to retry";
  const rules = {
    Retry: rule(
      is("error", "cancelled", "idle") || (is("paused") && !pausing),
      `Resumes from the checkpoint${where}`,
      retryRefusal,
    ),
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
    Nudge: nudgeRule(job),
  };
  const primary = rules.Nudge.allowed // stalled: no worker holds it, a nudge is the one move
    ? "Nudge"
    : is("error", "cancelled", "idle")
      ? "Retry"
    : is("waiting")
      ? "Send signal"
      : is("paused") && !pausing
        ? "Resume"
        : null;
  for (const [name, found] of Object.entries(rules)) found.primary = name === primary;
  return rules;
}

export const ACTION_NAMES = [
  "Nudge",
  "Retry",
  "Start over",
  "Rerun from phase",
  "Pause",
  "Resume",
  "Cancel",
  "Send signal",
];

/** A button's look before the job is known; which one is primary follows the job (actionRules). */
export function actionClass(name) {
  if (name === "Start over" || name === "Cancel") return "danger-outline";
  return "";
}

/**
 * Enable the buttons the job's status allows (none while the API does not answer); a disabled one says why
 * in its title; the job's primary action is drawn so. A focused button that the new status disables hands the
 * focus to its nearest enabled neighbour.
 */
export function renderActions(buttons, job, phases) {
  const rules = actionRules(job, phases);
  const offline = connectionState() === "offline";
  const focused = [...buttons.values()].find((button) => button === document.activeElement) ?? null;
  for (const [name, button] of buttons) {
    const { allowed, reason } = rules[name];
    button.disabled = offline || !allowed;
    button.title = offline ? OFFLINE_REASON : reason;
    button.classList.toggle("primary", rules[name].primary);
    if (name === "Nudge") button.hidden = !allowed; // shown only while the job is stalled: the rare move
  }
  if (focused?.disabled) restoreFocus(focused);
}
