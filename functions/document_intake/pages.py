"""Splitting a document's text into pages, at form feeds and explicit page markers."""

from __future__ import annotations

import re

FORM_FEED = "\f"
PAGE_MARKER = re.compile(r"^[ \t]*-{3,}[ \t]*page(?:[ \t]+\d+(?:[ \t]+of[ \t]+\d+)?)?[ \t]*-{3,}[ \t]*$", re.I | re.M)
"""A line such as ``--- page 2 of 4 ---`` or ``--- page ---``: a new page starts after it."""


def split_pages(text: str) -> list[str]:
    """The pages of ``text``, split at form feeds and page markers; blank pages are dropped."""
    pages: list[str] = []
    for sheet in text.split(FORM_FEED):
        pages.extend(part.strip() for part in PAGE_MARKER.split(sheet))
    return [page for page in pages if page]


def page_breaks(text: str) -> str:
    """How ``text`` marks its pages: ``form feeds``, ``page markers``, both, or ``none``."""
    kinds = [
        name for name, found in (("form feeds", FORM_FEED in text), ("page markers", PAGE_MARKER.search(text))) if found
    ]
    return " and ".join(kinds) or "none"
