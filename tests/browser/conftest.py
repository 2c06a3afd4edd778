"""Fixtures of the browser tests: Debian's chromium driven by Playwright (sync API), and the dashboard of ``cairn dev``.

The browser is ``/usr/bin/chromium`` (``make test`` installs it); Playwright's own browser download is never
used. Without it the tests skip, unless ``BROWSER_REQUIRED=1`` (what ``make test`` sets), where they fail.
Browser tests share one worker: mark their module ``pytestmark = pytest.mark.xdist_group("browser")``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.browser.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.local.devstack import DevStack, dev_stack, scratch_project

TIMEOUT_MS = 15_000
"""How long a page action or an expectation waits by default."""

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


@pytest.fixture
def browser_page(browser: Browser) -> Iterator[Page]:
    """A page in a fresh browser context (no cookies or storage from another test), at a laptop's width."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def phone_page(browser: Browser) -> Iterator[Page]:
    """A page in a fresh browser context at a phone's size (390x844, touch)."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture(scope="module")
def dashboard_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """``cairn dev`` on this bundle's template.yaml (direct driver) on free ports, for a test module."""
    log = tmp_path_factory.mktemp("dev-dashboard") / "dev.log"
    with dev_stack(log, "--driver", "direct") as stack:
        yield stack


@pytest.fixture(scope="module")
def dev_dashboard(dashboard_stack: DevStack) -> str:
    """The base URL of ``cairn dev``, which serves the dashboard at ``/`` and its API beside it."""
    return dashboard_stack.base_url


@pytest.fixture(scope="session")
def gated_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """``cairn dev --driver direct`` on a copy of the bundle with the ``gated`` pipeline, shared by the modules
    of the dashboard's tests (each names its own jobs): one start of the stack instead of one per module.

    The pipeline is tests/local/gated_pipeline.py: ``gather`` (holds, or waits for a signal), ``check`` (fails
    while its gate file reads "closed"), ``finish``. The bundle's ``document-intake`` is there too.
    """
    project = scratch_project(tmp_path_factory.mktemp("gated-project"), ("gated",))
    with dev_stack(project / "dev.log", "--driver", "direct", cwd=project) as stack:
        yield stack
