"""Why a job failed, in chromium: the timeline folds open the failed attempt's exception type and traceback.

The job is a ``gated`` one (tests/local/gated_pipeline.py) whose gate reads "broken": its ``check`` phase
raises TypeError from the pipeline's own code.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.dashboard import gate, open_job
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")

JOB = "broken-check"


def test_a_failed_attempt_folds_open_its_exception_type_and_the_users_frames(
    browser_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    broken = gate(tmp_path, "gate-broken", "broken")
    gated_stack.api.start("gated", state={"gate": str(broken)}, job_id=JOB)
    view = gated_stack.wait_for(JOB)
    assert (view["status"], view["phases"][-1]["failure"]["type"]) == ("error", "TypeError"), view

    banner = open_job(browser_page, gated_stack.base_url, JOB)

    expect(banner).to_have_attribute("data-status", "error")
    timeline = browser_page.get_by_role("region", name="Timeline")
    failed = timeline.locator(".timeline-row").filter(has_text="check").last
    details = failed.locator("details.failure")
    expect(details.locator("summary")).to_contain_text("TypeError")
    trace = details.locator("pre.traceback")
    expect(trace).not_to_be_visible()  # folded until asked

    details.locator("summary").click()

    expect(trace).to_be_visible()
    expect(trace).to_contain_text('TypeError: can only concatenate str (not "int") to str')
    expect(trace).to_contain_text("In your code (most recent call last):")
    expect(trace).to_contain_text("gated/pipeline.py")
    expect(trace).to_contain_text("return note + 1")
    rows_without = timeline.locator(".timeline-row").filter(has_text="gather").locator("details.failure")
    expect(rows_without).to_have_count(0)
