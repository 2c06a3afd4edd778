"""The timeline's runs and waits in chromium: phase runs grouped under the start, retry or rerun that began
them, and a wait for a signal shown with its deadline, then as the gap it was.

The pipeline is ``gated`` (tests/local/gated_pipeline.py): ``gather`` (waits for a signal when its state names
one) -> ``check`` (fails while the gate is closed) -> ``finish``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.dashboard import failed_job, open_job, refreshed
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")


def test_phase_runs_are_grouped_under_the_start_retry_and_rerun_that_began_them(
    browser_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    gate = failed_job(gated_stack, tmp_path, "run-groups")
    gate.write_text("open")
    gated_stack.api.retry("run-groups")
    gated_stack.wait_for("run-groups")
    gated_stack.api.retry("run-groups", mode="from", phase="check")
    assert gated_stack.wait_for("run-groups")["status"] == "complete"
    page = browser_page
    open_job(page, gated_stack.base_url, "run-groups")

    timeline = page.get_by_role("region", name="Timeline")
    headers = timeline.locator("li.timeline-run")
    expect(headers).to_have_count(3)
    expect(headers.nth(0)).to_have_text(re.compile(r"^Run 1 · Start · "))
    expect(headers.nth(1)).to_have_text(re.compile(r"^Run 2 · Retry from the checkpoint at “check” · "))
    expect(headers.nth(2)).to_have_text(re.compile(r"^Run 3 · Rerun from “check” · "))
    groups = page.evaluate(
        """() => {
          const groups = [];
          for (const row of document.querySelectorAll(".timeline-rows > li")) {
            if (row.classList.contains("timeline-run")) groups.push([]);
            else groups.at(-1).push(row.querySelector(".phase-name").textContent);
          }
          return groups;
        }"""
    )
    assert groups == [["gather", "check"], ["check", "finish"], ["check", "finish"]]


def test_a_wait_shows_its_deadline_and_then_the_gap_it_was(browser_page: Page, gated_stack: DevStack) -> None:
    gated_stack.api.start("gated", state={"wait_for": "approve", "wait_timeout": 3600}, job_id="waits-an-hour")
    gated_stack.wait_for("waits-an-hour", ("waiting",))
    page = browser_page
    open_job(page, gated_stack.base_url, "waits-an-hour")
    waiting = page.locator(".timeline-row.outcome-waiting")

    expect(waiting).to_contain_text("waiting for “approve”")
    expect(waiting).to_contain_text(re.compile(r"times out at .+ \(in (59|60) min"))

    gated_stack.api.signal("waits-an-hour", "approve", payload={"ok": True})
    refreshed(page, lambda: expect(page.get_by_role("status")).to_have_attribute("data-status", "complete"))
    check = page.locator(".timeline-row", has=page.locator(".phase-name", has_text="check"))
    expect(check).to_contain_text(re.compile(r"after waiting [\d.]+ (ms|s) for a signal"))
