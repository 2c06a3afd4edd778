"""Who did what, in chromium: the operator actions taken from the page (pause, resume, cancel) are entries of kind
"Action" in the job's log naming the caller, and markers on the timeline listed with their times.

The pipeline is ``gated`` (tests/local/gated_pipeline.py): ``gather`` holds while a file exists.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.dashboard import button, open_job
from tests.browser.test_dashboard_controls import held
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")


def test_pause_resume_and_cancel_from_the_page_are_logged_with_the_caller_and_marked(
    browser_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    state, hold = held(tmp_path, "audited")
    gated_stack.api.start("gated", state=state, job_id="audited")
    page = browser_page
    banner = open_job(page, gated_stack.base_url, "audited")
    expect(banner).to_have_attribute("data-status", "running")

    button(page, "Pause").click()
    expect(banner).to_have_attribute("data-status", "paused")
    log = page.get_by_role("list", name="Log entries, oldest first")
    expect(log.locator("li.kind-action")).to_have_count(2)  # the start, then the pause
    expect(log.locator("li.kind-action").last).to_contain_text("Job paused by ")
    expect(log.locator("li.kind-action").last).to_contain_text("Action")

    button(page, "Resume").click()
    expect(log.locator("li.kind-action")).to_have_count(3)
    button(page, "Cancel").click()
    expect(banner).to_have_attribute("data-status", "cancelled")
    hold.unlink()

    entries = log.locator("li.kind-action")
    expect(entries).to_have_count(4)
    expect(entries.nth(2)).to_contain_text('Job retried (resume) at phase "gather" by ')
    expect(entries.nth(3)).to_contain_text("Job cancelled by ")
    who = page.get_by_role("list", name="Who did what")
    expect(who.locator("li")).to_have_count(4)
    expect(who).to_contain_text("Job paused by ")
    expect(page.locator(".timeline-actions .marker")).to_have_count(4)

    view = gated_stack.api.log("audited")["entries"]
    actors = {entry.get("actor") for entry in view if entry["kind"] == "action"}
    assert len(actors) == 1  # one caller did all four
    assert None not in actors

    page.get_by_label("Show").select_option("action")  # the log's filter: actions only
    expect(log.locator("li")).to_have_count(4)
