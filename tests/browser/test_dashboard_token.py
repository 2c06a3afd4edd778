"""The dashboard as a deployed API with ``ApiAuth=JWT`` serves it: the page at ``/dashboard``, unsigned, and
every call it makes carries the user's token, so the jobs it starts and shows are the token owner's.

``cairn dev`` routes ``/dashboard`` and ``/assets/{file}`` to the API function, as API Gateway does, and
names the caller of a request with ``Authorization: Bearer <JWT>`` as a JWT authorizer does.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import ConsoleMessage, Page, Request, expect

from cairn.client import ApiError
from tests.browser.dashboard import refreshed
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-2")

ISSUER = "https://issuer.example"


def jwt(subject: str) -> str:
    """A JWT for ``subject`` (unsigned: the local gateway reads its claims, as the authorizer would after checking)."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part({'sub': subject, 'iss': ISSUER})}.c2ln"


def get_as(stack: DevStack, path: str, token: str) -> tuple[int, Any]:
    """``GET path`` on the local API with a bearer token: its status and JSON body."""
    request = urllib.request.Request(f"{stack.base_url}{path}", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def test_a_job_started_from_the_served_page_belongs_to_the_tokens_owner(
    browser_page: Page, dashboard_stack: DevStack
) -> None:
    token = jwt("reviewer-1")
    calls: list[Request] = []
    problems: list[str] = []
    browser_page.on("request", lambda request: calls.append(request) if "/jobs" in request.url else None)
    browser_page.on("console", lambda message: _keep_errors(message, problems))
    browser_page.on("pageerror", lambda error: problems.append(str(error)))

    page = browser_page.goto(f"{dashboard_stack.base_url}/dashboard#token={token}")
    assert page is not None
    assert page.status == 200
    assert "script-src 'self'" in page.headers["content-security-policy"]
    expect(browser_page).to_have_url(f"{dashboard_stack.base_url}/dashboard#/")  # the token left the address bar

    browser_page.get_by_role("link", name="Start a job").click()
    browser_page.get_by_label("Pipeline").select_option("document-intake")
    browser_page.get_by_label("Job id (optional)").fill("token-owned")
    browser_page.get_by_label("Initial state (JSON)").fill('{"document": "invoice.txt"}')
    browser_page.get_by_role("button", name="Start job").click()

    refreshed(
        browser_page, lambda: expect(browser_page.get_by_role("status")).to_have_attribute("data-status", "complete")
    )
    assert calls, "the page called no /jobs route"
    assert all(call.headers.get("authorization") == f"Bearer {token}" for call in calls)
    assert problems == []

    status, job = get_as(dashboard_stack, "/jobs/token-owned", token)
    assert (status, job["status"]) == (200, "complete")
    assert get_as(dashboard_stack, "/jobs/token-owned", jwt("someone-else"))[0] == 404
    with pytest.raises(ApiError) as refused:  # the local IAM identity is another owner
        dashboard_stack.api.get("token-owned")
    assert refused.value.status == 404


def test_a_token_the_api_refuses_is_said_on_the_page(browser_page: Page, dashboard_stack: DevStack) -> None:
    browser_page.goto(f"{dashboard_stack.base_url}/dashboard#token=not-a-jwt")

    alert = browser_page.get_by_role("alert")
    expect(alert).to_contain_text("refused the token")


def _keep_errors(message: ConsoleMessage, problems: list[str]) -> None:
    if message.type == "error":
        problems.append(message.text)
