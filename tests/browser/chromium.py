"""Debian's chromium, as the browser tests and the dashboard's screenshots (``make screenshots``) launch it.

Playwright's own browser download is never used: Playwright drives ``/usr/bin/chromium`` (``make chromium``
installs it) with these arguments.
"""

from __future__ import annotations

import os
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""Headless, and nothing that reaches out to the network on its own."""
MISSING = f"{CHROMIUM} is missing: run `make chromium` (or apt-get install chromium) first"
"""What to say when it is not installed."""


def chromium_installed() -> bool:
    """Whether Debian's chromium is there and executable."""
    return CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)
