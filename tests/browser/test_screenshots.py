"""``make screenshots`` photographs each view of the dashboard once it shows its data."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from tests.browser.screenshots import SHOTS, VIEWPORT, take_screenshots
from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("browser-2")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """A PNG's width and height, from its IHDR chunk (the first, right after the signature)."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_SIGNATURE, f"{path.name} is not a PNG"
    assert head[12:16] == b"IHDR", f"{path.name} does not start with its IHDR chunk"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_the_screenshots_show_eight_different_views(
    browser: Browser, dashboard_stack: DevStack, tmp_path: Path
) -> None:
    paths = take_screenshots(dashboard_stack, browser, tmp_path)

    assert sorted(path.name for path in paths) == sorted(
        [
            "jobs.png",
            "jobs-filtered.png",
            "bulk-dialog.png",
            "job-running.png",
            "job-error.png",
            "job-complete.png",
            "job-map.png",
            "failures.png",
        ]
    )
    assert [path.name for path in paths] == [shot.file for shot in SHOTS]
    for path in paths:
        assert path.parent == tmp_path
        width, height = png_size(path)
        assert (width, height) == (VIEWPORT["width"], VIEWPORT["height"]), path.name
    digests = {hashlib.sha256(path.read_bytes()).hexdigest() for path in paths}
    assert len(digests) == len(paths), "two screenshots are the same image"
