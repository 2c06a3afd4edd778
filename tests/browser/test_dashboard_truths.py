"""Small truths of the job view, in chromium on ``cairn dev``: a pending pause draws the phase still in flight and
offers nothing to retry; the "Live" indicator says when a read fails, and a gateway's timeout reads as one (never a
bare "Internal Server Error"); a signal without a declared model starts from ``null`` and a payload that is not
JSON is refused in the dialog; a map's item phase is never offered (nor accepted) as a place to rerun from.

The pipeline is ``gated`` (tests/local/gated_pipeline.py): ``gather`` holds while a file exists, then waits for the
signal its state names.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, expect

from cairn.client.errors import ApiError
from tests.browser.dashboard import Posts, button, open_job, pause_clock, refreshed
from tests.browser.test_dashboard_controls import held
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")

TIMED_OUT = {"message": "Endpoint request timed out"}
"""What API Gateway answers (504) when the API's function runs past the integration's timeout."""
JOB_CALLS = re.compile(r".*/jobs/gateway([/?].*)?$")


def test_a_pending_pause_draws_the_phase_in_flight_and_offers_nothing_to_retry(
    browser_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    state, hold = held(tmp_path, "pausing")
    gated_stack.api.start("gated", state=state, job_id="pausing")
    page = browser_page
    banner = open_job(page, gated_stack.base_url, "pausing")
    expect(banner).to_have_attribute("data-status", "running")
    expect(button(page, "Retry")).not_to_have_class(re.compile(r"\bprimary\b"))

    button(page, "Pause").click()
    expect(banner).to_contain_text("Pausing: phase “gather” is still running")
    in_flight = page.locator(".timeline-row.outcome-running")
    expect(in_flight).to_have_count(1)
    expect(in_flight).to_contain_text("gather")
    expect(in_flight).to_contain_text("pause pending")
    expect(button(page, "Retry")).to_be_disabled()
    expect(button(page, "Retry")).to_have_attribute("title", re.compile("nothing to retry"))
    expect(page.get_by_role("group", name="Actions").locator("button.primary")).to_have_count(0)
    expect(button(page, "Resume")).to_be_enabled()
    expect(button(page, "Cancel")).to_be_enabled()

    hold.unlink()
    refreshed(page, lambda: expect(banner).not_to_contain_text("Pausing"))
    expect(banner).to_contain_text("Paused")
    expect(page.locator(".timeline-row.outcome-running")).to_have_count(0)
    expect(button(page, "Retry")).to_be_enabled()
    expect(page.get_by_role("group", name="Actions").locator("button.primary")).to_have_text(["Resume"])


def test_the_live_indicator_says_when_a_read_fails_and_comes_back_on_a_good_read(
    browser_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    state, hold = held(tmp_path, "read-fails")
    gated_stack.api.start("gated", state=state, job_id="read-fails")
    page = browser_page
    banner = open_job(page, gated_stack.base_url, "read-fails")
    indicator = page.locator("#connection")
    expect(indicator).to_have_text("Live")

    def failing(route: Route) -> None:
        body = {"error": {"code": "internal_error", "message": "The table did not answer in time"}}
        route.fulfill(status=500, content_type="application/json", body=json.dumps(body))

    reads = re.compile(r".*/jobs/read-fails(\?.*)?$")
    page.route(reads, failing)
    refreshed(page, lambda: expect(indicator).to_have_attribute("data-state", "error"))
    expect(indicator).to_contain_text("Error")
    expect(indicator).to_have_attribute("title", re.compile("The table did not answer in time"))
    expect(indicator).not_to_have_text("Live")
    expect(button(page, "Pause")).to_be_enabled()  # the API answers: its actions stay offered

    page.unroute(reads)
    refreshed(page, lambda: expect(indicator).to_have_text("Live"))
    expect(indicator).to_have_attribute("data-state", "online")
    hold.unlink()
    refreshed(page, lambda: expect(banner).to_have_attribute("data-status", "complete"))


def test_a_gateway_timeout_says_the_action_may_have_happened_never_a_bare_server_error(
    browser_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    state, hold = held(tmp_path, "gateway")
    gated_stack.api.start("gated", state=state, job_id="gateway")
    page = browser_page
    banner = open_job(page, gated_stack.base_url, "gateway")
    expect(banner).to_have_attribute("data-status", "running")
    indicator = page.locator("#connection")
    alert = page.get_by_role("alert")

    def gateway(status: int, body: str) -> None:
        page.unroute(JOB_CALLS)
        page.route(JOB_CALLS, lambda route: route.fulfill(status=status, content_type="application/json", body=body))

    pause_clock(page)  # no live refresh between the action and its message: a refresh's timeout reads differently
    gateway(504, json.dumps(TIMED_OUT))
    button(page, "Pause").click()
    expect(alert).to_contain_text("The API timed out; the action may still have happened — refresh to see")
    expect(alert).to_contain_text("504: Endpoint request timed out")

    gateway(503, '{"message": "Service Unavailable"}')
    # the read after the action still met the 504 (offline too): wait for a read that meets the 503
    refreshed(page, lambda: expect(indicator).to_have_attribute("title", re.compile("timed out or is unavailable")))
    expect(indicator).to_have_attribute("data-state", "offline")
    # the failed reads show in the indicator; what the action's answer said stays until it is dismissed
    expect(alert).to_contain_text("the action may still have happened")
    page.locator("#alert-dismiss").click()
    expect(alert).to_have_text("")

    gateway(500, '{"message":"Internal Server Error"}')
    refreshed(page, lambda: expect(indicator).to_have_attribute("data-state", "error"))
    expect(alert).to_contain_text("The API failed before it could answer")
    expect(alert).not_to_have_text(re.compile(r"^\s*Internal Server Error\s*$"))

    page.unroute(JOB_CALLS)
    refreshed(page, lambda: expect(indicator).to_have_text("Live"))
    expect(alert).to_have_text("")
    hold.unlink()


def test_a_signal_without_a_model_starts_from_null_and_refuses_a_payload_that_is_not_json(
    browser_page: Page, gated_stack: DevStack
) -> None:
    gated_stack.api.start("gated", state={"wait_for": "go-ahead"}, job_id="undeclared-signal")
    gated_stack.wait_for("undeclared-signal", ("waiting",))
    page = browser_page
    posts = Posts(page)
    open_job(page, gated_stack.base_url, "undeclared-signal")
    expect(button(page, "Send signal")).to_have_class(re.compile(r"\bprimary\b"))

    button(page, "Send signal").click()
    dialog = page.get_by_role("dialog", name="Send a signal")
    payload = dialog.get_by_label("Payload (JSON, optional)")
    expect(payload).to_have_value("null")
    expect(dialog).to_contain_text("No model is declared for this signal")

    payload.fill("{go: yes}")
    dialog.get_by_role("button", name="Deliver signal").click()
    expect(payload).to_have_accessible_description(re.compile("Not valid JSON"))
    assert posts.sent == []

    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    button(page, "Send signal").click()
    expect(payload).to_have_value("null")
    dialog.get_by_role("button", name="Deliver signal").click()  # as it is offered
    expect(dialog).to_be_hidden()
    assert gated_stack.wait_for("undeclared-signal")["status"] == "complete"
    assert gated_stack.api.get("undeclared-signal", include_state=True)["result"]["signal"] is None


def test_a_maps_item_phase_is_never_a_place_to_rerun_from_even_before_the_job_maps(
    browser_page: Page, gated_stack: DevStack
) -> None:
    # page by page: this job extracts in one phase and never maps, but extract_page is the map's item phase
    gated_stack.api.start("document-intake", state={"document": "contract.txt"}, job_id="never-mapped")
    assert gated_stack.wait_for("never-mapped")["status"] == "complete"
    with pytest.raises(ApiError, match=r'runs only as an item of the map started by phase "split"') as refused:
        gated_stack.api.retry("never-mapped", mode="from", phase="extract_page")
    assert refused.value.status == 409
    assert gated_stack.api.get("never-mapped")["status"] == "complete"
    assert "extract_page" not in gated_stack.api.get("never-mapped")["rerunPhases"]

    page = browser_page
    open_job(page, gated_stack.base_url, "never-mapped")
    button(page, "Rerun from phase").click()
    phase = page.get_by_role("dialog", name="Rerun this job").get_by_label("Phase")
    expect(phase.locator("option")).to_have_text(["fetch", "split", "extract", "publish"])


def test_the_usage_panel_counts_a_running_maps_items_so_far_and_once_when_it_ends(
    browser_page: Page, gated_stack: DevStack, tmp_path: Path
) -> None:
    hold = tmp_path / "hold-item"
    hold.write_text("held")
    gated_stack.api.start("held-map", state={"holds": ["", "", "", str(hold)]}, job_id="map-usage")
    page = browser_page
    banner = open_job(page, gated_stack.base_url, "map-usage")
    usage = page.locator(".usage")

    def requests_shown() -> int:
        term = usage.locator("dt", has_text=re.compile(r"^lambda_requests$"))
        return int(term.locator("xpath=following-sibling::dd").inner_text().replace(",", ""))

    def three_items_counted() -> None:
        expect(banner).to_have_attribute("data-status", "running")
        assert requests_shown() == 1 + 3, requests_shown()  # spread, and the three items that ran

    refreshed(page, three_items_counted)
    assert gated_stack.api.get("map-usage")["usage"]["lambda_requests"] == 1 + 3

    hold.unlink()
    refreshed(page, lambda: expect(banner).to_have_attribute("data-status", "complete"))
    refreshed(page, lambda: expect(usage).to_contain_text("lambda_requests"))
    assert requests_shown() == 1 + 4 + 1  # every item once, and gathered
    assert gated_stack.api.get("map-usage")["usage"]["lambda_requests"] == 1 + 4 + 1


def test_the_jobs_list_says_a_read_failed_beside_an_error_and_recovers(
    browser_page: Page, gated_stack: DevStack
) -> None:
    gated_stack.api.start("gated", state={}, job_id="listed-truth")
    page = browser_page
    page.goto(f"{gated_stack.base_url}/#/")
    note = page.locator(".live-note")
    indicator = page.locator("#connection")
    expect(note).to_contain_text("live, updated")
    listing = re.compile(r".*/jobs(\?.*)?$")

    failed = '{"message":"Internal Server Error"}'
    page.route(listing, lambda route: route.fulfill(status=500, content_type="application/json", body=failed))
    refreshed(page, lambda: expect(note).to_contain_text("a read failed, as read at"))
    expect(indicator).to_have_attribute("data-state", "error")
    expect(indicator).to_contain_text("Error since")
    expect(indicator).to_have_attribute("title", re.compile("The API failed before it could answer"))

    page.unroute(listing)
    refreshed(page, lambda: expect(note).to_contain_text("live, updated"))
    expect(indicator).to_have_text("Live")
