"""A stalled job in the dashboard, in chromium: the list's badge, filter and count, the job's "Stalled" banner (since,
why, what the sweep will do and when), and Nudge (asked first, announced) moving it on to complete.

The job is written into ``cairn dev``'s table as a worker that died after a commit leaves it: running at its first
phase, last written an hour ago, no claim, nothing scheduled (no real wait for the sweep's idle time).
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, expect

from cairn.core.models import Checkpoint
from cairn.core.transitions.requests import StartJob
from tests.browser.dashboard import button, log_messages, open_job, refreshed
from tests.browser.seed import dev_storage
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")

HOUR_MS = 3_600_000


def stalled_job(stack: DevStack, job_id: str) -> None:
    """A ``gated`` job left running at ``gather`` an hour ago with no worker and no advance on its way."""
    written = int(time.time() * 1000) - HOUR_MS
    state = {"note": job_id}
    dev_storage(stack).start_job(
        StartJob(
            job_id=job_id,
            pipeline="gated",
            checkpoint=Checkpoint(next_phase="gather", state=state, created_at=written),
            now_ms=written,
            expires_at=written + 7 * 24 * HOUR_MS,
            seen=None,
            ttl_seconds=7 * 86_400,
            input=state,
        )
    )


def test_the_list_badges_filters_and_counts_a_stalled_job(browser_page: Page, gated_stack: DevStack) -> None:
    stalled_job(gated_stack, "listing-stalled")
    gated_stack.api.start("gated", state={"note": "moving"}, job_id="listing-moving")
    assert gated_stack.wait_for("listing-moving")["status"] == "complete"
    page = browser_page
    page.goto(f"{gated_stack.base_url}/#/?prefix=listing-")  # the stalled job is an hour old: not on page 1 of all

    row = page.get_by_role("row").filter(has=page.get_by_role("link", name="listing-stalled", exact=True))
    expect(row).to_contain_text("stalled")
    done = page.get_by_role("row").filter(has=page.get_by_role("link", name="listing-moving", exact=True))
    expect(done).not_to_contain_text("stalled")
    totals = page.get_by_role("list", name="Job totals")
    expect(totals.get_by_role("button", name=re.compile(r"^Stalled \d+$"))).to_be_visible()

    page.locator("#filter-status").select_option("stalled")

    expect(page.get_by_role("link", name="listing-moving", exact=True)).to_have_count(0)
    expect(page.get_by_role("link", name="listing-stalled", exact=True)).to_be_visible()
    assert "status=stalled" in page.url
    expect(totals.get_by_role("button", name=re.compile(r"^Stalled"))).to_have_attribute("aria-pressed", "true")


def test_the_job_says_stalled_since_why_and_what_the_sweep_does_and_nudge_moves_it(
    browser_page: Page, gated_stack: DevStack
) -> None:
    stalled_job(gated_stack, "stalled-nudged")
    sequence = gated_stack.api.get("stalled-nudged")["sequence"]
    page = browser_page
    banner = open_job(page, gated_stack.base_url, "stalled-nudged")

    expect(banner).to_have_attribute("data-status", "stalled")
    expect(banner.locator(".banner-title")).to_have_text("Stalled")
    expect(banner).to_contain_text("no worker holds it")
    expect(banner).to_contain_text(
        re.compile(rf"The sweep will revive: schedule gather again at sequence {sequence} by [^;]+; Nudge does it now")
    )
    expect(banner).not_to_contain_text("so far")
    timeline = page.get_by_role("region", name="Timeline")
    expect(timeline).to_contain_text("stalled since")
    expect(timeline).not_to_contain_text("so far")
    nudge = button(page, "Nudge")
    expect(nudge).to_be_enabled()
    expect(nudge).to_have_class(re.compile(r"\bprimary\b"))

    nudge.click()
    dialog = page.get_by_role("dialog", name="Nudge this stalled job?")
    expect(dialog).to_contain_text("no worker holds it")
    expect(dialog).to_contain_text(f"revive: schedule gather again at sequence {sequence}")
    dialog.get_by_role("button", name="Nudge now").click()

    expect(dialog).to_be_hidden()
    expect(page.locator("#announcer")).to_have_text(f"Nudge: “gather” is scheduled again at sequence {sequence}.")
    refreshed(page, lambda: expect(banner).to_have_attribute("data-status", "complete"))
    expect(nudge).to_be_hidden()  # no longer stalled: the button goes
    nudged = [message for message in log_messages(gated_stack, "stalled-nudged") if message.startswith("Nudged")]
    assert len(nudged) == 1
    assert nudged[0].startswith(f"Nudged: gather scheduled again at sequence {sequence} by ")
