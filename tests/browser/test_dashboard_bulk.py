"""Many jobs at once in chromium: retry every failed job a filter matches, and act on selected rows.

The pipeline is ``gated`` (tests/local/gated_pipeline.py): ``check`` fails while the gate file reads "closed".
The test closes one gate for a hundred jobs, lets them fail, opens it, and retries them all from the list.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.dashboard import LOOK_MS, SAFETY_MS, Posts, gate, log_messages
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")

FAILED = 100
STALL_S = 90.0
"""How long the work of many jobs may stand still (no job done since) before the test fails. The whole takes what
the server's real work takes (much longer on a loaded machine): the test fails when nothing moves, not when slow."""
AT_ONCE = 4
"""API calls the test makes at once: as many as ``cairn dev`` runs invocations of its API function at once."""

Item = TypeVar("Item")
Result = TypeVar("Result")


def each(call: Callable[[Item], Result], items: list[Item]) -> list[Result]:
    """``call`` of each item, in order, ``AT_ONCE`` at a time."""
    with ThreadPoolExecutor(max_workers=AT_ONCE) as pool:
        return list(pool.map(call, items))


def wait_all(stack: DevStack, job_ids: list[str], status: str) -> list[dict[str, Any]]:
    """Each job's view once every one of them has ``status``; fails when none has come to it for ``STALL_S``."""
    wanted = set(job_ids)
    pending = wanted
    moved = time.monotonic()
    while True:
        page = stack.api.list_all(limit=100, idPrefix=job_ids[0].rsplit("-", 1)[0] + "-")
        now_pending = wanted - {job["jobId"] for job in page["jobs"] if job["status"] == status}
        if not now_pending:
            return each(lambda job_id: stack.api.get(job_id, include_state=True), job_ids)
        if len(now_pending) < len(pending):
            moved = time.monotonic()
        pending = now_pending
        still = time.monotonic() - moved
        assert still < STALL_S, (
            f"{len(pending)} jobs not {status}, none came to it in {still:.0f} s: {sorted(pending)[:3]}"
        )
        time.sleep(0.5)  # the server's work, read again: each read lists a hundred jobs


def wait_sent(dialog: Locator, total: int) -> None:
    """Wait until the bulk dialog has sent its request for each of ``total`` jobs, as its progress bar counts them.

    Each request is real work for the server (the retry's writes, with the jobs retried before it running): the
    whole takes what it takes; the test fails only when the bar stands still for ``STALL_S``.
    """
    bar = dialog.locator("[data-slot=progress]")
    sent = -1
    moved = time.monotonic()
    while True:
        now_sent = int(bar.evaluate("(bar) => bar.value"))
        if now_sent >= total:
            return
        if now_sent > sent:
            sent, moved = now_sent, time.monotonic()
        still = time.monotonic() - moved
        assert still < STALL_S, f"the dialog sent {sent} of {total} requests, and none more in {still:.0f} s"
        with suppress(AssertionError):  # a look: until the bar moves on, or a while
            expect(bar).not_to_have_js_property("value", sent, timeout=LOOK_MS * 10)


def start_failing(stack: DevStack, job_ids: list[str], closed: Path) -> None:
    """Start a ``gated`` job for each id whose ``check`` fails on the ``closed`` gate, a few at a time."""
    each(lambda job_id: stack.api.start("gated", state={"gate": str(closed)}, job_id=job_id), job_ids)


