"""The version a job's state was saved with, in chromium: "state v3" in the checkpoint panel and beside a phase's
entry state, "state v1" for a checkpoint that records none (every checkpoint saved before versions)."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from cairn.core.models import Checkpoint
from cairn.core.transitions.requests import Claim, StartJob
from tests.browser.dashboard import open_job
from tests.browser.seed import DAY_MS, dev_storage
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")


def seed(stack: DevStack, job_id: str, version: int | None, *, entered: bool = False) -> None:
    """A "gated" job at "gather" (nothing scheduled) whose checkpoint records ``version``; ``entered``: a run of
    "gather" holds it, so the state entering "gather" is kept (a job only waiting to enter a phase has none)."""
    now = int(time.time() * 1000)
    checkpoint = Checkpoint(next_phase="gather", state={"note": job_id}, created_at=now, state_version=version)
    storage = dev_storage(stack)
    storage.start_job(
        StartJob(
            job_id=job_id,
            pipeline="gated",
            checkpoint=checkpoint,
            now_ms=now,
            expires_at=now + DAY_MS,
            seen=None,
            ttl_seconds=86_400,
            input={"note": job_id},
        )
    )
    if entered:
        lease = now + DAY_MS
        storage.claim(
            Claim(job_id, "gated", "gather", worker="test", now_ms=now, lease_expires_at=lease, expires_at=lease)
        )


def test_the_checkpoint_and_an_entry_state_show_the_state_version(browser_page: Page, gated_stack: DevStack) -> None:
    seed(gated_stack, "versioned-3", 3, entered=True)
    seed(gated_stack, "versioned-1", None)
    page = browser_page

    open_job(page, gated_stack.base_url, "versioned-3")
    checkpoint = page.get_by_role("region", name="Checkpoint")
    expect(checkpoint.locator("[data-state-version]")).to_have_text("state v3")
    panel = page.get_by_role("region", name="What each phase saw")
    panel.get_by_label("State entering").select_option("gather")
    panel.get_by_role("button", name="Show").click()
    expect(panel).to_contain_text("(state v3):")

    open_job(page, gated_stack.base_url, "versioned-1")
    expect(page.get_by_role("region", name="Checkpoint").locator("[data-state-version]")).to_have_text("state v1")
