"""The pipeline's graph in the job view, in chromium: the phases in order with this job's runs of each, where it
is now, and the transitions its phase runs took.

The pipeline is ``gated`` (tests/local/gated_pipeline.py): ``gather`` -> ``check`` (fails while the gate is
closed) -> ``finish``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.dashboard import SETTLED_POLL_MS, failed_job, open_job, refreshed
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")


def test_the_graph_shows_each_phase_with_its_runs_and_the_transitions_the_job_took(
    browser_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    gate = failed_job(gated_stack, tmp_path, "graphed")
    page = browser_page
    banner = open_job(page, gated_stack.base_url, "graphed")
    expect(banner).to_have_attribute("data-status", "error")
    graph = page.get_by_role("region", name="Pipeline")
    nodes = graph.get_by_role("list", name="Phases, in order").get_by_role("listitem")

    expect(nodes).to_have_text(["gather1 run", "check1 run", "finishnot run"])
    expect(graph.locator("[aria-current=step]")).to_have_attribute("data-phase", "check")
    expect(graph.get_by_role("list", name="Transitions this job took")).to_have_text("gather → check · 1 time")

    gate.write_text("open")
    gated_stack.api.retry("graphed")
    page.clock.run_for(SETTLED_POLL_MS)  # a failed job's view reads it again seldom: a retry from elsewhere shows then
    refreshed(page, lambda: expect(banner).to_have_attribute("data-status", "complete"))
    expect(nodes).to_have_text(["gather1 run", "check2 runs", "finish1 run"])
    edges = graph.get_by_role("list", name="Transitions this job took").get_by_role("listitem")
    expect(edges).to_have_text(["gather → check · 1 time", "check → finish · 1 time"])
    expect(graph.locator("[aria-current=step]")).to_have_count(0)


def test_an_unknown_job_gets_a_clear_not_found_page_not_an_empty_skeleton(
    browser_page: Page, gated_stack: DevStack
) -> None:
    page = browser_page
    page.goto(f"{gated_stack.base_url}/#/jobs/no-such-job-here")

    expect(page.get_by_role("status")).to_have_attribute("data-status", "missing")
    expect(page.get_by_role("heading", name="No job has this id")).to_be_visible()
    expect(page.get_by_role("group", name="Actions")).to_be_hidden()
    expect(page.get_by_role("region", name="Timeline")).to_have_count(0)
    page.get_by_role("link", name="Jobs whose id starts with this one").click()
    expect(page).to_have_url(f"{gated_stack.base_url}/#/?prefix=no-such-job-here")
    expect(page.locator("#filter-prefix")).to_have_value("no-such-job-here")
