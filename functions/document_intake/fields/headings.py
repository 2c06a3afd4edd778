"""Headings: markdown ``#`` lines and short all-capitals lines."""

from __future__ import annotations

import re

from .money import AMOUNT
from .parties import EMAIL

_NUMBERING = re.compile(r"^(?:(?:section|article|part)\s+\w+[.:]?\s+|\d+(?:\.\d+)*\.?\s+)", re.IGNORECASE)


def is_heading(line: str) -> bool:
    """A markdown heading, or a short line whose letters are all capitals (``2. TERM``)."""
    text = line.strip()
    if text.startswith("#"):
        return bool(text.lstrip("#").strip())
    if not 4 <= len(text) <= 80 or EMAIL.search(text) or AMOUNT.search(text):
        return False
    letters = [char for char in _NUMBERING.sub("", text) if char.isalpha()]
    return len(letters) >= 4 and not any(char.islower() for char in letters)


def find_headings(text: str) -> list[str]:
    """The page's headings, in order, as written (markdown ``#`` marks removed)."""
    return [line.strip().lstrip("#").strip() for line in text.splitlines() if is_heading(line)]


def page_heading(text: str) -> str | None:
    """The page's first heading, else its first non-blank line (shortened)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    heading = next((line.lstrip("#").strip() for line in lines if is_heading(line)), None)
    if heading is None and lines:
        heading = lines[0] if len(lines[0]) <= 80 else lines[0][:77] + "..."
    return heading
