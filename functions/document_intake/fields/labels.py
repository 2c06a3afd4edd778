"""Labels for values: ``Label: value`` lines, table rows, dot leaders and defined terms."""

from __future__ import annotations

import re
from collections.abc import Iterator

_MAX_LABEL = 60
_DEFINED_TERM = re.compile(r"\s*\(\s*(?:the\s+)?[\"“]([^\"”]{2,40})[\"”]\s*\)")
_LABEL_END = re.compile(r"(?::\s*|\s{2,}|\.{3,}\s*)$")
_TRAILING_NUMBERS = re.compile(r"(?:\s+[-+]?[\d.,%]+)+$")
_SENTENCE_BREAK = re.compile(r"[.;!?]\s+")


def prefix_label(prefix: str) -> str | None:
    """The label in front of a value: ``Due Date:``, a table row's first column, dot leaders."""
    if not prefix.strip() or not _LABEL_END.search(prefix):
        return None
    text = re.sub(r"\.{3,}", " ", prefix).rstrip().rstrip(":").rstrip()
    text = _TRAILING_NUMBERS.sub("", text).rstrip(" :")
    text = " ".join(_SENTENCE_BREAK.split(text)[-1].split())
    if not text or len(text) > _MAX_LABEL or not any(char.isalpha() for char in text):
        return None
    return text


def _label(line: str, value_end: int, line_prefix: str) -> str | None:
    """A defined term right after the value wins; otherwise the line's label, if any."""
    term = _DEFINED_TERM.match(line, value_end)
    if term:
        return term.group(1).strip()
    return prefix_label(line_prefix)


def labelled_matches(text: str, pattern: re.Pattern[str]) -> Iterator[tuple[re.Match[str], str | None]]:
    """Each match of ``pattern`` with its label; matches on one line share that line's prefix."""
    for line in text.splitlines():
        matches = list(pattern.finditer(line))
        if matches:
            prefix = line[: matches[0].start()]
            for match in matches:
                yield match, _label(line, match.end(), prefix)
