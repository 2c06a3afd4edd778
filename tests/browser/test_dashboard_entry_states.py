"""What each phase saw, in chromium: the state a phase was entered with, and what changed between two phases'.

The pipeline is ``gated`` (tests/local/gated_pipeline.py): each phase adds its name to ``ran``, so the state
entering ``finish`` holds ``["gather", "check"]`` and the state entering ``check`` ``["gather"]``.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests.browser.dashboard import open_job
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")


def test_the_panel_shows_a_phases_entry_state_and_a_diff_between_two(browser_page: Page, gated_stack: DevStack) -> None:
    gated_stack.api.start("gated", state={"note": "seen"}, job_id="saw-1")
    gated_stack.wait_for("saw-1")
    page = browser_page
    banner = open_job(page, gated_stack.base_url, "saw-1")
    expect(banner).to_have_attribute("data-status", "complete")
    panel = page.get_by_role("region", name="What each phase saw")
    phase = panel.get_by_label("State entering")
    expect(phase.locator("option")).to_have_text(["gather", "check", "finish"])

    phase.select_option("finish")
    panel.get_by_role("button", name="Show").click()
    shown = panel.locator("pre.json")
    expect(shown).to_contain_text('"note": "seen"')
    entered = json.loads(shown.inner_text())
    assert entered["ran"] == ["gather", "check"]  # what gather and check had done when finish began

    panel.get_by_label("Compared with").select_option("check")
    panel.get_by_role("button", name="Show").click()
    changes = panel.get_by_role("list", name="Changes")
    expect(changes.locator("li")).to_have_count(1)
    expect(changes.locator("li")).to_contain_text('/ran/1: "check"')
    expect(changes.locator("li.added")).to_have_count(1)
    expect(panel).to_contain_text("1 change from the state entering check to the state entering finish")

    panel.get_by_label("Compared with").select_option("finish")
    panel.get_by_role("button", name="Show").click()
    expect(panel).to_contain_text("No change: finish was entered with the state finish was.")


def test_a_phase_the_job_has_not_entered_says_so(browser_page: Page, gated_stack: DevStack) -> None:
    gated_stack.api.start("gated", state={"wait_for": "go"}, job_id="saw-2")  # waits after gather for "go"
    view = gated_stack.wait_for("saw-2", statuses=("waiting",))
    assert view["status"] == "waiting"
    page = browser_page
    open_job(page, gated_stack.base_url, "saw-2")
    panel = page.get_by_role("region", name="What each phase saw")
    panel.get_by_label("State entering").select_option("finish")
    panel.get_by_role("button", name="Show").click()
    expect(panel.get_by_role("alert")).to_contain_text('keeps no state for phase "finish"')
