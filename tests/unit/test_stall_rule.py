"""The stalled rule's figures the console shows: when the sweep acts at the latest, and its period from the
template's schedule expression."""

from __future__ import annotations

import pytest

from cairn.core.settings import Settings, schedule_seconds
from cairn.scheduling.recovery import Stall, next_sweep_by

STALL = Stall(since=1_000_000, reason="unheld", phase="publish", sequence=7)


@pytest.mark.parametrize(
    ("expression", "seconds"),
    [
        ("rate(5 minutes)", 300),
        ("rate(1 minute)", 60),
        ("rate(2 hours)", 7200),
        ("rate(1 day)", 86_400),
        (" rate( 10  minutes ) ", 600),
        ("cron(0/5 * * * ? *)", None),
        ("", None),
        ("rate(5 fortnights)", None),
    ],
)
def test_the_sweeps_period_is_read_from_a_rate_expression_only(expression: str, seconds: int | None) -> None:
    assert schedule_seconds(expression) == seconds


def test_settings_read_the_period_from_the_environment_and_leave_it_unknown_when_unset() -> None:
    assert Settings.from_env({"CAIRN_SWEEP_SCHEDULE": "rate(15 minutes)"}).sweep_every_seconds == 900
    assert Settings.from_env({}).sweep_every_seconds is None


def test_the_sweep_acts_one_period_after_the_stall_began_or_after_now_once_that_has_passed() -> None:
    assert next_sweep_by(STALL, now_ms=1_100_000, every_seconds=300) == 1_300_000
    assert next_sweep_by(STALL, now_ms=1_400_000, every_seconds=300) == 1_700_000  # past a period: a period from now
    assert next_sweep_by(STALL, now_ms=1_100_000, every_seconds=None) is None


def test_the_stall_says_why_and_what_the_sweep_does_in_words() -> None:
    assert STALL.why == "no worker holds it"
    assert STALL.remedy == "revive: schedule publish again at sequence 7"
    mapped = Stall(since=1, reason="map_done", phase="publish", sequence=3)
    assert mapped.why == "its map's items are done and publish has not started"
    assert Stall(since=1, reason="unheld", phase=None, sequence=3).remedy == "nothing: it names no phase to run next"
