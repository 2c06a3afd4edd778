"""When the API stops answering, in chromium: the page says "Offline", disables every action, and recovers by
itself once the API answers again. The API is cut off by failing the page's requests to it (``page.route``),
as a stopped ``cairn dev`` or a lost network would."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, expect

from tests.browser.dashboard import button, open_job, refreshed
from tests.browser.test_dashboard_controls import held
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")

API_CALLS = re.compile(r".*/(jobs|pipelines)([/?].*)?$")


def cut_off(page: Page) -> None:
    def unreachable(route: Route) -> None:
        route.abort("connectionrefused")

    page.route(API_CALLS, unreachable)


def test_the_job_view_goes_offline_disables_its_actions_and_recovers(
    browser_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    state, hold = held(tmp_path, "offline-job")
    gated_stack.api.start("gated", state=state, job_id="offline-job")
    page = browser_page
    banner = open_job(page, gated_stack.base_url, "offline-job")
    expect(banner).to_have_attribute("data-status", "running")
    indicator = page.locator("#connection")
    expect(indicator).to_have_text("Live")
    expect(button(page, "Pause")).to_be_enabled()

    cut_off(page)

    refreshed(page, lambda: expect(indicator).to_have_attribute("data-state", "offline"))
    expect(indicator).to_contain_text("Offline since")
    for name in ("Pause", "Cancel", "Start over", "Retry"):
        expect(button(page, name)).to_be_disabled()
    expect(button(page, "Pause")).to_have_attribute("title", re.compile("The API does not answer"))
    expect(page.get_by_role("alert")).to_contain_text("The API did not answer")

    page.unroute(API_CALLS)

    refreshed(page, lambda: expect(indicator).to_have_text("Live"))
    expect(button(page, "Pause")).to_be_enabled()  # the job's own rules again: it is still running
    expect(button(page, "Resume")).to_be_disabled()
    expect(page.get_by_role("alert")).to_have_text("")
    hold.unlink()
    refreshed(page, lambda: expect(banner).to_have_attribute("data-status", "complete"))


def test_the_jobs_list_says_offline_with_the_time_it_was_read_and_recovers(
    browser_page: Page, gated_stack: DevStack
) -> None:
    page = browser_page
    page.goto(f"{gated_stack.base_url}/#/")
    note = page.locator(".live-note")
    expect(note).to_contain_text("live, updated")

    cut_off(page)

    refreshed(page, lambda: expect(note).to_contain_text("offline, as read at"))
    expect(note).to_have_attribute("data-state", "offline")
    expect(page.locator("#connection")).to_contain_text("Offline since")

    page.unroute(API_CALLS)

    refreshed(page, lambda: expect(note).to_contain_text("live, updated"))
    expect(page.locator("#connection")).to_have_text("Live")
