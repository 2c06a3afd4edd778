"""A point in time as the CLI takes it: an ISO 8601 date-time, or an age back from now (``90s``, ``2h``, ``7d``)."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta

_AGE = re.compile(r"^(\d{1,9})([smhdw])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def moment(text: str, *, now: datetime | None = None) -> str:
    """``text`` as an ISO 8601 UTC date-time the API takes; an argparse error when it is neither form."""
    age = _AGE.fullmatch(text.strip())
    if age is not None:
        current = now or datetime.now(tz=UTC)
        return _iso(current - timedelta(seconds=int(age.group(1)) * _UNIT_SECONDS[age.group(2)]))
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a time: {text!r} (use ISO 8601, e.g. 2026-12-01T09:30:00Z, or an age like 30m, 2h, 7d)"
        ) from None
    return _iso(parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC))


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
