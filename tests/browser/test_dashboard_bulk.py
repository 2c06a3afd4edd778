"""Many jobs at once in chromium: retry every failed job a filter matches, and act on selected rows.

The pipeline is ``gated`` (tests/local/gated_pipeline.py): ``check`` fails while the gate file reads "closed".
The test closes one gate for a hundred jobs, lets them fail, opens it, and retries them all from the list: one
POST /bulk, run by the server; the page is closed at once, and a new one finds the bulk and follows it to the end.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Request, expect

from tests.browser.dashboard import SAFETY_MS, gate, log_messages, refreshed
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


class BulkPosts:
    """The bodies of the POST /bulk requests a page sends: the dry runs, and the one that starts the bulk."""

    def __init__(self, page: Page) -> None:
        self.bodies: list[dict[str, Any]] = []
        page.on("request", self._seen)

    def _seen(self, request: Request) -> None:
        if request.method == "POST" and urlsplit(request.url).path.endswith("/bulk"):
            body = request.post_data_json
            assert isinstance(body, dict), body
            self.bodies.append(body)

    @property
    def started(self) -> list[dict[str, Any]]:
        """The requests that were not dry runs."""
        return [body for body in self.bodies if not body.get("dryRun")]


def start_failing(stack: DevStack, job_ids: list[str], closed: Path) -> None:
    """Start a ``gated`` job for each id whose ``check`` fails on the ``closed`` gate, a few at a time."""
    each(lambda job_id: stack.api.start("gated", state={"gate": str(closed)}, job_id=job_id), job_ids)


def test_a_bulk_retry_of_a_hundred_failed_jobs_runs_on_the_server_past_the_page_and_each_is_retried_once(
    browser_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    closed = gate(tmp_path, "gate-bulk")
    job_ids = [f"bulk-{number:03d}" for number in range(FAILED)]
    start_failing(gated_stack, job_ids, closed)
    wait_all(gated_stack, job_ids, "error")
    closed.write_text("open")
    page = browser_page
    posts = BulkPosts(page)

    page.goto(f"{gated_stack.base_url}/#/?status=error&pipeline=gated&prefix=bulk-")
    expect(page.locator("tbody tr")).to_have_count(50)  # the first page
    page.get_by_role("button", name="Retry all", exact=True).click()
    dialog = page.locator("#bulk-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Retry 100 jobs matching this filter?", timeout=SAFETY_MS)  # the server's dry run
    expect(dialog.locator("[data-slot=jobs] li")).to_have_count(FAILED)
    expect(dialog.locator("[data-slot=jobs]")).to_contain_text("bulk-042")
    assert posts.bodies  # the dry run
    assert posts.started == []  # nothing is started before the confirmation

    dialog.get_by_role("button", name="Retry 100 jobs").click()
    link = dialog.locator("[data-slot=jobs] a")
    expect(link).to_have_text(re.compile(r"^b-[0-9a-f]+$"))
    bulk_id = link.inner_text()
    [started] = posts.started
    assert started["action"] == "retry"
    assert started["filter"] == {"status": "error", "pipeline": "gated", "idPrefix": "bulk-"}
    page.close()  # the tab closes mid-way: the bulk runs on, on the server

    again = gated_stack_page(browser_page)
    again.goto(f"{gated_stack.base_url}/#/")
    again.get_by_role("link", name="Bulk operations").click()
    again.get_by_role("link", name=bulk_id).click()
    expect(again).to_have_url(re.compile(f"#/bulk/{bulk_id}$"))
    expect(again.get_by_role("heading", level=1)).to_contain_text(bulk_id)
    refreshed(
        again, lambda: expect(again.get_by_text("Finished: 100 jobs: 100 done, 0 refused, 0 errored.")).to_be_visible()
    )
    views = wait_all(gated_stack, job_ids, "complete")
    results = again.locator(".bulk-results li")
    refreshed(again, lambda: expect(again.locator(".bulk-results li.done[data-status=complete]")).to_have_count(FAILED))
    expect(results).to_have_count(FAILED)
    expect(results.first).to_contain_text(": done, now complete")
    assert {tuple(view["result"]["ran"]) for view in views} == {("gather", "check", "finish")}  # gather ran once
    logs = each(lambda job_id: log_messages(gated_stack, job_id), job_ids)
    assert {sum(message.startswith("Job retried") for message in log) for log in logs} == {1}
    again.goto(f"{gated_stack.base_url}/#/?status=error&pipeline=gated&prefix=bulk-")
    expect(again.get_by_text("No job matches these filters")).to_be_visible()  # none is in error any more


def gated_stack_page(closed: Page) -> Page:
    """A new tab of the closed page's browser context (its storage: the bulks this browser started), on
    Playwright's clock as the fixtures' pages are."""
    page = closed.context.new_page()
    page.clock.install()
    return page


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
    refreshed(
        page,
        lambda: expect(dialog.locator("[data-slot=progress-text]")).to_have_text(
            "Finished: 2 jobs: 1 done, 1 refused, 0 errored."
        ),
    )
    expect(dialog.locator("li.refused")).to_contain_text("picked-done: refused:")
    expect(dialog.locator("li.done")).to_contain_text("picked-a: done, now cancelled")
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
    posts = BulkPosts(page)

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
    assert posts.bodies  # dry runs
    assert posts.started == []
