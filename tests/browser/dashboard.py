"""What the dashboard's browser tests share: opening a view, its status banner and buttons, the gate's file.

The pipeline the tests drive is ``gated`` (tests/local/gated_pipeline.py), on the ``gated_stack`` fixture.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.sync_api import Locator, Page, Request, expect

from tests.local.devstack import DevStack

POLL_MS = 2000
"""How often the page's live refresh reads the view again (``POLL_MS`` in poller.js)."""
ACTIONS = ("Retry", "Start over", "Rerun from phase", "Pause", "Resume", "Cancel", "Send signal")
"""The job view's buttons, as their accessible names."""


def open_job(page: Page, base_url: str, job_id: str) -> Locator:
    """Open the view of ``job_id``; its status banner, once it shows the job (not "loading")."""
    page.goto(f"{base_url}/#/jobs/{job_id}")
    expect(page.get_by_role("heading", level=1)).to_contain_text(job_id)
    banner = page.get_by_role("status")
    expect(banner).not_to_have_attribute("data-status", "loading")
    return banner


def button(page: Page, name: str) -> Locator:
    """The job view's action button ``name`` (its accessible name, exactly)."""
    return page.get_by_role("group", name="Actions").get_by_role("button", name=name, exact=True)


def expect_focus_in_actions(page: Page) -> None:
    """The keyboard's focus is on an enabled button of the job's actions (not lost to the page's top)."""
    focused = page.get_by_role("group", name="Actions").locator("button:focus")
    expect(focused).to_have_count(1)
    expect(focused).to_be_enabled()


def phases_run(view: dict[str, Any]) -> list[str]:
    """The phases a job's records say ran, in order."""
    return [record["phase"] for record in view["phases"]]


def log_messages(stack: DevStack, job_id: str) -> list[str]:
    """The messages of the job's log, oldest first."""
    return [entry["message"] for entry in stack.api.log(job_id)["entries"]]


def gate(folder: Path, name: str, position: str = "closed") -> Path:
    """A gate's file for the ``gated`` pipeline, reading ``position`` ("closed" makes ``check`` fail)."""
    path = folder / name
    path.write_text(position)
    return path


def failed_job(stack: DevStack, folder: Path, job_id: str, **state: Any) -> Path:
    """Start a ``gated`` job whose gate is closed and wait until ``check`` has failed; the gate's file."""
    closed = gate(folder, f"gate-{job_id}")
    stack.api.start("gated", state={"gate": str(closed), **state}, job_id=job_id)
    view = stack.wait_for(job_id)
    assert (view["status"], view["nextPhase"]) == ("error", "check"), view
    return closed


class Posts:
    """The POST requests a page sends (method and path, e.g. ``POST /jobs/x/retry``), for "nothing was sent"."""

    def __init__(self, page: Page) -> None:
        self.sent: list[str] = []
        page.on("request", self._seen)

    def _seen(self, request: Request) -> None:
        if request.method == "POST":
            self.sent.append(f"POST {urlsplit(request.url).path}")


def is_read_of(url: str, job_id: str) -> bool:
    """Whether ``url`` is the API's ``GET /jobs/<job_id>`` (with or without a query)."""
    return url.split("?", 1)[0].endswith(f"/jobs/{job_id}")


def wait_for_refreshes(page: Page, job_id: str, count: int = 2, *, fast: bool = False) -> None:
    """Wait until the page's live refresh has read the job and shown what it read, ``count`` times.

    The read after them proves it: the refresh reads again only once it has shown its last read.
    ``fast``: on the page's fake clock (``page.clock.install()`` before it loaded), move the page's time on
    in small steps (so that each refresh runs as soon as it is due) instead of waiting out the intervals.
    """
    reads: list[Request] = []

    def seen(request: Request) -> None:
        if request.method == "GET" and is_read_of(request.url, job_id):
            reads.append(request)

    page.on("request", seen)
    try:
        deadline = time.monotonic() + (count + 1) * (POLL_MS / 1000 + 5)
        while len(reads) < count + 1:
            assert time.monotonic() < deadline, f"the page read {job_id} {len(reads)} times, not {count + 1}"
            if fast:
                page.clock.run_for(POLL_MS // 20)
            else:
                page.wait_for_timeout(50)
    finally:
        page.remove_listener("request", seen)
