"""Why jobs are failing, in chromium on ``cairn dev``: the Failures view groups failed jobs by exception type, phase
and pipeline over a range, each group a link to the jobs list filtered to it, which shows each job's error and
duration (on a laptop, and as cards at a phone's width).

The failures are written straight into the stack's store as the engine writes them (tests/failure_seeds.py), with
exception types no other test raises, so the shared stack's other failures join none of their groups.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, expect

from tests.browser.seed import dev_storage, seed_jobs
from tests.failure_seeds import Failed, seed_failure
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-2")

PIPELINE = "document-intake"
QUOTA = "seeded.QuotaExceeded"
PARSE = "seeded.ParseError"
QUOTAS = ["quota-0", "quota-1", "quota-2"]
RUNNING = "failures-running"
AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture(scope="module")
def failing(dashboard_stack: DevStack) -> DevStack:
    """Three quota failures in ``fetch`` (the newest 2 min ago), one parse failure in ``extract`` 3 h ago, and a job
    that has waited 5 min (idle: its duration runs on)."""
    storage = dev_storage(dashboard_stack)
    now = int(time.time() * 1000)
    for number, job_id in enumerate(QUOTAS):
        message = f"Quota of 100 requests exceeded (call {number})\nretry after 60 s"
        seed_failure(storage, Failed(job_id, PIPELINE, "fetch", QUOTA, message, now - (2 + number) * 60_000))
    seed_failure(storage, Failed("parse-0", PIPELINE, "extract", PARSE, "line 3: unexpected ','", now - 3 * 3_600_000))
    seed_jobs(dashboard_stack, [RUNNING], pipeline=PIPELINE, first_phase="fetch", now_ms=now - 5 * 60_000)
    return dashboard_stack


def test_the_failures_view_groups_by_type_and_phase_and_a_group_links_to_its_jobs(
    browser_page: Page, failing: DevStack
) -> None:
    page = browser_page
    page.goto(f"{failing.base_url}/#/failures")

    expect(page.get_by_role("heading", level=1)).to_have_text("Failures")
    expect(page.get_by_role("link", name="Failures")).to_have_attribute("aria-current", "page")
    quota = page.locator(f"tbody tr[data-type='{QUOTA}']")
    expect(quota).to_have_count(1)
    expect(quota.locator("td[data-label='Phase']")).to_have_text("fetch")
    expect(quota.locator("td[data-label='Pipeline']")).to_have_text(PIPELINE)
    expect(quota.locator("td[data-label='Jobs']")).to_have_text("3")
    expect(quota.locator("td[data-label='Sample message']")).to_have_text("Quota of 100 requests exceeded (call 0)")
    expect(page.locator(f"tbody tr[data-type='{PARSE}'] td[data-label='Phase']")).to_have_text("extract")

    page.get_by_role("button", name="Last hour").click()  # the parse failure is 3 h old

    expect(page).to_have_url(re.compile(r"#/failures\?since=1h$"))
    expect(page.get_by_role("button", name="Last hour")).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_role("button", name="Last hour")).to_be_focused()
    expect(page.get_by_role("button", name="Last 24 hours")).to_have_attribute("aria-pressed", "false")
    expect(page.locator(f"tbody tr[data-type='{PARSE}']")).to_have_count(0)
    expect(quota.locator("td[data-label='Jobs']")).to_have_text("3")

    quota.get_by_role("link", name=re.compile(rf"^{re.escape(QUOTA)}: show the 3 jobs")).click()

    expect(page).to_have_url(re.compile(rf"#/\?.*errorType={re.escape(QUOTA)}"))
    rows = page.locator("tbody tr")
    expect(rows).to_have_count(3)
    assert sorted(rows.evaluate_all("rows => rows.map(row => row.dataset.jobId)")) == QUOTAS
    expect(page.locator("#filter-status")).to_have_value("error")
    expect(page.locator(".failure-filter")).to_contain_text(f"{QUOTA} in fetch")
    newest = page.locator(f"tbody tr[data-job-id='{QUOTAS[0]}']")
    expect(newest.locator("td[data-label='Error']")).to_contain_text(f"{QUOTA} in fetch")
    expect(newest.locator("td[data-label='Error']")).to_contain_text("Quota of 100 requests exceeded (call 0)")
    expect(newest.locator("td[data-label='Error']")).not_to_contain_text("retry after")  # the first line only
    expect(newest.locator("td[data-label='Duration']")).to_have_text("1.5 s")

    page.locator(".failure-filter").get_by_role("button", name="Clear").click()

    expect(page.locator(".failure-filter")).to_be_hidden()
    expect(page.locator("tbody tr[data-job-id='parse-0']")).to_have_count(1)  # every failed job again


def test_a_waiting_job_shows_how_long_it_has_taken_so_far_and_no_error(browser_page: Page, failing: DevStack) -> None:
    page = browser_page
    page.goto(f"{failing.base_url}/#/?prefix={RUNNING}")

    row = page.locator(f"tbody tr[data-job-id='{RUNNING}']")
    expect(row.locator("td[data-label='Duration']")).to_have_text(re.compile(r"^5 min \d\d s so far$"))
    expect(row.locator("td[data-label='Error']")).to_have_text("")


def test_at_a_phones_width_the_error_and_duration_are_on_each_card(phone_page: Page, failing: DevStack) -> None:
    page = phone_page
    page.goto(f"{failing.base_url}/#/?status=error&errorType={QUOTA}&errorPhase=fetch")

    card = page.locator(f"tbody tr[data-job-id='{QUOTAS[0]}']")
    expect(card.locator("td[data-label='Error']")).to_be_visible()
    expect(card.locator("td[data-label='Error']")).to_contain_text(QUOTA)
    expect(card.locator("td[data-label='Duration']")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing scrolls sideways


def serious_findings(page: Page) -> list[str]:
    """axe-core's serious and critical findings on the page as it is (run through the DevTools protocol, which
    the page's CSP does not govern)."""
    page.evaluate(AXE.read_text(encoding="utf-8"))
    checked, found = page.evaluate(
        "async () => { const r = await axe.run(); return [r.passes.length, r.violations.map(v => [v.impact, v.id, "
        "v.nodes.length])]; }"
    )
    assert checked > 0, "axe-core checked nothing"
    return [f"{impact} {rule} x{count}" for impact, rule, count in found if impact in ("serious", "critical")]


