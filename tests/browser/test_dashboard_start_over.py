"""Start over in chromium: the dialog shows the input the job will run with, lets the operator edit it (checked
before anything is sent), and the job runs with the edited input; the job view shows the input too.

The pipeline is ``gated`` (tests/local/gated_pipeline.py): ``check`` fails while the gate file reads "closed".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.dashboard import Posts, button, failed_job, open_job, refreshed
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")


def test_start_over_shows_the_input_and_runs_with_the_operators_edit(
    browser_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    gate = failed_job(gated_stack, tmp_path, "edited-input", note="broken input")
    page = browser_page
    posts = Posts(page)
    banner = open_job(page, gated_stack.base_url, "edited-input")
    expect(banner).to_have_attribute("data-status", "error")

    page.locator("details.input > summary").click()
    expect(page.locator("details.input pre")).to_contain_text('"note": "broken input"')

    button(page, "Start over").click()
    dialog = page.get_by_role("dialog", name="Start this job over?")
    field = dialog.get_by_label("Input (JSON)")
    expect(field).to_have_value(re.compile(r'"note": "broken input"'))
    shown = json.loads(field.input_value())
    assert shown["gate"] == str(gate)

    field.fill("{not json")
    dialog.get_by_role("button", name="Discard and restart").click()
    expect(field).to_have_accessible_description(re.compile(r"Not valid JSON"))
    assert posts.sent == []

    field.fill(json.dumps({**shown, "gate": "", "note": "fixed input"}))
    dialog.get_by_role("button", name="Discard and restart").click()
    expect(dialog).to_be_hidden()
    refreshed(page, lambda: expect(banner).to_have_attribute("data-status", "complete"))
    assert posts.sent == ["POST /jobs/edited-input/retry"]
    view = gated_stack.api.get("edited-input", include_input=True)
    assert view["result"]["note"] == "fixed input"
    assert view["input"]["note"] == "fixed input"  # the edit is the job's input now
