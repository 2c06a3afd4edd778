"""Screenshots of the built documentation site's getting-started pages, as a reader sees them.

``python -m tests.browser.site_screenshots --site site --out docs/screenshots`` (after ``mkdocs build``) serves
``--site`` on 127.0.0.1 with Python's own HTTP server and photographs, with Debian's chromium: the own-bundle page's
commands (docs-own-bundle.png) and its five steps to add a pipeline, from the section's heading to the end of its
numbered list (docs-own-bundle-steps.png), its template section, from its heading to the table of where the owner's
parts go (docs-own-bundle-template.png), and the first-deploy page's commands (docs-first-deploy.png).
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import FloatRect, ViewportSize, sync_playwright

from tests.browser.chromium import CHROMIUM, CHROMIUM_ARGS, MISSING, chromium_installed

VIEWPORT: ViewportSize = {"width": 1280, "height": 900}


@dataclass(frozen=True)
class Shot:
    """One screenshot: its file, the page, and what it shows: the top of the page in the window, or from the top of
    the element ``start`` to the bottom of the first element ``end`` after it, the page's full width."""

    file: str
    page: str
    start: str | None = None
    end: str | None = None


SHOTS = (
    Shot("docs-own-bundle.png", "getting-started/own-bundle.html"),
    Shot("docs-own-bundle-steps.png", "getting-started/own-bundle.html", "#adding-a-pipeline", "h2 ~ ol"),
    Shot("docs-own-bundle-template.png", "getting-started/own-bundle.html", "#the-template", "#the-template ~ * table"),
    Shot("docs-first-deploy.png", "getting-started/first-deploy.html"),
)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def served(site: Path) -> Iterator[str]:
    """``site`` served on 127.0.0.1 while the block runs; its base URL."""
    port = free_port()
    command = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(site)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.terminate()
        server.wait(timeout=10)


def take(site: Path, out: Path) -> list[Path]:
    """Photograph each of :data:`SHOTS` of the built ``site`` into ``out``; the files written."""
    if not chromium_installed():
        raise SystemExit(MISSING)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with served(site) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            for shot in SHOTS:
                page.goto(base + shot.page, wait_until="load")
                path = out / shot.file
                if shot.start is None or shot.end is None:
                    page.screenshot(path=str(path))
                else:
                    top = page.eval_on_selector(shot.start, "e => e.getBoundingClientRect().top + window.scrollY")
                    bottom = page.eval_on_selector(shot.end, "e => e.getBoundingClientRect().bottom + window.scrollY")
                    clip: FloatRect = {"x": 0, "y": top - 20, "width": VIEWPORT["width"], "height": bottom - top + 40}
                    page.screenshot(path=str(path), full_page=True, clip=clip)
                written.append(path)
        finally:
            browser.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--site", type=Path, default=Path("site"), help="the built site (mkdocs build)")
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    arguments = parser.parse_args()
    for path in take(arguments.site, arguments.out):
        print(path)


if __name__ == "__main__":
    main()
