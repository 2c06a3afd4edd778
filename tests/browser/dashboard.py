"""What the dashboard's browser tests share: opening a view, its status banner and buttons, the gate's file, and
waiting for the page's live refresh on the page's clock.

The pipeline the tests drive is ``gated`` (tests/local/gated_pipeline.py), on the ``gated_stack`` fixture.

The pages of the fixtures run on Playwright's clock (``page.clock.install()`` before they load): time flows as it
does, and a test that waits for the live refresh to show a change moves the page's clock on instead of waiting out
its intervals (:func:`refreshed`). Real work on the server (a job running in ``cairn dev``) still takes real time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.sync_api import Locator, Page, Request, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.local.devstack import DevStack

TIMEOUT_MS = 15_000
"""How long a page action or an expectation waits by default."""
POLL_MS = 2000
"""How often the page's live refresh reads the view again (``POLL_MS`` in poller.js)."""
SETTLED_POLL_MS = 60_000
"""How often a complete, failed or cancelled job's view reads it again (``SETTLED_POLL_MS`` in view-job.js)."""
LOOK_MS = 500
"""How long (real time) one look at the page waits for what a test expects before the page's clock moves on."""
SAFETY_S = 180.0
"""The most real time a wait for the live refresh (or for the server's work it shows) takes before the test fails:
a safety net for a loaded machine, never a measure of speed."""
SAFETY_MS = int(SAFETY_S * 1000)
"""The same, as an expectation's ``timeout``: for what waits on the server's real work, not on a refresh."""
PAUSE_AHEAD_S = 5.0
"""How far ahead of the page's time :func:`pause_clock` stops it: time passes while the test asks the page for its
time, and the clock cannot be paused in its past."""
ACTIONS = ("Nudge", "Retry", "Start over", "Rerun from phase", "Pause", "Resume", "Cancel", "Send signal")
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


@contextmanager
def expectations_timing_out_after(timeout_ms: float) -> Iterator[None]:
    """Within the block, an expectation made without its own ``timeout`` gives up after ``timeout_ms``."""
    expect.set_options(timeout=timeout_ms)
    try:
        yield
    finally:
        expect.set_options(timeout=TIMEOUT_MS)


def refreshed(
    page: Page, check: Callable[[], object], *, safety_s: float = SAFETY_S, interval_ms: int | None = None
) -> None:
    """Wait until ``check`` holds of the page, moving the page's clock on one live-refresh interval after each look.

    ``check`` makes expectations (``expect(...)``, asserts): each look gives its expectations ``LOOK_MS`` of real
    time; while one fails, ``page.clock.run_for(POLL_MS)`` runs the refresh that is due, and the check looks again
    (``interval_ms``: the refresh's interval where it is not ``POLL_MS``, a settled job's ``SETTLED_POLL_MS``).
    The page's clock must be Playwright's (the fixtures' pages are). A refresh still in flight is not hurried: the
    poller sets its next timer when a read ends, so a step during a read moves only the time the page shows.
    Fails, with the check's last failure, after ``safety_s`` seconds of real time.
    """
    deadline = time.monotonic() + safety_s
    intervals = 0
    while True:
        try:
            with expectations_timing_out_after(LOOK_MS):
                check()
            return
        except AssertionError as failure:
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"not so after {safety_s:g} s of real time, the page's clock moved on {intervals} refresh "
                    f"intervals of {interval_ms or POLL_MS} ms: {failure}"
                ) from failure
        page.clock.run_for(interval_ms or POLL_MS)
        intervals += 1


def pause_clock(page: Page) -> None:
    """Stop the page's clock, a moment (``PAUSE_AHEAD_S``) on from its time now: from then on no timer fires, so the
    live refresh does not run, until the test moves the clock on. A refresh due within that moment runs."""
    page.clock.pause_at(page.evaluate("() => Date.now()") / 1000 + PAUSE_AHEAD_S)


def wait_for_refreshes(page: Page, job_id: str, count: int = 2, *, settled: bool = False) -> None:
    """Wait until the page's live refresh has read the job and shown what it read, ``count`` times, on its clock
    (``settled``: a complete, failed or cancelled job, which the page reads every ``SETTLED_POLL_MS``).

    The read after them proves it: the refresh reads again only once it has shown its last read.
    """
    reads: list[Request] = []

    def is_read(request: Request) -> bool:
        return request.method == "GET" and is_read_of(request.url, job_id)

    def seen(request: Request) -> None:
        if is_read(request):
            reads.append(request)

    def read_again() -> None:
        if len(reads) <= count:  # a look: until the page reads the job again (``seen`` keeps it too), or LOOK_MS
            with suppress(PlaywrightTimeoutError):
                page.wait_for_event("request", is_read, timeout=LOOK_MS)
        assert len(reads) > count, f"the page read {job_id} {len(reads)} times, not {count + 1}"

    page.on("request", seen)
    try:
        refreshed(page, read_again, interval_ms=SETTLED_POLL_MS if settled else None)
    finally:
        page.remove_listener("request", seen)
