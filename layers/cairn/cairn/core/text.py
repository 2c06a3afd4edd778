"""Showing what a caller sent in an error message or a log line: short, with control characters escaped.

A value quoted back to a caller (an unknown pipeline, an invalid job id, an
unknown field) may be anything a client put in a request, a megabyte long or
full of newlines. :func:`shown` is the one place such values are made safe to
quote; :func:`cut` bounds a whole message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

#: How many characters of a caller's value a message quotes.
SHOWN_CHARS = 100
ELLIPSIS = "…"


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """``value`` escaped as ``repr`` escapes it (without the quotes) and cut to ``limit`` characters.

    ``shown("job-1\\n")`` is ``job-1\\\\n``; a longer value ends with an ellipsis.
    """
    text = value if isinstance(value, str) else repr(value)
    parts: list[str] = []
    used = 0
    for char in text:
        escaped = char if char.isprintable() and char != "\\" else repr(char)[1:-1]
        if used + len(escaped) > limit:
            return "".join(parts) + ELLIPSIS
        parts.append(escaped)
        used += len(escaped)
    return "".join(parts)


def cut(text: str, limit: int) -> str:
    """``text`` itself when it has at most ``limit`` characters; else its start and an ellipsis."""
    return text if len(text) <= limit else text[: max(limit - len(ELLIPSIS), 0)] + ELLIPSIS


def validation_problems(error: ValidationError, whole: str = "state") -> str:
    """A pydantic validation error on one line: each field (``whole`` for the value itself) and what is wrong."""
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or whole
        problems.append(f"{where}: {item['msg']}")
    return "; ".join(problems)
