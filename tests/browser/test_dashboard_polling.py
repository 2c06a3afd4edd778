"""A job that cannot change by itself is not read every few seconds: a failed job's view reads it again seldom,
and an action on it (Retry) makes the view read it at once and follow it again while it runs."""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

import pytest
from playwright.sync_api import Page, Request, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.browser.dashboard import (
    LOOK_MS,
    POLL_MS,
    SETTLED_POLL_MS,
    button,
    failed_job,
    gate,
    is_read_of,
    open_job,
    pause_clock,
    refreshed,
)
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")

JOB = "settled-poll"


class Reads:
    """The page's reads of one job (``GET /jobs/<id>``), counted as they are sent."""

    def __init__(self, page: Page, job_id: str) -> None:
        self.page = page
        self.job_id = job_id
        self.count = 0
        page.on("request", self._seen)

    def is_read(self, request: Request) -> bool:
        return request.method == "GET" and is_read_of(request.url, self.job_id)

    def _seen(self, request: Request) -> None:
        if self.is_read(request):
            self.count += 1

    def after_running_for(self, ms: int) -> int:
        """Move the page's clock on ``ms`` and say how many reads it sent (looking ``LOOK_MS`` for a late one)."""
        before = self.count
        self.page.clock.run_for(ms)
        with suppress(PlaywrightTimeoutError):
            self.page.wait_for_event("request", self.is_read, timeout=LOOK_MS)
        return self.count - before


def test_a_failed_jobs_view_stops_reading_it_until_an_action_and_follows_the_retry(
    browser_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    closed = failed_job(gated_stack, tmp_path, JOB)
    banner = open_job(browser_page, gated_stack.base_url, JOB)
    expect(banner).to_have_attribute("data-status", "error")
    pause_clock(browser_page)
    reads = Reads(browser_page, JOB)

    assert reads.after_running_for(POLL_MS * 10) == 0  # 10 intervals of a running job's refresh: no read
    assert reads.after_running_for(SETTLED_POLL_MS) >= 1  # a change made elsewhere is still seen, seldom

    gate(closed.parent, closed.name, "open")
    before_retry = reads.count
    button(browser_page, "Retry").click()

    refreshed(browser_page, lambda: expect(banner).to_have_attribute("data-status", "complete"))
    assert reads.count > before_retry  # read at once after the action, then followed while it ran
    assert reads.after_running_for(POLL_MS * 10) == 0  # complete: settled again
