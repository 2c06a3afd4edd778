"""The dashboard's screenshots in docs/screenshots, taken again: ``make screenshots``.

    python -m tests.browser.screenshots [--out docs/screenshots]

Starts ``cairn dev --driver direct`` on this bundle (free ports), starts ``document-intake`` jobs that end
complete, end in error, are paused, are cancelled and stay running a while, and photographs the dashboard it
serves with Debian's chromium (Playwright's sync API, never a browser of Playwright's own): the jobs view
(jobs.png), filtered to the complete jobs with the totals (jobs-filtered.png), the bulk retry dialog for every
failed job (bulk-dialog.png), then the job view of the running job (job-running.png), of the failed one with its
traceback open (job-error.png: its export path cannot be written) and of a complete one (job-complete.png), and
of a job whose pages a map extracted, its lane and one item open (job-map.png), and the failed jobs grouped by
exception type, phase and pipeline (failures.png). Each view is photographed once
it shows the expected status and its data (the jobs' rows; the job's banner, timeline, log and usage) and no
alert; else the command fails, saying what the view showed instead."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, ViewportSize, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from cairn.client import RequestFailed
from cairn.core.errors import CairnError
from tests.browser.chromium import CHROMIUM, CHROMIUM_ARGS, MISSING, chromium_installed
from tests.local.devstack import ROOT, DevStack, dev_stack

PIPELINE = "document-intake"
VIEWPORT: ViewportSize = {"width": 1280, "height": 900}
"""A laptop's window; the PNGs are this size (device scale factor 1)."""
TIMEOUT_MS = 15_000
"""How long a view may take to show what it should."""
RUNNING_PAGES = 2
"""Pages the running job has extracted (and saved) before it is photographed: its log shows progress."""


class ScreenshotError(Exception):
    """A job did not reach the status it should have, or a view did not show what it should."""


class ViewError(ScreenshotError):
    """A view did not show what it should (what it showed instead is in the message)."""


@dataclass(frozen=True)
class Seed:
    """A job to start: its id, its initial state, the status it has when the views are photographed.

    ``then`` is what to do once it has saved a page: ``"pause"`` or ``"cancel"`` (an ApiClient method);
    ``phase`` the next phase it shows then (a paused job stops at its next phase boundary, not at once).
    """

    job_id: str
    state: dict[str, Any]
    status: str
    then: str | None = None
    phase: str | None = None


RUNNING = "annual-report"
SEEDS = (
    Seed("invoice-march", {"document": "invoice.txt"}, "complete"),
    # Two seconds a page: a loaded machine still pauses or cancels these before their last page is done.
    Seed("vendor-contract", {"document": "contract.txt", "page_seconds": 2}, "cancelled", then="cancel"),
    Seed("missing-scan", {"document": "missing.txt"}, "error"),
    # Its export path cannot be written: publish raises (OSError, retried twice), so the job keeps a traceback.
    Seed("broken-export", {"document": "invoice.txt", "output_path": "/proc/cairn-export/result.json"}, "error"),
    Seed("report-draft", {"document": "report.txt", "page_seconds": 2}, "paused", then="pause", phase="publish"),
    Seed("contract-review", {"document": "contract.txt"}, "complete"),
    # Its pages extracted by a map, two at a time: its view draws the map as one lane.
    Seed("contract-pages", {"document": "contract.txt", "page_concurrency": 2}, "complete"),
    # Five pages, five seconds after each: about 25 s in ``extract``, long enough to photograph it running
    # once the others have settled (the paused one only stops when its own extract ends, about 10 s in).
    Seed(RUNNING, {"document": "report.txt", "page_seconds": 5}, "running"),
)
"""Started in this order: the jobs view lists them newest first."""


@dataclass(frozen=True)
class Shot:
    """One screenshot: its file, the route it shows, the selectors that must match before it is taken."""

    file: str
    route: str
    ready: Sequence[str]
    status: str | None = None
    """The job view's banner status (``data-status``) it waits for; None for the jobs view."""
    act: Callable[[Page], None] | None = None
    """What to do on the view once it is ready, before the picture (open a dialog, unfold a traceback)."""


def _unfold_failures(page: Page) -> None:
    page.evaluate("for (const details of document.querySelectorAll('details.failure')) details.open = true")


def _show_map(page: Page) -> None:
    page.locator(".maps").scroll_into_view_if_needed()
    page.locator(".map-lane button").last.click()
    page.wait_for_selector(".map-item-detail h4", timeout=TIMEOUT_MS)
    page.locator(".timeline-panel").evaluate("(panel) => panel.scrollIntoView()")


def _open_bulk_retry(page: Page, *, tries: int = 3) -> None:
    """Open the bulk retry of every failed job, once it has read them (opened again if a read came back short)."""
    for attempt in range(1, tries + 1):
        page.get_by_role("button", name="Retry all", exact=True).click()
        try:
            page.wait_for_selector("#bulk-dialog [data-slot=confirm]:not([disabled])", timeout=TIMEOUT_MS)
            return
        except PlaywrightError:
            summary = " ".join(page.locator("#bulk-dialog [data-slot=summary]").inner_text().split())
            if attempt == tries:
                raise ViewError(f"the bulk retry dialog never offered the failed jobs: {summary!r}") from None
            page.keyboard.press("Escape")


def _job_shot(file: str, job_id: str, status: str, *more: str, act: Callable[[Page], None] | None = None) -> Shot:
    """The job view of ``job_id`` once its banner says ``status`` and its timeline and log are drawn."""
    return Shot(
        file,
        f"#/jobs/{job_id}",
        (
            f'[role="status"][data-status="{status}"]',
            ".timeline .timeline-row",
            "ol.log > li:not(.empty-log)",
            ".usage > *",
            *more,
        ),
        status,
        act,
    )


