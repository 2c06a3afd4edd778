"""A job's map in chromium: one lane with its items by status, the slowest listed, an item one click away.

The bundle's ``document-intake`` with ``page_concurrency`` maps ``extract_page`` over the document's pages.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.dashboard import open_job
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")


def test_a_map_is_one_lane_and_each_item_opens_with_its_attempts_and_log(
    browser_page: Page, gated_stack: DevStack
) -> None:
    state = {"document": "contract.txt", "page_concurrency": 2}
    gated_stack.api.start("document-intake", state=state, job_id="mapped-lane")
    view = gated_stack.wait_for("mapped-lane")
    assert view["status"] == "complete", view
    lanes = gated_stack.api.request("GET", "/jobs/mapped-lane/maps")["maps"]
    (lane,) = lanes
    pages = lane["count"]
    assert lane["counts"] == {"done": pages, "failed": 0, "pending": 0}

    page = browser_page
    open_job(page, gated_stack.base_url, "mapped-lane")
    maps = page.get_by_role("list", name="Maps")
    expect(maps.locator("li.map-lane")).to_have_count(1)
    expect(maps).to_contain_text(
        f"Map of extract_page · {pages} items from split, then publish · {pages} done, 0 failed"
    )
    expect(maps.locator(".map-part.status-done")).to_have_count(1)
    slowest = maps.get_by_role("list", name="Slowest items").get_by_role("button")
    expect(slowest).to_have_count(min(pages, 5))

    slowest_index = lane["slowest"][0]["index"]
    assert lane["slowest"][0]["ranMs"] >= lane["slowest"][-1]["ranMs"]
    slowest.first.click()
    detail = page.locator(".map-item-detail")
    expect(detail.get_by_role("heading", level=4)).to_have_text(
        f"Item {slowest_index} of the map of extract_page: done, attempt 1"
    )
    expect(detail.get_by_role("list", name=f"Log of item {slowest_index}")).to_be_visible()
    expect(detail).to_contain_text(re.compile(r"Result"))
