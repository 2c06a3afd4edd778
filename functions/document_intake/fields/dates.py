"""Dates in text, normalised to ISO 8601."""

from __future__ import annotations

import re
from datetime import date

from .labels import labelled_matches
from .models import DateField

_MONTH_NAMES = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_NUMBER = {name[:3]: number for number, name in enumerate(_MONTH_NAMES, start=1)}


def _month_pattern() -> str:
    words: set[str] = set()
    for name in _MONTH_NAMES:
        for word in {name, name[:3], *(["sept"] if name == "september" else [])}:
            words.update({word.capitalize(), word.upper()})
    return "(?:" + "|".join(sorted(words, key=len, reverse=True)) + ")"


_MONTH = _month_pattern()
_DATE = re.compile(
    r"(?<![\w-])(?:"
    r"(?P<iso_y>\d{4})-(?P<iso_m>\d{1,2})-(?P<iso_d>\d{1,2})"
    rf"|(?P<md_m>{_MONTH})\.?\s+(?P<md_d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<md_y>\d{{4}})"
    rf"|(?P<dm_d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<dm_m>{_MONTH})\.?,?\s+(?P<dm_y>\d{{4}})"
    r"|(?P<num_a>\d{1,2})(?P<sep>[/.])(?P<num_b>\d{1,2})(?P=sep)(?P<num_y>\d{4})"
    r")(?![\w-])"
)


def _date_of(match: re.Match[str]) -> date | None:
    """The calendar date a match names; None when it is not a real date (``2025-02-30``)."""
    group = match.group
    if group("iso_y"):
        year, month, day = int(group("iso_y")), int(group("iso_m")), int(group("iso_d"))
    elif group("md_m"):
        year, month, day = int(group("md_y")), _MONTH_NUMBER[group("md_m")[:3].lower()], int(group("md_d"))
    elif group("dm_m"):
        year, month, day = int(group("dm_y")), _MONTH_NUMBER[group("dm_m")[:3].lower()], int(group("dm_d"))
    else:
        first, second, year = int(group("num_a")), int(group("num_b")), int(group("num_y"))
        day_first = group("sep") == "." or first > 12
        day, month = (first, second) if day_first else (second, first)
    try:
        return date(year, month, day)
    except ValueError:
        return None


def parse_date(text: str) -> date | None:
    """The date ``text`` names, if it is one date and nothing else.

    Accepts ``2025-03-03``, ``March 3, 2025``, ``3 March 2025``, ``Mar. 3 2025``,
    ``03/15/2025`` (month first, unless the first number is over 12) and
    ``15.03.2025`` (day first).
    """
    match = _DATE.fullmatch(text.strip())
    return _date_of(match) if match else None


def find_dates(text: str) -> list[DateField]:
    """Every valid date in ``text``, in order, normalised to ISO 8601."""
    found = []
    for match, label in labelled_matches(text, _DATE):
        value = _date_of(match)
        if value is not None:
            found.append(DateField(value=value.isoformat(), text=match.group(0), label=label))
    return found
