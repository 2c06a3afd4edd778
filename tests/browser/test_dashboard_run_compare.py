"""The comparison of a loaded job's runs in chromium: a job pulled from a "production" API, loaded with
`cairn dev --load` and rerun locally from a phase with an edited state, shown side by side with the pulled
run, phase by phase, the first divergence marked."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser.dashboard import open_job
from tests.local.devstack import DevStack, dev_stack
from tests.local.pulled import pull_production_job

pytestmark = pytest.mark.xdist_group("browser-2")

JOB = "pulled-doc"


@pytest.fixture(scope="module")
def loaded_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """`cairn dev --load FILE` with a document-intake job pulled from the bundle on moto."""
    folder = tmp_path_factory.mktemp("run-compare")
    pulled = pull_production_job(folder / f"{JOB}.cairn-job.json", JOB)
    with dev_stack(folder / "dev.log", "--driver", "direct", "--load", str(pulled)) as stack:
        yield stack


def test_a_loaded_job_rerun_with_another_state_shows_both_runs_and_marks_where_they_diverge(
    browser_page: Page, loaded_stack: DevStack
) -> None:
    entered = loaded_stack.api.entered_state(JOB, "publish")["state"]
    edited = {**entered, "document": "edited.txt"}
    before = loaded_stack.api.get(JOB)["sequence"]
    loaded_stack.api.retry(JOB, mode="from", phase="publish", state=edited)
    loaded_stack.wait_until(JOB, lambda view: view["status"] == "complete" and view["sequence"] > before)
    page = browser_page

    open_job(page, loaded_stack.base_url, JOB)

    panel = page.get_by_role("region", name="Runs compared")
    expect(panel).to_be_visible()
    expect(panel.locator(".loaded-from")).to_contain_text(f"Loaded from {JOB}.cairn-job.json, pulled from http://")
    headers = panel.locator("thead th")
    expect(headers.nth(1)).to_have_text(re.compile(r"^Run 1 · Start · .+ \(pulled\)$"))
    expect(headers.nth(2)).to_have_text(re.compile(r"^Run 2 · Rerun from “publish” · "))
    rows = panel.locator("tbody tr")
    expect(rows).to_have_count(4)
    assert rows.evaluate_all("rows => rows.map(row => row.dataset.phase)") == ["fetch", "split", "extract", "publish"]
    first = panel.locator("tr.first-divergence")
    expect(first).to_have_count(1)
    expect(first).to_have_attribute("data-phase", "publish")
    expect(first.locator("th")).to_contain_text("first divergence")
    expect(panel.locator(".compare-summary")).to_have_text("First divergence at publish.")
    expect(panel.locator('tr[data-phase="split"] td').nth(1)).to_have_text("not run in this run")
    first.locator("td").nth(0).locator("summary").click()
    first.locator("td").nth(1).locator("summary").click()
    expect(first.locator("td").nth(0).locator("pre")).to_contain_text('"document": "invoice.txt"')
    expect(first.locator("td").nth(1).locator("pre")).to_contain_text('"document": "edited.txt"')
