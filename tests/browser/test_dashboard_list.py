"""The jobs list at scale in chromium: hundreds of jobs with real histories (written through the store) and a map job,
filters on the server and in the address, totals, a job found by id at once, the keyboard, and a refresh that reads
the first page only.

``CAIRN_CONSOLE_JOBS`` sets how many jobs (default 300, six pages, in ``make test-long``; ``make console-scale`` runs
10,000).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, Page, Request, expect

from benchmarks import dev_scale
from tests.browser.dashboard import SAFETY_MS, open_job, pause_clock, refreshed
from tests.browser.seed import DAY_MS, seed_jobs
from tests.local.devstack import DevStack, dev_stack

pytestmark = pytest.mark.xdist_group("browser-2")

JOBS = int(os.environ.get("CAIRN_CONSOLE_JOBS", "300"))
IDS = [f"list-{number:05d}" for number in range(JOBS)]
OLD = ["old-0", "old-1", "old-2"]
MAPPED = "mapped-0"
MAP_ITEMS = min(dev_scale.MAP_ITEMS, max(12, JOBS // 30))
"""The map job's pages: 300 among 10,000 jobs, 12 among 300."""
TOTAL = JOBS + len(OLD) + 1


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """``cairn dev`` with JOBS jobs (newest last in IDS), a map job older than them and three made two days ago.

    The JOBS jobs are :func:`benchmarks.dev_scale.seed_stack`'s: real histories of 2 to 16 writes, both of the
    bundle's pipelines, some failed. The map job is document-intake's over MAP_ITEMS pages, run to its end first
    (:func:`benchmarks.dev_scale.run_map`). The schedules tick once a day, so that the sweep leaves the jobs as they
    were written, and the phase after the map starts when its last item is done or never.
    """
    log = tmp_path_factory.mktemp("dev-crowded") / "dev.log"
    with dev_stack(log, "--driver", "direct", "--sweep-seconds", "86400") as stack:
        now = int(time.time() * 1000)
        seed_jobs(stack, OLD, pipeline="document-intake", first_phase="extract", now_ms=now - 2 * DAY_MS)
        mapped = dev_scale.run_map(stack.base_url, MAPPED, MAP_ITEMS, within=max(120.0, MAP_ITEMS * 2.0))
        time.sleep(max(0.0, JOBS / 1000 - mapped) + 0.01)  # the seeded jobs are made up to JOBS ms before now
        started = time.monotonic()
        assert dev_scale.seed_stack(stack.admin("info"), JOBS, prefix="list") == IDS
        seeding = time.monotonic() - started
        print(f"\na map of {MAP_ITEMS} items in {mapped:.1f} s; {JOBS:,} jobs written in {seeding:.1f} s")
        yield stack


def listings(page: Page) -> list[Request]:
    """The page's ``GET /jobs`` requests (the listing, not a job or the counts), as they are sent."""
    seen: list[Request] = []
    page.on("request", lambda request: seen.append(request) if urlsplit(request.url).path == "/jobs" else None)
    return seen


def totals_shown(page: Page) -> None:
    """Wait until the list shows the totals: its first read, which counts every job after the rows show (slow on a
    loaded machine: the server reads each shard's entries), is over, so the next read the page asks for runs at once."""
    expect(page.get_by_role("list", name="Job totals")).to_contain_text("Total", timeout=SAFETY_MS)


def next_draw(page: Page) -> None:
    """Wait, moving the page's clock on, until the live refresh draws the list again: the note under the list says
    when the rows it shows were read, and a refresh comes a poll interval (2 s on the page's clock) after the last."""
    note = page.locator(".live-note")
    drawn = note.inner_text()
    refreshed(page, lambda: expect(note).not_to_have_text(drawn))


def test_the_first_page_of_hundreds_shows_the_newest_jobs_and_the_totals_from_one_listing(
    browser_page: Page, crowded: DevStack
) -> None:
    page = browser_page
    pause_clock(page)  # no refresh runs by itself: each listing the page sends, a visit sent
    figures = []
    for visit in ("first visit", "reload"):
        sent = listings(page)
        started = time.monotonic()
        page.goto(f"{crowded.base_url}/#/") if visit == "first visit" else page.reload()
        expect(page.locator("tbody tr").first).to_have_attribute("data-job-id", IDS[-1])
        figures.append(f"{visit} {(time.monotonic() - started) * 1000:.0f} ms")
    print(f"\nfirst page of {TOTAL:,} jobs visible after the navigation: {', '.join(figures)}")

    expect(page.locator("tbody tr")).to_have_count(50)
    assert [row.get_attribute("data-job-id") for row in page.locator("tbody tr").all()[:3]] == IDS[-1:-4:-1]
    expect(page.get_by_role("list", name="Job totals")).to_contain_text(f"Total {TOTAL:,}", timeout=SAFETY_MS)
    assert len(sent) == 1, [request.url for request in sent]
    assert "cursor" not in parse_qs(urlsplit(sent[0].url).query)


