"""A result too large for one reply, in chromium: the job's page offers it as a link, and the link answers it.

The pipeline is ``gated`` (tests/local/gated_pipeline.py), whose ``finish`` adds ``result_characters`` of random
non-ASCII text to the result: a million characters escape to about 6 MB of reply, past the API's bound.
"""

from __future__ import annotations

import gzip
import json

import pytest
import requests
from playwright.sync_api import Page, expect

from tests.browser.dashboard import open_job
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-1")
CHARACTERS = 1_000_000


def test_a_result_too_large_for_a_reply_is_offered_as_a_link_that_answers_it(
    browser_page: Page, gated_stack: DevStack
) -> None:
    gated_stack.api.start("gated", state={"result_characters": CHARACTERS}, job_id="big-result")
    gated_stack.wait_for("big-result")
    page = browser_page
    banner = open_job(page, gated_stack.base_url, "big-result")
    expect(banner).to_have_attribute("data-status", "complete")

    panel = page.get_by_role("region", name="Checkpoint")
    expect(panel).to_contain_text("Too large to show here")
    link = panel.get_by_role("link", name="open the result")
    href = link.get_attribute("href")
    assert href is not None
    answer = requests.get(href, timeout=60)
    assert answer.status_code == 200, answer.text[:300]
    body = answer.content
    result = json.loads(gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body)
    assert result["ran"] == ["gather", "check", "finish"]
    assert len(result["bulk"]) == CHARACTERS
