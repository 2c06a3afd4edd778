"""What a job costs, in chromium on ``cairn dev``: the job view's cost panel, the list's cost column, and the list
sorted by cost across its pages."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, Route, expect

from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")

DEAR = "cost-invoice"
CHEAP = "cost-missing"


@pytest.fixture(scope="module")
def costed(dashboard_stack: DevStack) -> DevStack:
    """Two finished jobs: an invoice read, split, extracted and published; a missing document that fails at once."""
    dashboard_stack.api.start("document-intake", state={"document": "invoice.txt"}, job_id=DEAR)
    dashboard_stack.api.start("document-intake", state={"document": "missing.txt"}, job_id=CHEAP)
    dashboard_stack.wait_for(DEAR)
    dashboard_stack.wait_for(CHEAP)
    return dashboard_stack


def test_the_job_view_shows_the_cost_of_the_job_and_of_each_phase_run(browser_page: Page, costed: DevStack) -> None:
    view = costed.api.get(DEAR)
    page = browser_page
    page.goto(f"{costed.base_url}/#/jobs/{DEAR}")

    panel = page.get_by_role("region", name="Cost")
    expect(panel.locator(".cost-total")).to_have_text(f"${view['cost']['usd']:.6f}")
    expect(panel).to_contain_text(f"At us-east-1 prices of {view['cost']['pricesDate']}")
    rows = panel.locator(".cost-phases tbody tr")
    expect(rows).to_have_count(len(view["phases"]))
    for row, record, usd in zip(rows.all(), view["phases"], view["cost"]["phases"], strict=True):
        expect(row.locator("td").first).to_have_text(record["phase"])
        expect(row.locator("td").last).to_have_text(f"${usd:.6f}")


def test_the_list_sorts_by_cost_when_its_cost_column_is_pressed(browser_page: Page, costed: DevStack) -> None:
    dear = costed.api.get(DEAR)["cost"]["usd"]
    cheap = costed.api.get(CHEAP)["cost"]["usd"]
    assert dear > cheap > 0
    page = browser_page
    page.goto(f"{costed.base_url}/#/?prefix=cost-")
    rows = page.locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first).to_have_attribute("data-job-id", CHEAP)  # newest first
    # each job's cost so far, without sorting by it
    expect(rows.first.locator("td[data-label='Cost']")).to_have_text(f"${cheap:.6f}")
    expect(rows.last.locator("td[data-label='Cost']")).to_have_text(f"${dear:.6f}")

    page.get_by_role("button", name="Cost").click()
    expect(page).to_have_url(re.compile(r"sort=cost"))
    expect(rows.first).to_have_attribute("data-job-id", DEAR)
    expect(rows.first.locator("td[data-label='Cost']")).to_have_text(f"${dear:.6f}")
    expect(rows.last.locator("td[data-label='Cost']")).to_have_text(f"${cheap:.6f}")
    expect(page.locator("th[aria-sort='descending']")).to_have_count(1)

    page.reload()  # the sort stays in the address
    expect(rows.first).to_have_attribute("data-job-id", DEAR)


def test_the_list_by_cost_loads_its_pages_in_the_true_order(browser_page: Page, costed: DevStack) -> None:
    costs = {job_id: costed.api.get(job_id)["cost"]["usd"] for job_id in (DEAR, CHEAP)}
    page = browser_page
    pages: list[str] = []

    def one_a_page(route: Route) -> None:  # the real API, a page of one job: the list reads page after page
        pages.append(route.request.url)
        route.continue_(url=route.request.url.replace("limit=50", "limit=1"))

    page.route(re.compile(r".*/jobs\?.*sort=cost.*"), one_a_page)
    page.goto(f"{costed.base_url}/#/?prefix=cost-&sort=cost")
    rows = page.locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(page.get_by_role("button", name="Load more")).to_be_hidden()  # the last page had no cursor
    assert len(pages) == 2
    assert "cursor=" in pages[1]  # the second job came on the second page, where the first ended
    assert [row.get_attribute("data-job-id") for row in rows.all()] == [DEAR, CHEAP]
    cells = page.locator("tbody td[data-label='Cost']").all_inner_texts()
    assert cells == [f"${costs[DEAR]:.6f}", f"${costs[CHEAP]:.6f}"]  # dearest first, across the pages
