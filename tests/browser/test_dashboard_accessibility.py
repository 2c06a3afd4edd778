"""axe-core over every main view of the dashboard, with 0 serious or critical findings: the list (at a laptop's
width and at a phone's), a job running, failed, waiting and complete, a map and its item, the start form, and
each dialog open, and the list and a map in dark mode. The helper is tests/browser/accessibility.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.accessibility import axe_context, expect_accessible
from tests.browser.dashboard import button, failed_job, gate, open_job
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")

LAPTOP = {"width": 1280, "height": 800}
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A laptop-sized page that lets axe-core in."""
    with axe_context(browser, viewport=LAPTOP) as opened:
        yield opened


@pytest.fixture(scope="module")
def jobs(gated_stack: DevStack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One job of each kind the views show: failed, complete, waiting for a signal, running, and a map's."""
    folder = tmp_path_factory.mktemp("axe")
    failed_job(gated_stack, folder, "axe-failed")
    gated_stack.api.start("gated", state={"gate": str(gate(folder, "open-gate", "open"))}, job_id="axe-complete")
    gated_stack.api.start("gated", state={"wait_for": "approve"}, job_id="axe-waiting")
    hold = folder / "hold"
    hold.write_text("hold")
    gated_stack.api.start("gated", state={"hold_while": str(hold)}, job_id="axe-running")
    gated_stack.api.start(
        "document-intake", state={"document": "contract.txt", "page_concurrency": 2}, job_id="axe-map"
    )
    assert gated_stack.wait_for("axe-complete")["status"] == "complete"
    assert gated_stack.wait_for("axe-map")["status"] == "complete"
    gated_stack.wait_for("axe-waiting", ("waiting",))
    gated_stack.running("axe-running", "gather")
    return {"running": "axe-running", "failed": "axe-failed", "complete": "axe-complete", "waiting": "axe-waiting"}


def test_the_list_its_dialogs_and_the_start_form(page: Page, gated_stack: DevStack, jobs: dict[str, str]) -> None:
    page.goto(f"{gated_stack.base_url}/#/")
    expect(page.get_by_role("link", name=jobs["failed"])).to_be_visible()
    expect_accessible(page, "the list")

    page.get_by_role("group", name="Act on many jobs").get_by_role("button", name="Retry all").click()
    expect(page.locator("#bulk-dialog")).to_be_visible()
    expect_accessible(page, "the bulk dialog")
    page.keyboard.press("Escape")

    page.get_by_role("button", name="API token").click()
    expect(page.locator("#token-dialog")).to_be_visible()
    expect_accessible(page, "the token dialog")
    page.keyboard.press("Escape")

    page.get_by_role("link", name="Start a job").click()
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    expect(page.locator("select, textarea").first).to_be_visible()
    expect_accessible(page, "the start form")


def test_the_list_at_a_phones_width(browser: Browser, gated_stack: DevStack, jobs: dict[str, str]) -> None:
    with axe_context(browser, **PHONE) as phone:
        phone.goto(f"{gated_stack.base_url}/#/")
        expect(phone.get_by_role("link", name=jobs["failed"])).to_be_visible()
        expect_accessible(phone, "the list at 390 px")
        phone.get_by_role("button", name="Filters").click()
        expect_accessible(phone, "the list at 390 px, its filters open")


@pytest.mark.parametrize("kind", ["running", "complete", "waiting"])
def test_a_job_view(page: Page, gated_stack: DevStack, jobs: dict[str, str], kind: str) -> None:
    open_job(page, gated_stack.base_url, jobs[kind])
    expect(page.get_by_role("region", name="Timeline")).to_be_visible()
    expect_accessible(page, f"a {kind} job")
    if kind == "waiting":
        button(page, "Send signal").click()
        expect(page.locator("#signal-dialog")).to_be_visible()
        expect_accessible(page, "the signal dialog")


def test_a_failed_job_and_its_restart_dialogs(page: Page, gated_stack: DevStack, jobs: dict[str, str]) -> None:
    banner = open_job(page, gated_stack.base_url, jobs["failed"])
    expect(banner).to_have_attribute("data-status", "error")
    expect_accessible(page, "a failed job")

    for name, dialog in (("Start over", "#full-dialog"), ("Rerun from phase", "#rerun-dialog")):
        button(page, name).click()
        expect(page.locator(dialog)).to_be_visible()
        expect_accessible(page, f"the {name} dialog")
        page.keyboard.press("Escape")
        expect(page.locator(dialog)).to_be_hidden()


def test_dark_mode_the_list_and_a_map(browser: Browser, gated_stack: DevStack, jobs: dict[str, str]) -> None:
    with axe_context(browser, viewport=LAPTOP, color_scheme="dark") as dark:
        dark.goto(f"{gated_stack.base_url}/#/")
        expect(dark.get_by_role("link", name=jobs["failed"])).to_be_visible()
        expect_accessible(dark, "the list, dark")
        open_job(dark, gated_stack.base_url, "axe-map")
        expect(dark.get_by_role("list", name="Maps").locator("li.map-lane")).to_have_count(1)
        expect_accessible(dark, "the map view, dark")


def test_a_map_and_one_of_its_items(page: Page, gated_stack: DevStack, jobs: dict[str, str]) -> None:
    open_job(page, gated_stack.base_url, "axe-map")
    maps = page.get_by_role("list", name="Maps")
    expect(maps.locator("li.map-lane")).to_have_count(1)
    expect_accessible(page, "the map view")

    maps.get_by_role("list", name="Slowest items").get_by_role("button").first.click()
    expect(page.locator(".map-item-detail").get_by_role("heading", level=4)).to_be_visible()
    expect_accessible(page, "a map item")