def test_a_bulk_retry_of_a_hundred_failed_jobs_retries_each_once_and_they_complete(
    browser_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    closed = gate(tmp_path, "gate-bulk")
    job_ids = [f"bulk-{number:03d}" for number in range(FAILED)]
    start_failing(gated_stack, job_ids, closed)
    wait_all(gated_stack, job_ids, "error")
    closed.write_text("open")
    page = browser_page
    posts = Posts(page)

    page.goto(f"{gated_stack.base_url}/#/?status=error&pipeline=gated&prefix=bulk-")
    expect(page.locator("tbody tr")).to_have_count(50)  # the first page
    page.get_by_role("button", name="Retry all", exact=True).click()
    dialog = page.locator("#bulk-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Retry 100 jobs matching this filter?", timeout=SAFETY_MS)  # 101 jobs read
    expect(dialog.locator("[data-slot=jobs] li")).to_have_count(FAILED)
    expect(dialog.locator("[data-slot=jobs]")).to_contain_text("bulk-042")
    assert posts.sent == []  # nothing is sent before the confirmation

    dialog.get_by_role("button", name="Retry 100 jobs").click()
    wait_sent(dialog, FAILED)
    expect(dialog.locator("[data-slot=progress-text]")).to_have_text("Retried 100 of 100 jobs.")
    expect(dialog.locator("[data-slot=results] li.done")).to_have_count(FAILED)
    assert sorted(posts.sent) == sorted(f"POST /jobs/{job_id}/retry" for job_id in job_ids)

    views = wait_all(gated_stack, job_ids, "complete")
    assert {tuple(view["result"]["ran"]) for view in views} == {("gather", "check", "finish")}  # gather ran once
    logs = each(lambda job_id: log_messages(gated_stack, job_id), job_ids)
    assert {sum(message.startswith("Job retried") for message in log) for log in logs} == {1}
    dialog.get_by_role("button", name="Close").click()
    expect(page.locator("tbody tr")).to_have_count(0)  # none is in error any more
    expect(page.get_by_text("No job matches these filters")).to_be_visible()


def test_selected_rows_only_are_cancelled_and_a_refusal_is_shown_per_job(
    browser_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    closed = gate(tmp_path, "gate-picked")
    start_failing(gated_stack, ["picked-a", "picked-b", "picked-c"], closed)
    wait_all(gated_stack, ["picked-a", "picked-b", "picked-c"], "error")
    gated_stack.api.start("gated", state={}, job_id="picked-done")
    gated_stack.wait_for("picked-done")
    page = browser_page
    page.goto(f"{gated_stack.base_url}/#/?prefix=picked-")
    expect(page.locator("tbody tr")).to_have_count(4)
    selected = page.get_by_role("button", name="Retry selected")
    expect(selected).to_be_disabled()

    page.get_by_role("checkbox", name="Select job picked-a").check()
    page.get_by_role("checkbox", name="Select job picked-done").check()
    expect(page.locator(".bulk-count")).to_have_text("2 selected")
    page.get_by_role("button", name="Cancel selected").click()
    dialog = page.locator("#bulk-dialog")
    expect(dialog).to_contain_text("Cancel 2 jobs selected?")
    dialog.get_by_role("button", name="Cancel 2 jobs").click()
    expect(dialog.locator("[data-slot=progress-text]")).to_have_text("Cancelled 1 of 2 jobs; 1 refused.")
    expect(dialog.locator("li.refused")).to_contain_text("picked-done: refused:")
    dialog.get_by_role("button", name="Close").click()

    assert gated_stack.api.get("picked-a")["status"] == "cancelled"
    assert {gated_stack.api.get(job_id)["status"] for job_id in ("picked-b", "picked-c")} == {"error"}
    assert gated_stack.api.get("picked-done")["status"] == "complete"
    expect(page.locator(".bulk-count")).to_have_text("No job selected")


def test_more_jobs_than_the_limit_are_refused_until_the_operator_raises_it(
    browser_page: Page, gated_stack: DevStack
) -> None:
    for number in range(4):
        gated_stack.api.start("gated", state={}, job_id=f"limited-{number}")
    page = browser_page
    page.goto(f"{gated_stack.base_url}/#/?prefix=limited-")
    expect(page.locator("tbody tr")).to_have_count(4)
    posts = Posts(page)

    page.get_by_role("button", name="Start over all", exact=True).click()
    dialog = page.locator("#bulk-dialog")
    limit = dialog.get_by_label("At most")
    limit.fill("3")
    limit.dispatch_event("change")
    expect(dialog).to_contain_text("More than 3 jobs match this filter")
    confirm = dialog.locator("[data-slot=confirm]")
    expect(confirm).to_be_disabled()

    limit.fill("4")
    limit.dispatch_event("change")
    expect(dialog).to_contain_text("Start over 4 jobs matching this filter?")
    expect(confirm).to_be_enabled()
    dialog.get_by_role("button", name="Close").click()
    assert posts.sent == []
