"""A failed job in the dashboard: its error banner, then Retry, Start over and Rerun from phase, in chromium.

The pipeline is ``gated`` (tests/local/gated_pipeline.py): ``gather`` -> ``check`` -> ``finish``, where ``check``
fails while the job's gate file reads "closed".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.dashboard import Posts, button, failed_job, log_messages, open_job, phases_run, refreshed
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")


@pytest.fixture(scope="module")
def gates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for the gates' files."""
    return tmp_path_factory.mktemp("gates")


def test_a_failed_phase_shows_the_error_banner_with_the_phase_and_its_message(
    browser_page: Page, gated_stack: DevStack, gates: Path
) -> None:
    failed_job(gated_stack, gates, "shows-error")
    banner = open_job(browser_page, gated_stack.base_url, "shows-error")

    expect(banner).to_have_attribute("data-status", "error")
    expect(banner).to_contain_text("Error in phase “check”")
    expect(banner).to_contain_text("The gate gate-shows-error is closed")
    timeline = browser_page.get_by_role("region", name="Timeline")
    failed_run = timeline.get_by_role("listitem").filter(has_text=re.compile(r"^check"))
    expect(failed_run).to_contain_text("failed")
    expect(failed_run).to_contain_text("The gate gate-shows-error is closed")
    expect(button(browser_page, "Retry")).to_be_enabled()
    expect(button(browser_page, "Retry")).to_have_accessible_description("Resumes from the checkpoint at “check”")


def test_retry_resumes_a_failed_job_from_its_checkpoint_without_running_earlier_phases_again(
    browser_page: Page, gated_stack: DevStack, gates: Path
) -> None:
    gate = failed_job(gated_stack, gates, "retried")
    banner = open_job(browser_page, gated_stack.base_url, "retried")
    expect(banner).to_have_attribute("data-status", "error")
    gate.write_text("open")

    button(browser_page, "Retry").click()
    refreshed(browser_page, lambda: expect(banner).to_have_attribute("data-status", "complete"))
    view = gated_stack.api.get("retried")
    assert phases_run(view) == ["gather", "check", "check", "finish"]  # gather ran once: Retry resumed at check
    assert [record["outcome"] for record in view["phases"]] == ["next", "error", "next", "done"]
    assert log_messages(gated_stack, "retried").count("ran gather") == 1
    assert view["result"]["ran"] == ["gather", "check", "finish"]


def test_start_over_asks_first_and_keeping_the_job_changes_nothing(
    browser_page: Page, gated_stack: DevStack, gates: Path
) -> None:
    failed_job(gated_stack, gates, "kept-as-is")
    before = gated_stack.api.get("kept-as-is")
    page = browser_page
    posts = Posts(page)
    open_job(page, gated_stack.base_url, "kept-as-is")

    button(page, "Start over").click()
    dialog = page.get_by_role("dialog", name="Start this job over?")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("runs again from its first phase, gather")
    expect(dialog).to_contain_text("its checkpoint (at “check”, with its state)")
    dialog.get_by_role("button", name="Keep the job as it is").click()

    expect(dialog).to_be_hidden()
    expect(button(page, "Start over")).to_be_focused()
    expect(page.get_by_role("status")).to_have_attribute("data-status", "error")
    assert posts.sent == []
    assert gated_stack.api.get("kept-as-is") == before


def test_start_over_once_confirmed_runs_the_job_again_from_its_first_phase(
    browser_page: Page, gated_stack: DevStack, gates: Path
) -> None:
    gate = failed_job(gated_stack, gates, "started-over", note="first run")
    failed_at = gated_stack.api.get("started-over")["updatedAt"]
    page = browser_page
    banner = open_job(page, gated_stack.base_url, "started-over")
    gate.write_text("open")

    button(page, "Start over").click()
    dialog = page.get_by_role("dialog", name="Start this job over?")
    dialog.get_by_role("button", name="Discard and restart").click()
    expect(dialog).to_be_hidden()
    refreshed(page, lambda: expect(banner).to_have_attribute("data-status", "complete"))
    view = gated_stack.api.get("started-over")
    assert phases_run(view) == ["gather", "check", "finish"]  # the history of the failed run is gone
    assert view["phases"][0]["startedAt"] > failed_at  # gather ran again, after the failure
    assert log_messages(gated_stack, "started-over")[:2] == [
        'Job started over at phase "gather" by arn:aws:iam::123456789012:user/local',  # the dashboard's caller
        "ran gather",
    ]
    assert view["result"] == {"ran": ["gather", "check", "finish"], "note": "first run", "signal": None}


