"""Removing a parameter or a condition from a template's text, leaving every other line as it is.

A declaration's block is its key line (``  Name:`` under ``Parameters:`` or ``Conditions:``), the
lines indented deeper after it, and the comment lines at its indentation directly above it (no blank
line between): those say what it is. A section left with no declaration goes too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_TOP_LEVEL = re.compile(r"[^\s#]")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _blank(line: str) -> bool:
    return not line.strip()


def _comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _section(lines: list[str], section: str) -> tuple[int, int] | None:
    """The line of ``section:`` and the line of the next top-level key (or the end); None without it."""
    header = re.compile(rf"{re.escape(section)}:\s*(#.*)?$")
    start = next((index for index, line in enumerate(lines) if header.match(line.rstrip("\n"))), None)
    if start is None:
        return None
    end = next((index for index in range(start + 1, len(lines)) if _TOP_LEVEL.match(lines[index])), len(lines))
    return start, end


def _marker(line: str) -> bool:
    """A line opening or closing a block cairn writes (its machinery, the generated section): never a comment
    about the declaration below it."""
    return line.lstrip().startswith(("# >>> cairn", "# <<< cairn"))


def _comments_above(lines: list[str], index: int, floor: int) -> int:
    """The first line of the comment lines at ``lines[index]``'s indentation directly above it (after ``floor``)."""
    indent = _indent(lines[index])
    while (
        index - 1 > floor
        and _comment(lines[index - 1])
        and not _marker(lines[index - 1])
        and _indent(lines[index - 1]) == indent
    ):
        index -= 1
    return index


def _without_block(lines: list[str], first: int, last: int) -> list[str]:
    """``lines`` without ``lines[first:last]``, and without a blank line the removal would double (or lead with)."""
    if last < len(lines) and _blank(lines[last]) and (first == 0 or _blank(lines[first - 1])):
        last += 1
    return lines[:first] + lines[last:]


def _remove_one(lines: list[str], section: str, name: str) -> list[str]:
    found = _section(lines, section)
    if found is None:
        return lines
    start, end = found
    entries = [index for index in range(start + 1, end) if not _blank(lines[index]) and not _comment(lines[index])]
    if not entries:
        return lines
    indent = _indent(lines[entries[0]])
    key = re.compile(rf" {{{indent}}}([\"']?){re.escape(name)}\1:(\s|$)")
    line = next((index for index in entries if key.match(lines[index])), None)
    if line is None:
        return lines
    last = line + 1
    while last < end and (_blank(lines[last]) or _indent(lines[last]) > indent):
        last += 1
    while _blank(lines[last - 1]):
        last -= 1
    first = _comments_above(lines, line, start)
    if not [index for index in entries if index < first or index >= last]:  # the section's last declaration
        first, last = _comments_above(lines, start, -1), end
        while last > first and _blank(lines[last - 1]):
            last -= 1
    return _without_block(lines, first, last)


def remove(text: str, section: str, names: Iterable[str]) -> str:
    """``text`` without the declarations ``names`` of the top-level ``section`` (a name not there is skipped)."""
    lines = text.splitlines(keepends=True)
    for name in names:
        lines = _remove_one(lines, section, name)
    return "".join(lines)
