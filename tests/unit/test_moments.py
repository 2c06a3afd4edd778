"""The CLI's times: ISO 8601 (UTC unless it names an offset) or an age back from now."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

import pytest

from cairn.client.moments import moment

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", "2026-12-01T11:58:30.000Z"),
        ("30m", "2026-12-01T11:30:00.000Z"),
        ("2h", "2026-12-01T10:00:00.000Z"),
        ("7d", "2026-11-24T12:00:00.000Z"),
        ("1w", "2026-11-24T12:00:00.000Z"),
        ("2026-12-01T09:30:00Z", "2026-12-01T09:30:00.000Z"),
        ("2026-12-01T09:30:00+02:00", "2026-12-01T07:30:00.000Z"),
        ("2026-12-01", "2026-12-01T00:00:00.000Z"),
    ],
)
def test_a_time_is_sent_as_utc_iso_8601(text: str, expected: str) -> None:
    assert moment(text, now=NOW) == expected


@pytest.mark.parametrize("text", ["yesterday", "2h ago", "-3d", "", "12x"])
def test_anything_else_is_a_usage_error_naming_both_forms(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="ISO 8601"):
        moment(text, now=NOW)
