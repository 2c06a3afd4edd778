"""The dashboard opens in a real browser, served by ``cairn dev``."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, Request, Response

pytestmark = pytest.mark.xdist_group("browser-2")


def test_the_dashboard_opens_with_its_title(browser_page: Page, dev_dashboard: str) -> None:
    response = browser_page.goto(f"{dev_dashboard}/")

    assert response is not None
    assert response.status == 200
    assert "cairn" in browser_page.title()


def test_its_files_come_gzipped_and_a_reload_revalidates_them_with_304s(browser_page: Page, dev_dashboard: str) -> None:
    first: dict[str, Response] = {}

    def seen_response(response: Response) -> None:
        first.setdefault(response.url, response)

    browser_page.on("response", seen_response)
    browser_page.goto(f"{dev_dashboard}/")
    browser_page.wait_for_load_state("networkidle")
    style = first[f"{dev_dashboard}/assets/app.css"]

    assert style.status == 200
    assert style.header_value("content-encoding") == "gzip"
    assert style.header_value("etag") is not None
    assert "app.css" in browser_page.evaluate("[...document.styleSheets].map((sheet) => sheet.href).join(' ')")

    again: dict[str, Request] = {}

    def seen_request(request: Request) -> None:
        again.setdefault(request.url, request)

    browser_page.on("request", seen_request)
    browser_page.reload()
    browser_page.wait_for_load_state("networkidle")
    revalidated = again[f"{dev_dashboard}/assets/app.css"]

    assert revalidated.header_value("if-none-match") == style.header_value("etag")
    answer = revalidated.response()
    assert answer is not None
    assert answer.status == 304