def test_filters_run_on_the_server_and_stay_in_the_address(browser_page: Page, crowded: DevStack) -> None:
    page = browser_page
    page.goto(f"{crowded.base_url}/#/?prefix=list-0004")
    expect(page.locator("tbody tr")).to_have_count(min(10, max(0, JOBS - 40)))
    expect(page.locator("#filter-prefix")).to_have_value("list-0004")
    totals_shown(page)

    page.locator("#filter-created").select_option("24h")
    expect(page).to_have_url(f"{crowded.base_url}/#/?prefix=list-0004&created=24h")
    page.locator("#filter-prefix").fill("old-")
    expect(page.get_by_text("No job matches these filters")).to_be_visible()  # made two days ago
    page.locator("#filter-created").select_option("7d")
    expect(page.locator("tbody tr")).to_have_count(len(OLD))

    page.reload()
    expect(page.locator("tbody tr")).to_have_count(len(OLD))
    expect(page.locator("#filter-created")).to_have_value("7d")
    expect(page.locator("#filter-prefix")).to_have_value("old-")


def test_a_job_is_found_by_its_id_at_once_and_the_list_takes_the_keyboard(
    browser_page: Page, crowded: DevStack
) -> None:
    page = browser_page
    page.goto(f"{crowded.base_url}/#/")
    expect(page.locator("tbody tr")).to_have_count(50)

    page.keyboard.press("/")
    expect(page.locator("#filter-prefix")).to_be_focused()
    page.keyboard.type(IDS[7])  # far past the first page
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_contain_text(IDS[7])
    expect(page).to_have_url(f"{crowded.base_url}/#/jobs/{IDS[7]}")

    page.goto(f"{crowded.base_url}/#/")
    expect(page.locator("tbody tr")).to_have_count(50)
    page.locator("h1").click()
    page.keyboard.press("j")
    expect(page.locator("tbody tr").nth(0).locator("a.job-link")).to_be_focused()
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    expect(page.locator("tbody tr").nth(1).locator("a.job-link")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_contain_text(IDS[-2])


def test_after_load_more_a_refresh_reads_the_first_page_only(browser_page: Page, crowded: DevStack) -> None:
    page = browser_page
    page.goto(f"{crowded.base_url}/#/")
    expect(page.locator("tbody tr")).to_have_count(50)
    totals_shown(page)
    page.get_by_role("button", name="Load more").click()
    expect(page.locator("tbody tr")).to_have_count(100)
    sent = listings(page)

    next_draw(page)  # two refreshes, each read and drawn
    next_draw(page)
    assert len(sent) >= 2, [request.url for request in sent]
    assert all("cursor" not in parse_qs(urlsplit(request.url).query) for request in sent)
    expect(page.locator("tbody tr")).to_have_count(100)  # the rows Load more brought stay
    assert page.locator("tbody tr").nth(99).get_attribute("data-job-id") == IDS[-100]


def test_times_read_relative_with_the_absolute_time_and_zone_on_hover(browser: Browser, crowded: DevStack) -> None:
    context = browser.new_context(timezone_id="America/New_York", locale="en-US")
    try:
        page = context.new_page()
        page.goto(f"{crowded.base_url}/#/?prefix=old-")
        expect(page.locator("tbody tr")).to_have_count(len(OLD))
        created = page.locator("tbody tr").first.locator("td[data-label=Created] time")

        expect(created).to_have_text("2 days ago")
        expect(created).to_have_attribute(
            "title", re.compile(r"\d{1,2}:\d{2}:\d{2} [AP]M E[SD]T \(America/New_York\)$")
        )

        page.goto(f"{crowded.base_url}/#/?prefix={IDS[-1]}")
        expect(page.locator("tbody tr td[data-label=Created] time")).to_have_text(
            re.compile(r"(now|\d+ (seconds?|minutes?) ago)$")
        )
    finally:
        context.close()


def test_the_map_job_among_them_moved_on_when_its_last_item_was_done(browser_page: Page, crowded: DevStack) -> None:
    page = browser_page
    page.goto(f"{crowded.base_url}/#/?prefix={MAPPED}")
    expect(page.locator("tbody tr")).to_have_count(1)
    expect(page.locator("tbody tr").first).to_have_attribute("data-status", "complete")

    open_job(page, crowded.base_url, MAPPED)
    expect(page.get_by_role("list", name="Maps")).to_contain_text(
        f"Map of extract_page · {MAP_ITEMS} items from split, then publish · {MAP_ITEMS} done, 0 failed"
    )