def test_the_failures_view_and_a_filtered_list_have_no_serious_accessibility_finding(
    browser_page: Page, failing: DevStack
) -> None:
    page = browser_page
    page.goto(f"{failing.base_url}/#/failures")
    expect(page.locator(f"tbody tr[data-type='{QUOTA}']")).to_have_count(1)
    assert serious_findings(page) == []

    page.locator(f"tbody tr[data-type='{QUOTA}']").get_by_role("link").click()
    expect(page.locator("tbody tr")).to_have_count(3)
    assert serious_findings(page) == []


def test_the_failures_view_says_when_there_is_none_and_when_the_api_fails(
    browser_page: Page, failing: DevStack
) -> None:
    page = browser_page
    empty = {"since": 0, "until": 1, "groups": [], "examined": 0, "exact": True}
    page.route(
        re.compile(r".*/failures\?since=1h$"),
        lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(empty)),
    )

    def refuse(route: Route) -> None:
        error = {"error": {"code": "unavailable", "message": "The job table cannot be read"}}
        route.fulfill(status=503, content_type="application/json", body=json.dumps(error))

    page.route(re.compile(r".*/failures\?since=7d$"), refuse)

    page.goto(f"{failing.base_url}/#/failures?since=1h")
    expect(page.get_by_text("No failed jobs in this range.")).to_be_visible()
    expect(page.locator("table.failures-table")).to_be_hidden()

    page.get_by_role("button", name="Last 7 days").click()

    expect(page.get_by_role("alert").filter(has_text="The failures could not be read")).to_contain_text(
        "The job table cannot be read"
    )
    page.unroute(re.compile(r".*/failures\?since=7d$"))
    page.get_by_role("button", name="Try again").click()
    expect(page.locator(f"tbody tr[data-type='{QUOTA}']")).to_have_count(1)
