"""The dashboard's "Start a job" form and its jobs list, in chromium, on ``cairn dev`` with the ``gated`` pipeline."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.dashboard import Posts, refreshed
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")


def test_a_job_started_from_the_form_runs_then_completes_in_its_view(browser_page: Page, gated_stack: DevStack) -> None:
    page = browser_page
    page.goto(f"{gated_stack.base_url}/#/new")
    expect(page.get_by_role("heading", level=1)).to_have_text("Start a job")
    page.get_by_label("Pipeline").select_option("gated")
    expect(page.get_by_text("Phases: gather → check → finish")).to_be_visible()
    page.get_by_label("Job id (optional)").fill("form-started")
    page.get_by_label("Initial state (JSON)").fill('{"hold_seconds": 2, "note": "from the form"}')
    page.get_by_role("button", name="Start job").click()

    expect(page).to_have_url(re.compile(r"#/jobs/form-started$"))
    banner = page.get_by_role("status")
    expect(banner).to_have_attribute("data-status", "running")
    expect(banner).to_contain_text("Running")
    refreshed(page, lambda: expect(banner).to_have_attribute("data-status", "complete"))  # gather holds 2 s
    expect(banner).to_contain_text("Complete")
    expect(page.get_by_role("region", name="Checkpoint")).to_contain_text('"note": "from the form"')
    view = gated_stack.api.get("form-started")
    assert view["status"] == "complete"
    assert view["result"] == {"ran": ["gather", "check", "finish"], "note": "from the form", "signal": None}


def test_the_form_refuses_a_state_the_pipelines_model_refuses_and_sends_nothing(
    browser_page: Page, gated_stack: DevStack
) -> None:
    page = browser_page
    posts = Posts(page)
    page.goto(f"{gated_stack.base_url}/#/new")
    page.get_by_label("Pipeline").select_option("gated")
    page.get_by_label("Job id (optional)").fill("never-started")
    state = page.get_by_label("Initial state (JSON)")
    state.fill('{"hold_seconds": -1, "colour": "red"}')
    page.get_by_role("button", name="Start job").click()

    expect(state).to_have_attribute("aria-invalid", "true")
    expect(state).to_have_accessible_description(re.compile(r"state\.hold_seconds must be at least 0"))
    expect(state).to_have_accessible_description(re.compile(r"state\.colour is not a known field"))
    expect(state).to_be_focused()
    state.fill('{"hold_seconds": 1')
    expect(state).to_have_accessible_description(re.compile(r"Not valid JSON"))
    page.get_by_role("button", name="Start job").click()
    expect(page).to_have_url(re.compile(r"#/new$"))
    assert posts.sent == []
    assert not any(job["jobId"] == "never-started" for job in gated_stack.api.list()["jobs"])


def test_starting_a_job_whose_id_exists_shows_the_apis_refusal_in_the_alert(
    browser_page: Page, gated_stack: DevStack
) -> None:
    gated_stack.api.start("gated", state={"note": "the first"}, job_id="taken-id")
    gated_stack.wait_for("taken-id")
    page = browser_page
    page.goto(f"{gated_stack.base_url}/#/new")
    page.get_by_label("Pipeline").select_option("gated")
    page.get_by_label("Job id (optional)").fill("taken-id")
    page.get_by_label("Initial state (JSON)").fill('{"note": "the second"}')
    with page.expect_response(lambda response: response.request.method == "POST") as posted:
        page.get_by_role("button", name="Start job").click()
    assert posted.value.status == 409
    message = posted.value.json()["error"]["message"]

    expect(page.get_by_role("alert")).to_have_text(message)
    expect(page).to_have_url(re.compile(r"#/new$"))
    page.get_by_role("link", name="see job taken-id").click()
    expect(page).to_have_url(re.compile(r"#/jobs/taken-id$"))
    expect(page.get_by_role("alert")).to_have_text("")  # a navigation clears it
    assert gated_stack.api.get("taken-id")["result"]["note"] == "the first"  # never reset


def test_the_jobs_list_shows_a_new_job_live_and_filters_by_status_and_pipeline(
    browser_page: Page, gated_stack: DevStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    gate = tmp_path_factory.mktemp("gates") / "gate"
    gate.write_text("closed")
    gated_stack.api.start("gated", state={"gate": str(gate)}, job_id="listed-failing")
    gated_stack.api.start("document-intake", state={"document": "invoice.txt"}, job_id="listed-intake")
    for job_id in ("listed-failing", "listed-intake"):
        gated_stack.wait_for(job_id)
    page = browser_page
    listings: list[str] = []
    page.on("request", lambda request: listings.append(request.url) if "/jobs?" in request.url else None)
    page.goto(f"{gated_stack.base_url}/#/")
    table = page.get_by_role("table", name="Jobs, newest first")
    expect(table.get_by_role("link", name="listed-intake")).to_be_visible()
    page.evaluate("() => { window.loadedOnce = true; }")

    gated_stack.api.start("gated", state={"note": "live"}, job_id="listed-live")
    refreshed(page, lambda: expect(table.get_by_role("link", name="listed-live")).to_be_visible())
    live_row = table.get_by_role("row").filter(has=page.get_by_role("link", name="listed-live"))
    refreshed(page, lambda: expect(live_row).to_contain_text("Complete"))  # its status changes in place, too
    assert page.evaluate("() => window.loadedOnce === true")  # no reload

    page.get_by_label("Status").select_option("error")
    expect(page).to_have_url(re.compile(r"#/\?status=error$"))
    expect(table.get_by_role("link", name="listed-failing")).to_be_visible()
    expect(table.get_by_role("link", name="listed-live")).to_have_count(0)
    expect(table.get_by_role("link", name="listed-intake")).to_have_count(0)
    rows = table.locator("tbody").get_by_role("row")
    for row in rows.all():
        expect(row).to_contain_text("Error")

    page.get_by_label("Status").select_option("")
    page.get_by_label("Pipeline").select_option("document-intake")
    expect(page).to_have_url(re.compile(r"#/\?pipeline=document-intake$"))
    expect(table.get_by_role("link", name="listed-intake")).to_be_visible()
    expect(table.get_by_role("link", name="listed-live")).to_have_count(0)
    expect(table.get_by_role("link", name="listed-failing")).to_have_count(0)

    page.get_by_label("Pipeline").select_option("gated")
    page.get_by_label("Status").select_option("complete")
    expect(table.get_by_role("link", name="listed-live")).to_be_visible()
    expect(table.get_by_role("link", name="listed-intake")).to_have_count(0)
    expect(table.get_by_role("link", name="listed-failing")).to_have_count(0)
    page.reload()  # the filters are in the address: a reload (or a shared link) keeps them
    expect(page.get_by_label("Status")).to_have_value("complete")
    expect(page.get_by_label("Pipeline")).to_have_value("gated")
    expect(table.get_by_role("link", name="listed-live")).to_be_visible()
    expect(table.get_by_role("link", name="listed-intake")).to_have_count(0)
    assert any("pipeline=gated" in url and "status=complete" in url for url in listings), "filtered on the server"

    page.get_by_label("Status").select_option("")
    page.get_by_label("Pipeline").select_option("")
    page.get_by_label("Job id starts with").fill("listed-i")
    expect(page).to_have_url(re.compile(r"#/\?prefix=listed-i$"))
    expect(table.get_by_role("link", name="listed-intake")).to_be_visible()
    expect(table.get_by_role("link", name="listed-live")).to_have_count(0)
    expect(table.get_by_role("link", name="listed-failing")).to_have_count(0)
    assert any("idPrefix=listed-i" in url for url in listings)


def test_the_research_brief_starts_from_its_sample_waits_for_its_reviewer_and_is_approved(
    browser_page: Page, gated_stack: DevStack
) -> None:
    """A state model with nested models ($defs, unions: the plan, the agent's conversation) and an agent's turns."""
    page = browser_page
    page.goto(f"{gated_stack.base_url}/#/new")
    page.get_by_label("Pipeline").select_option("research-brief")
    state = page.get_by_label("Initial state (JSON)")
    expect(state).to_have_value(re.compile(r'"question": "Why do long jobs need checkpoints\?"'))
    page.get_by_label("Job id (optional)").fill("brief-from-form")
    page.get_by_role("button", name="Start job").click()

    banner = page.get_by_role("status")
    refreshed(page, lambda: expect(banner).to_have_attribute("data-status", "waiting"))
    expect(page.get_by_text("Turn 2: answered").first).to_be_visible()
    page.get_by_role("button", name="Send signal").click()
    page.get_by_label("Signal name").fill("approval")
    page.get_by_label("Payload (JSON, optional)").fill('{"approved": true, "note": "Keep it short"}')
    page.get_by_role("button", name="Deliver signal").click()
    refreshed(page, lambda: expect(banner).to_have_attribute("data-status", "complete"))
    assert gated_stack.api.get("brief-from-form")["result"]["reviews"] == 1
