"""At a phone's size (390x844): the list's first job card is on the first screen, and neither the list nor a job
with many runs scrolls the page sideways (a wide part scrolls or wraps inside its own box)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.dashboard import failed_job, open_job
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")

JOB = "seven-runs"
RUNS = 7
FIRST_CARD_TOP_PX = 300
"""Where the list's first job card starts at the latest: the header, filters and counts leave room for it."""


def page_width(page: Page) -> int:
    """How wide the page's content is, in CSS pixels (over the viewport's 390: it scrolls sideways)."""
    return int(page.evaluate("() => document.documentElement.scrollWidth"))


@pytest.fixture(scope="module")
def seven_runs(gated_stack: DevStack, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A failed job retried until it has run 7 times (each retry fails again: its gate stays closed)."""
    failed_job(gated_stack, tmp_path_factory.mktemp("seven-runs"), JOB)
    for _ in range(RUNS - 1):
        gated_stack.api.retry(JOB)
        assert gated_stack.wait_for(JOB)["status"] == "error"
    return JOB


def test_the_lists_first_card_is_on_the_first_screen_and_the_list_is_no_wider(
    phone_page: Page, gated_stack: DevStack, seven_runs: str
) -> None:
    phone_page.goto(f"{gated_stack.base_url}/#/")
    first_card = phone_page.locator(".jobs-table tbody tr").first
    expect(first_card).to_be_visible()

    top = first_card.evaluate("(row) => row.getBoundingClientRect().top + window.scrollY")
    assert top < FIRST_CARD_TOP_PX, f"the first job card starts {top:.0f} px down"
    assert page_width(phone_page) <= 390

    filters = phone_page.get_by_role("button", name="Filters")
    expect(filters).to_have_attribute("aria-expanded", "false")
    status = phone_page.get_by_label("Status")
    expect(status).to_be_hidden()
    filters.click()
    expect(filters).to_have_attribute("aria-expanded", "true")
    expect(status).to_be_visible()
    assert page_width(phone_page) <= 390


def test_a_job_with_seven_runs_scrolls_its_runs_inside_its_own_box_not_the_page(
    phone_page: Page, gated_stack: DevStack, seven_runs: str
) -> None:
    banner = open_job(phone_page, gated_stack.base_url, seven_runs)
    expect(banner).to_have_attribute("data-status", "error")
    expect(phone_page.locator("li.timeline-run")).to_have_count(RUNS)

    for name in ("Timeline", "Runs compared"):
        region = phone_page.get_by_role("region", name=name, exact=True)
        expect(region).to_be_visible()
        region.scroll_into_view_if_needed()
        assert page_width(phone_page) <= 390, f"the page is {page_width(phone_page)} px wide at the {name}"
