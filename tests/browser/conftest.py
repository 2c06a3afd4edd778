"""Fixtures of the browser tests: Debian's chromium driven by Playwright (sync API), and the dashboard of ``cairn dev``.

The browser is ``/usr/bin/chromium`` (``make test`` installs it); Playwright's own browser download is never
used. Without it the tests skip, unless ``BROWSER_REQUIRED=1`` (what ``make test`` sets), where they fail.
Browser tests run on two pytest-xdist workers (``--dist loadgroup``), a group each, of about equal time: mark a
module ``pytestmark = pytest.mark.xdist_group("browser-1")`` if it uses ``gated_stack`` (started once per worker
that needs it: one), else ``"browser-2"`` (the modules that start a ``cairn dev`` of their own: the 1,000-job
list, the screenshots, a reloading or a loaded stack, ``dashboard_stack``); test_dashboard_cost.py, on a stack of
its own, is in "browser-1" to even out the two groups' times (as ``--durations=0`` measures them). Each worker has
its own browser, its own stacks, on free ports.

Their pages run on Playwright's clock (installed before they load): a test waiting for the live refresh moves the
page's clock on (tests.browser.dashboard.refreshed) instead of waiting out the refresh's intervals.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from tests.browser.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.browser.dashboard import TIMEOUT_MS
from tests.local.devstack import DevStack, dev_stack, scratch_project

expect.set_options(timeout=TIMEOUT_MS)  # a context's default timeout reaches page actions, not ``expect``


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's chromium; skip (or fail, with ``BROWSER_REQUIRED=1``) when it is not installed."""
    if CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    message = f"{CHROMIUM} is missing: run `make chromium` (or apt-get install chromium) first"
    if os.environ.get("BROWSER_REQUIRED") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def browser(chromium: Path) -> Iterator[Browser]:
    """One headless chromium for the session."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS, headless=True)
        try:
            yield launched
        finally:
            launched.close()


def clocked_page(context: BrowserContext) -> Page:
    """A new page of ``context`` on Playwright's clock, installed before anything loads: time flows as it does
    until a test moves it on (tests.browser.dashboard.refreshed) or pauses it."""
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.clock.install()
    return page


@pytest.fixture
def browser_page(browser: Browser) -> Iterator[Page]:
    """A page in a fresh browser context (no cookies or storage from another test), at a laptop's width, on
    Playwright's clock."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        yield clocked_page(context)
    finally:
        context.close()


@pytest.fixture
def phone_page(browser: Browser) -> Iterator[Page]:
    """A page in a fresh browser context at a phone's size (390x844, touch), on Playwright's clock."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        yield clocked_page(context)
    finally:
        context.close()


@pytest.fixture(scope="session")
def dashboard_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """``cairn dev`` on this bundle's template.yaml (direct driver) on free ports, shared by the modules that use it
    (each names its own jobs): one start of the stack per test process."""
    log = tmp_path_factory.mktemp("dev-dashboard") / "dev.log"
    with dev_stack(log, "--driver", "direct") as stack:
        yield stack


@pytest.fixture(scope="session")
def dev_dashboard(dashboard_stack: DevStack) -> str:
    """The base URL of ``cairn dev``, which serves the dashboard at ``/`` and its API beside it."""
    return dashboard_stack.base_url


@pytest.fixture(scope="session")
def gated_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """``cairn dev --driver direct`` on a copy of the bundle with the ``gated`` pipeline, shared by the modules
    of the dashboard's tests (each names its own jobs): one start of the stack instead of one per module.

    The pipeline is tests/local/gated_pipeline.py: ``gather`` (holds, or waits for a signal), ``check`` (fails
    while its gate file reads "closed"), ``finish``. The bundle's ``document-intake`` is there too, and
    tests/local/held_map_pipeline.py (a map whose items a test holds).
    """
    project = scratch_project(tmp_path_factory.mktemp("gated-project"), ("gated", "held_map"))
    with dev_stack(project / "dev.log", "--driver", "direct", cwd=project) as stack:
        yield stack