SHOTS = (
    Shot(
        "jobs.png",
        "#/",
        (
            *(f'tr[data-job-id="{seed.job_id}"][data-status="{seed.status}"]' for seed in SEEDS),
            "ul.status-counts > li",
        ),
    ),
    Shot(
        "jobs-filtered.png",
        "#/?status=complete",
        (
            *(f'tr[data-job-id="{seed.job_id}"]' for seed in SEEDS if seed.status == "complete"),
            'ul.status-counts button[aria-pressed="true"]',
        ),
    ),
    Shot(
        "bulk-dialog.png",
        "#/?status=error",
        tuple(f'tr[data-job-id="{seed.job_id}"]' for seed in SEEDS if seed.status == "error"),
        act=_open_bulk_retry,
    ),
    _job_shot("job-running.png", RUNNING, "running"),
    _job_shot("job-error.png", "broken-export", "error", "details.failure", act=_unfold_failures),
    _job_shot("job-complete.png", "contract-review", "complete", ".result > *"),
    _job_shot("job-map.png", "contract-pages", "complete", ".map-lane", act=_show_map),
    Shot("failures.png", "#/failures?since=24h", (".failures-table:not([hidden]) tbody tr",)),
)


def _pages(job: dict[str, Any]) -> int:
    """How many pages the job has extracted, by its checkpoint's state."""
    return len((job.get("state") or {}).get("results") or [])


def _settled(seed: Seed, job: dict[str, Any]) -> bool:
    """Whether ``job`` is as ``seed`` should be photographed, or will never be."""
    if job["status"] == "running":
        return seed.job_id == RUNNING and _pages(job) >= RUNNING_PAGES
    return job["status"] != seed.status or seed.phase is None or job.get("nextPhase") == seed.phase


def seed_jobs(stack: DevStack, timeout: float = 60.0) -> None:
    """Start the jobs; return once each has its status and the running one has saved a few pages."""
    for seed in SEEDS:
        stack.api.start(PIPELINE, state=seed.state, job_id=seed.job_id)
    for seed in SEEDS:
        if seed.then is not None:
            stack.wait_until(seed.job_id, lambda job: job["status"] != "running" or _pages(job) >= 1, timeout)
            getattr(stack.api, seed.then)(seed.job_id)
    for seed in SEEDS:
        view = stack.wait_until(seed.job_id, partial(_settled, seed), timeout)
        if view["status"] != seed.status:
            raise ScreenshotError(f"job {seed.job_id} is {view['status']}, not {seed.status}: {view.get('error')}")


def _describe(page: Page) -> str:
    """What the page shows instead: its banner's status and text, its alert."""
    parts = []
    banner = page.locator('[role="status"]')
    if banner.count():
        text = " ".join(banner.first.inner_text().split())
        parts.append(f"banner {banner.first.get_attribute('data-status')!r}: {text}")
    alert = " ".join(page.locator("#alert").inner_text().split())
    if alert:
        parts.append(f"alert: {alert}")
    return "; ".join(parts) or "no banner, no alert"


def photograph(page: Page, base_url: str, shot: Shot, out: Path) -> Path:
    """Open ``shot``'s route, wait until it shows its data, save the PNG in ``out``; its path."""
    page.goto(f"{base_url}/{shot.route}")
    for selector in shot.ready:
        try:
            page.wait_for_selector(selector, state="attached", timeout=TIMEOUT_MS)
        except PlaywrightError:
            raise ViewError(
                f"{shot.route} did not show {selector} within {TIMEOUT_MS / 1000:g}s ({_describe(page)})"
            ) from None
    if shot.act is not None:
        shot.act(page)
    page.evaluate("document.fonts.ready")
    alert = " ".join(page.locator("#alert").inner_text().split())
    if alert:
        raise ViewError(f"{shot.route} shows an alert: {alert}")
    if shot.status is not None:
        status = page.locator('[role="status"]').get_attribute("data-status")
        if status != shot.status:
            raise ViewError(f"{shot.route} shows {status!r}, not {shot.status!r} ({_describe(page)})")
    path = out / shot.file
    page.screenshot(path=str(path), animations="disabled", caret="hide")
    return path


def take_screenshots(stack: DevStack, browser: Browser, out: Path) -> list[Path]:
    """Start the jobs on ``stack`` and photograph its dashboard with ``browser`` into ``out``: the PNGs."""
    out.mkdir(parents=True, exist_ok=True)
    seed_jobs(stack)
    context = browser.new_context(
        viewport=VIEWPORT, device_scale_factor=1, color_scheme="light", locale="en-US", timezone_id="UTC"
    )
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        return [photograph(page, stack.base_url, shot, out) for shot in SHOTS]
    finally:
        context.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Take the screenshots; 0, or 1 with a message on stderr."""
    parser = argparse.ArgumentParser(prog="python -m tests.browser.screenshots", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots", help="default: docs/screenshots")
    args = parser.parse_args(argv)
    if not chromium_installed():
        print(f"screenshots: {MISSING}", file=sys.stderr)
        return 1
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cairn-screenshots-") as scratch:
        log = Path(scratch) / "dev.log"
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
                try:
                    with dev_stack(log, "--driver", "direct") as stack:
                        paths = take_screenshots(stack, browser, args.out)
                finally:
                    browser.close()
        except (ScreenshotError, AssertionError, PlaywrightError, CairnError, RequestFailed) as exc:
            print(f"screenshots: {exc}", file=sys.stderr)
            if log.is_file() and not isinstance(exc, (ViewError, PlaywrightError)):
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
                print(f"cairn dev's log ends:\n{tail}", file=sys.stderr)
            return 1
    for path in paths:
        print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")
    print(f"{len(paths)} screenshots in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