def test_rerun_from_a_phase_refuses_invalid_json_and_a_state_the_model_refuses_and_sends_nothing(
    browser_page: Page, gated_stack: DevStack, gates: Path
) -> None:
    failed_job(gated_stack, gates, "rerun-refused")
    before = gated_stack.api.get("rerun-refused", include_state=True)
    page = browser_page
    posts = Posts(page)
    open_job(page, gated_stack.base_url, "rerun-refused")

    button(page, "Rerun from phase").click()
    dialog = page.get_by_role("dialog", name="Rerun this job")
    expect(dialog.get_by_label("Phase")).to_have_value("check")  # the phase that failed
    state = dialog.get_by_label("State (JSON)")
    expect(state).to_have_value(re.compile(r'"ran": \[\s*"gather"\s*\]'))  # the checkpoint's state
    assert json.loads(state.input_value()) == before["state"]

    state.fill('{"note": "unfinished"')
    dialog.get_by_role("button", name="Rerun job").click()
    expect(state).to_have_attribute("aria-invalid", "true")
    expect(state).to_have_accessible_description(re.compile(r"Not valid JSON"))
    expect(state).to_be_focused()

    state.fill('{"hold_seconds": "long", "ran": "gather", "colour": "red"}')
    dialog.get_by_role("button", name="Rerun job").click()
    expect(state).to_have_accessible_description(re.compile(r"state\.hold_seconds must be a number"))
    expect(state).to_have_accessible_description(re.compile(r"state\.ran must be an array"))
    expect(state).to_have_accessible_description(re.compile(r"state\.colour is not a known field"))
    expect(dialog).to_be_visible()
    assert posts.sent == []

    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_be_hidden()
    assert posts.sent == []
    assert gated_stack.api.get("rerun-refused", include_state=True) == before


def test_rerun_from_a_phase_with_an_edited_state_continues_there_with_that_state(
    browser_page: Page, gated_stack: DevStack, gates: Path
) -> None:
    failed_job(gated_stack, gates, "rerun-edited", note="as started")  # its gate stays closed: check would fail
    page = browser_page
    banner = open_job(page, gated_stack.base_url, "rerun-edited")

    button(page, "Rerun from phase").click()
    dialog = page.get_by_role("dialog", name="Rerun this job")
    state = dialog.get_by_label("State (JSON)")
    expect(state).to_have_value(re.compile(r'"note": "as started"'))
    dialog.get_by_label("Phase").select_option("finish")
    edited = {**json.loads(state.input_value()), "note": "edited in the dashboard", "ran": ["gather", "by hand"]}
    state.fill(json.dumps(edited))
    with page.expect_request(lambda request: request.method == "POST") as posted:
        dialog.get_by_role("button", name="Rerun job").click()
    assert posted.value.post_data_json == {"mode": "from", "phase": "finish", "state": edited}

    expect(dialog).to_be_hidden()
    refreshed(page, lambda: expect(banner).to_have_attribute("data-status", "complete"))
    view = gated_stack.api.get("rerun-edited")
    assert view["result"] == {"ran": ["gather", "by hand", "finish"], "note": "edited in the dashboard", "signal": None}
    assert phases_run(view) == ["gather", "check", "finish"]  # check did not run again: finish came next
    messages = log_messages(gated_stack, "rerun-edited")
    assert any(message.startswith('Job rerun from phase "finish"') for message in messages)
