"""The dashboard opens in a real browser, served by ``cairn dev``."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.xdist_group("browser")


def test_the_dashboard_opens_with_its_title(browser_page: Page, dev_dashboard: str) -> None:
    response = browser_page.goto(f"{dev_dashboard}/")

    assert response is not None
    assert response.status == 200
    assert "cairn" in browser_page.title()
