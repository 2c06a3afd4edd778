"""The job view's controls in chromium: Pause, Resume, Cancel, Send signal, what a status disables, a phone's width.

The pipeline is ``gated`` (tests/local/gated_pipeline.py): ``gather`` holds while a file exists (the test
removes it once it has paused or cancelled the job from the page) or waits for the signal ``wait_for``;
then ``check`` and ``finish``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.dashboard import (
    ACTIONS,
    Posts,
    button,
    expect_focus_in_actions,
    failed_job,
    open_job,
    pause_clock,
    phases_run,
    refreshed,
    wait_for_refreshes,
)
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")


def held(folder: Path, name: str) -> tuple[dict[str, str], Path]:
    """A state that holds ``gather`` until the test removes the returned file (it acts while the phase runs)."""
    hold = folder / f"hold-{name}"
    hold.write_text("held")
    return {"hold_while": str(hold)}, hold


def test_pause_then_resume_a_running_job(browser_page: Page, gated_stack: DevStack, tmp_path: Path) -> None:
    state, hold = held(tmp_path, "paused-resumed")
    gated_stack.api.start("gated", state=state, job_id="paused-resumed")
    page = browser_page
    banner = open_job(page, gated_stack.base_url, "paused-resumed")
    expect(banner).to_have_attribute("data-status", "running")
    expect(button(page, "Resume")).to_be_disabled()

    button(page, "Pause").focus()
    page.keyboard.press("Enter")
    expect(banner).to_have_attribute("data-status", "paused")
    expect(banner).to_contain_text("Pausing: phase “gather” is still running")  # its worker has not stopped yet
    expect(button(page, "Resume")).to_be_focused()  # not lost with the Pause button, now disabled
    assert gated_stack.api.get("paused-resumed")["status"] == "paused"
    expect(button(page, "Pause")).to_be_disabled()
    hold.unlink()  # the phase in flight finishes; the job stops before the next one

    def stopped() -> None:
        expect(banner).to_contain_text("Paused")
        expect(banner).not_to_contain_text("Pausing")
        expect(banner).to_contain_text("Stopped before phase “check”; Resume continues there.")

    refreshed(page, stopped)
    assert phases_run(gated_stack.api.get("paused-resumed")) == ["gather"]

    page.keyboard.press("Enter")  # on Resume, which kept the focus
    refreshed(page, lambda: expect(banner).to_have_attribute("data-status", "complete"))
    expect_focus_in_actions(page)
    view = gated_stack.api.get("paused-resumed")
    assert phases_run(view) == ["gather", "check", "finish"]


def test_cancel_a_running_job(browser_page: Page, gated_stack: DevStack, tmp_path: Path) -> None:
    state, hold = held(tmp_path, "cancelled-running")
    gated_stack.api.start("gated", state=state, job_id="cancelled-running")
    page = browser_page
    banner = open_job(page, gated_stack.base_url, "cancelled-running")
    expect(banner).to_have_attribute("data-status", "running")

    button(page, "Cancel").click()
    expect(banner).to_have_attribute("data-status", "cancelled")
    expect(banner).to_contain_text("Cancelled")
    expect_focus_in_actions(page)
    assert gated_stack.api.get("cancelled-running")["status"] == "cancelled"
    for name in ("Pause", "Cancel", "Resume"):
        expect(button(page, name)).to_be_disabled()
    expect(button(page, "Retry")).to_be_enabled()
    hold.unlink()
    worker_done(gated_stack, "cancelled-running")
    view = gated_stack.api.get("cancelled-running")
    assert (view["status"], view["phases"]) == ("cancelled", [])  # the worker in flight could not commit gather
    cut = view["cutShort"]  # yet the run it cut short is shown, from its claim to the cancel
    assert cut["phase"] == "gather"
    assert cut["startedAt"] <= cut["endedAt"] == view["updatedAt"]
    wait_for_refreshes(page, "cancelled-running", 1, settled=True)
    expect(banner).to_have_attribute("data-status", "cancelled")
    cut_row = page.locator(".timeline-row.outcome-cut-short")
    expect(cut_row).to_contain_text("gather")
    expect(cut_row).to_contain_text("cut short by the cancel")


def worker_done(stack: DevStack, job_id: str, timeout: float = 30.0) -> None:
    """Wait until no function runs for ``job_id`` (its worker in flight has ended)."""
    deadline = time.monotonic() + timeout
    while any(invocation.get("jobId") == job_id for invocation in stack.admin("invocations")):
        assert time.monotonic() < deadline, f"a worker still runs {job_id} after {timeout}s"
        time.sleep(0.05)


def test_a_complete_jobs_disallowed_buttons_are_disabled_with_a_reason_and_stay_so(
    browser_page: Page, gated_stack: DevStack
) -> None:
    gated_stack.api.start("gated", state={"note": "done"}, job_id="finished")
    assert gated_stack.wait_for("finished")["status"] == "complete"
    page = browser_page
    banner = open_job(page, gated_stack.base_url, "finished")
    expect(banner).to_have_attribute("data-status", "complete")
    reasons = {
        "Retry": re.compile(r"no checkpoint"),
        "Pause": re.compile(r"Only a running job can be paused; this one is complete"),
        "Resume": re.compile(r"Only a paused job resumes; this one is complete"),
        "Cancel": re.compile(r"A complete job cannot be cancelled"),
        "Send signal": re.compile(r"Only a waiting job takes a signal; this one is complete"),
    }
    allowed = ("Start over", "Rerun from phase")
    assert set(ACTIONS) == {*reasons, *allowed, "Nudge"}
    expect(button(page, "Nudge")).to_be_hidden()  # shown only while a job is stalled

    def check() -> None:
        for name, reason in reasons.items():
            expect(button(page, name)).to_be_disabled()
            expect(button(page, name)).to_have_attribute("title", reason)
            expect(button(page, name)).to_have_accessible_description(reason)
        for name in allowed:
            expect(button(page, name)).to_be_enabled()

    check()
    wait_for_refreshes(page, "finished", 2, settled=True)
    for name in reasons:
        assert button(page, name).is_disabled(), name
    check()


def test_send_signal_moves_a_waiting_job_on_and_a_refused_signal_shows_the_apis_message(
    browser_page: Page, gated_stack: DevStack
) -> None:
    gated_stack.api.start("gated", state={"wait_for": "approve"}, job_id="awaits-approval")
    gated_stack.wait_for("awaits-approval", ("waiting",))
    page = browser_page
    posts = Posts(page)
    banner = open_job(page, gated_stack.base_url, "awaits-approval")
    expect(banner).to_have_attribute("data-status", "waiting")
    expect(banner).to_contain_text("Waiting for signal “approve”")
    expect(button(page, "Retry")).to_be_disabled()

    button(page, "Send signal").click()
    dialog = page.get_by_role("dialog", name="Send a signal")
    name = dialog.get_by_label("Signal name")
    payload = dialog.get_by_label("Payload (JSON, optional)")
    expect(name).to_have_value("approve")
    expect(payload).to_be_focused()
    payload.fill("{approved: yes}")
    dialog.get_by_role("button", name="Deliver signal").click()
    expect(payload).to_have_accessible_description(re.compile(r"Not valid JSON"))
    assert posts.sent == []

    name.fill("reject")
    payload.fill('{"approved_by": "ops"}')
    with page.expect_response(lambda response: response.request.method == "POST") as refused:
        dialog.get_by_role("button", name="Deliver signal").click()
    assert refused.value.status == 409
    message = refused.value.json()["error"]["message"]
    expect(dialog).to_contain_text(message)  # the dialog stays open: nothing typed is lost
    expect(dialog.get_by_role("button", name="Deliver signal")).to_be_focused()
    expect(payload).to_have_value('{"approved_by": "ops"}')
    expect(page.get_by_role("alert")).to_have_text(message)

    name.fill("approve")
    dialog.get_by_role("button", name="Deliver signal").click()
    expect(dialog).to_be_hidden()
    expect(page.get_by_role("alert")).to_have_text("")
    refreshed(page, lambda: expect(banner).to_have_attribute("data-status", "complete"))
    expect_focus_in_actions(page)  # Send signal, which opened the dialog, is disabled now
    view = gated_stack.api.get("awaits-approval")
    assert view["result"]["signal"] == {"approved_by": "ops"}
    assert posts.sent == ["POST /jobs/awaits-approval/signals/reject", "POST /jobs/awaits-approval/signals/approve"]


def test_a_button_the_job_no_longer_allows_shows_the_apis_refusal_in_the_alert(
    browser_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    page = browser_page
    state, hold = held(tmp_path, "stale-pause")
    gated_stack.api.start("gated", state=state, job_id="stale-pause")
    pause_clock(page)  # the page reads the job once, as it opens, and never by itself again: it goes stale
    banner = open_job(page, gated_stack.base_url, "stale-pause")
    expect(banner).to_have_attribute("data-status", "running")
    gated_stack.api.cancel("stale-pause")

    with page.expect_response(lambda response: response.request.method == "POST") as refused:
        button(page, "Pause").click()
    assert refused.value.status == 409
    expect(page.get_by_role("alert")).to_have_text(refused.value.json()["error"]["message"])
    expect(banner).to_have_attribute("data-status", "cancelled")  # read again after the refusal
    expect(button(page, "Pause")).to_be_disabled()
    hold.unlink()


def no_horizontal_scroll(page: Page) -> None:
    """The page is no wider than the viewport."""
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"the page is {widths[0]}px wide in a {widths[1]}px viewport"


def test_at_a_phones_width_the_job_view_has_no_horizontal_scroll(
    phone_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    job_id = "phone-" + "a-long-job-identifier-without-spaces" * 3
    failed_job(gated_stack, tmp_path, job_id, note="x" * 300)
    page = phone_page
    banner = open_job(page, gated_stack.base_url, job_id)
    expect(banner).to_have_attribute("data-status", "error")
    no_horizontal_scroll(page)
    page.get_by_role("group", name="Actions").scroll_into_view_if_needed()
    no_horizontal_scroll(page)
    button(page, "Rerun from phase").click()
    expect(page.get_by_role("dialog", name="Rerun this job").get_by_label("State (JSON)")).to_have_value(
        re.compile("x{300}")
    )
    no_horizontal_scroll(page)
    page.keyboard.press("Escape")
    page.goto(f"{gated_stack.base_url}/#/")
    expect(page.get_by_role("link", name=job_id)).to_be_visible()
    no_horizontal_scroll(page)


def test_on_a_phone_only_the_actions_the_status_allows_are_shown(
    phone_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    failed_job(gated_stack, tmp_path, "phone-actions")
    page = phone_page
    banner = open_job(page, gated_stack.base_url, "phone-actions")
    expect(banner).to_have_attribute("data-status", "error")

    expect(button(page, "Retry")).to_be_visible()
    buttons = page.locator(".actions button").all()
    shown = [each.inner_text() for each in buttons if each.is_visible()]
    enabled = [each.inner_text() for each in buttons if each.is_enabled()]

    assert shown == enabled
    assert "Retry" in shown
    assert "Pause" not in shown
    assert "Resume" not in shown
