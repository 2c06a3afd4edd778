"""A job with more history than its view holds, in chromium: the timeline still shows every phase run.

``GET /jobs/{jobId}`` holds the phase records of the job's newest writes and a ``historyCursor``; the job
view reads the older records from ``GET /jobs/{jobId}/history`` when the job changes. The job is a
``gated`` one (tests/local/gated_pipeline.py) retried while its gate stays closed: each retry adds a
start and a failed run of ``check``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.dashboard import failed_job, open_job
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")

JOB = "long-history"


@pytest.fixture(scope="module")
def gates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for the gates' files."""
    return tmp_path_factory.mktemp("history-gates")


def every_record(stack: DevStack, view: dict[str, Any]) -> list[dict[str, Any]]:
    """The job's phase records, oldest first: the older pages of its history, then the view's own."""
    older: list[dict[str, Any]] = []
    cursor = view["historyCursor"]
    while cursor is not None:
        page = stack.api.history(JOB, limit=100, cursor=cursor)
        older = [write["record"] for write in reversed(page["writes"]) if write["record"]] + older
        cursor = page["cursor"]
    return older + list(view["phases"])


def test_the_timeline_shows_the_phase_runs_older_than_the_job_view_holds(
    browser_page: Page, gated_stack: DevStack, gates: Path
) -> None:
    failed_job(gated_stack, gates, JOB)
    view = gated_stack.api.get(JOB)
    for _ in range(12):  # each retry: its start and a failed run of check
        if len(every_record(gated_stack, view)) > len(view["phases"]):
            break
        gated_stack.api.retry(JOB)
        view = gated_stack.wait_for(JOB)
        assert view["status"] == "error", view
    records = every_record(gated_stack, view)
    assert len(records) > len(view["phases"]), "the job's phase records still fit its view"

    banner = open_job(browser_page, gated_stack.base_url, JOB)

    expect(banner).to_have_attribute("data-status", "error")
    rows = browser_page.get_by_role("region", name="Timeline").locator(".timeline-row")
    expect(rows).to_have_count(len(records))
    expect(rows.first).to_contain_text("gather")  # the first run, older than the view's records
