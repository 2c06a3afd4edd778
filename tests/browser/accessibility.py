"""axe-core in the dashboard's browser tests: every serious or critical finding on a view, listed with its targets.

axe-core is a pinned development dependency (package.json, installed in node_modules by ``make tools``); it is
added to a page with Playwright's ``add_script_tag``, which the page's ``script-src 'self'`` allows only in a
context with ``bypass_csp=True`` (:func:`axe_context`). Without node_modules/axe-core the tests skip, or fail
with ``BROWSER_REQUIRED=1`` (what ``make test-long`` sets).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from tests.browser.conftest import clocked_page

ROOT = Path(__file__).resolve().parents[2]
AXE_SCRIPT = ROOT / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")
"""The impacts a view must have none of."""

_RUN_AXE = """async (blocking) => {
  const results = await axe.run(document, { resultTypes: ["violations"] });
  return results.violations
    .filter((violation) => blocking.includes(violation.impact))
    .map((violation) => ({
      id: violation.id,
      impact: violation.impact,
      help: violation.help,
      targets: violation.nodes.map((node) => ({ target: node.target.join(" "), summary: node.failureSummary })),
    }));
}"""


def axe_script() -> Path:
    """axe-core's script in node_modules; skip (or fail, with ``BROWSER_REQUIRED=1``) when it is not installed."""
    if AXE_SCRIPT.is_file():
        return AXE_SCRIPT
    message = f"{AXE_SCRIPT} is missing: run `make tools` (npm ci installs the pinned axe-core) first"
    if os.environ.get("BROWSER_REQUIRED") == "1":
        pytest.fail(message)
    pytest.skip(message)


@contextmanager
def axe_context(browser: Browser, **options: Any) -> Iterator[Page]:
    """A page of a fresh context that lets axe-core's script in (``bypass_csp``), on Playwright's clock."""
    axe_script()
    context = browser.new_context(bypass_csp=True, **options)
    try:
        yield clocked_page(context)
    finally:
        context.close()


def blocking_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's serious and critical findings on the page as it is now (axe-core added once per document)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(axe_script()))
    found: list[dict[str, Any]] = page.evaluate(_RUN_AXE, list(BLOCKING))
    return found


def expect_accessible(page: Page, where: str) -> None:
    """Fail listing each serious or critical axe-core finding on the page (rule, impact, each target)."""
    found = blocking_violations(page)
    if not found:
        return
    lines = [f"{len(found)} serious or critical axe-core finding(s) on {where}:"]
    for violation in found:
        lines.append(f"- {violation['id']} ({violation['impact']}): {violation['help']}")
        lines.extend(f"    {node['target']}: {node['summary']}" for node in violation["targets"])
    pytest.fail("\n".join(lines))
