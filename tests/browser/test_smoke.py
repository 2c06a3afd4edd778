"""The dashboard opens in a real browser, served by ``cairn dev``."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, Request, Response, expect

pytestmark = pytest.mark.xdist_group("browser-2")


def test_the_dashboard_opens_with_its_title(browser_page: Page, dev_dashboard: str) -> None:
    response = browser_page.goto(f"{dev_dashboard}/")

    assert response is not None
    assert response.status == 200
    assert "cairn" in browser_page.title()


def test_a_first_load_is_one_page_one_script_one_stylesheet_then_api_calls_and_a_reload_reuses_them(
    browser_page: Page, dev_dashboard: str
) -> None:
    first: list[Request] = []
    browser_page.on("request", lambda request: first.append(request))
    browser_page.goto(f"{dev_dashboard}/")
    browser_page.wait_for_load_state("networkidle")

    files = [request for request in first if not is_api_call(request, dev_dashboard)]
    assert sorted(request.resource_type for request in files) == ["document", "script", "stylesheet"], files
    by_type = {request.resource_type: request.response() for request in files}
    page, script, style = by_type["document"], by_type["script"], by_type["stylesheet"]
    assert page is not None
    assert script is not None
    assert style is not None
    assert re.search(r"/assets/app\.[0-9a-f]{16}\.js$", script.url)
    assert re.search(r"/assets/app\.[0-9a-f]{16}\.css$", style.url)
    assert page.header_value("cache-control") == "no-cache"  # a deploy is seen at the next load
    for cached in (script, style):
        assert cached.status == 200
        assert not unsent(cached)
        assert cached.header_value("cache-control") == "public, max-age=31536000, immutable"
        assert cached.header_value("content-encoding") == "gzip"
    expect(browser_page.get_by_role("heading", name="Jobs", exact=True)).to_be_visible()  # the script ran
    assert "app." in browser_page.evaluate("[...document.styleSheets].map((sheet) => sheet.href).join(' ')")

    served: list[Response] = []
    browser_page.on("response", lambda response: served.append(response))
    browser_page.reload()
    browser_page.wait_for_load_state("networkidle")

    fetched = [response for response in served if response.url in (script.url, style.url)]
    assert sorted(response.url for response in fetched) == sorted((script.url, style.url))  # the same URLs
    assert [response.url for response in fetched if not unsent(response)] == []  # neither asked of the server


def is_api_call(request: Request, base_url: str) -> bool:
    """Whether a request is one of the page's calls to the API (a fetch), not a file of the dashboard."""
    return request.resource_type == "fetch" and request.url.startswith(base_url)


def unsent(response: Response) -> bool:
    """Whether the browser took a response from its cache without asking the server (or was told 304)."""
    return response.status == 304 or response.request.timing["requestStart"] == -1
