/**
 * Live views: a task run again a while after each run ends, paused while the tab is hidden.
 */

import { clearAlert, reportError } from "./alerts.js";

export const POLL_MS = 2000;

/**
 * Runs `task` now and then every `interval` ms after each run finishes, never two at once; waits while
 * the tab is hidden and runs again as soon as it is shown. `now()` runs it at once (after an action).
 * `interval` may be a function, asked after each run: a view that cannot change reads again seldom.
 */
export class Poller {
  /**
   * @param {(signal: AbortSignal) => Promise<void>} task
   * @param {number | (() => number)} [interval]
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
      const wait = typeof this.interval === "function" ? this.interval() : this.interval;
      this.timer = setTimeout(() => this.now(), wait);
    }
  }
}
