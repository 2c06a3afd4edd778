"""A signal the pipeline declares a payload model for, in chromium: the dialog starts from its schema's template
and checks the payload against it before sending; the API refuses one that does not fit.

The pipeline is ``gated`` (tests/local/gated_pipeline.py), which declares ``approval``: ``{"approved": bool,
"note": str}``; ``gather`` waits for the signal its state names.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from cairn.client.errors import ApiError
from tests.browser.dashboard import Posts, button, open_job
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")


def test_a_declared_signal_starts_from_its_template_and_is_checked_before_it_is_sent(
    browser_page: Page, gated_stack: DevStack
) -> None:
    gated_stack.api.start("gated", state={"wait_for": "approval"}, job_id="declared-signal")
    gated_stack.wait_for("declared-signal", ("waiting",))
    page = browser_page
    posts = Posts(page)
    open_job(page, gated_stack.base_url, "declared-signal")

    button(page, "Send signal").click()
    dialog = page.get_by_role("dialog", name="Send a signal")
    payload = dialog.get_by_label("Payload (JSON, optional)")
    expect(payload).to_have_value(re.compile(r'"approved": false'))
    assert json.loads(payload.input_value()) == {"approved": False, "note": ""}
    expect(dialog).to_contain_text("checked against its schema")

    payload.fill('{"approved": "yes"}')
    dialog.get_by_role("button", name="Deliver signal").click()
    expect(payload).to_have_accessible_description(re.compile(r"payload\.approved"))
    assert posts.sent == []

    payload.fill('{"approved": true, "note": "looks right"}')
    dialog.get_by_role("button", name="Deliver signal").click()
    expect(dialog).to_be_hidden()
    view = gated_stack.wait_for("declared-signal")
    assert view["status"] == "complete"
    assert gated_stack.api.get("declared-signal", include_state=True)["result"]["signal"] == {
        "approved": True,
        "note": "looks right",
    }


def test_the_api_refuses_a_payload_that_does_not_fit_and_the_job_keeps_waiting(gated_stack: DevStack) -> None:
    gated_stack.api.start("gated", state={"wait_for": "approval"}, job_id="declared-refused")
    gated_stack.wait_for("declared-refused", ("waiting",))
    pipelines = {pipeline["name"]: pipeline for pipeline in gated_stack.api.request("GET", "/pipelines")["pipelines"]}
    schema = pipelines["gated"]["signals"]["approval"]["payloadSchema"]
    assert schema["required"] == ["approved"]

    with pytest.raises(ApiError, match=r"Invalid payload for signal \"approval\".*approved") as refused:
        gated_stack.api.signal("declared-refused", "approval", payload={"approved": "maybe", "extra": 1})

    assert refused.value.status == 400
    assert gated_stack.api.get("declared-refused")["status"] == "waiting"
    gated_stack.api.signal("declared-refused", "approval", payload={"approved": False})
    assert gated_stack.wait_for("declared-refused")["status"] == "complete"
