"""What `cairn jobs show` prints of the code each phase run ran: its version, short, and where it changed.

A deploy can replace a phase's code between two runs of it (a failed attempt and its retry, a run and a
rerun): the row of the later run says so, ``(changed)``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from cairn.client.render import code_changes, job_details, short_version, timeline

NOW = int(datetime(2026, 12, 2, 10, 0, tzinfo=UTC).timestamp() * 1000)
OLD = "sha256:9ab81c2d3e4f"
NEW = "sha256:3f2a9c1b7d4e"


def record(phase: str, attempt: int, outcome: str, version: str | None, **more: Any) -> dict[str, Any]:
    started = NOW - 60_000 + attempt * 1000
    return {
        "phase": phase,
        "attempt": attempt,
        "startedAt": started,
        "endedAt": started + 400,
        "outcome": outcome,
        **({"codeVersion": version} if version is not None else {}),
        **more,
    }


def view(phases: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "jobId": "invoice-7",
        "pipeline": "document-intake",
        "status": "complete",
        "attempt": 2,
        "createdAt": NOW - 60_000,
        "updatedAt": NOW - 5_000,
        "phases": phases,
    }


def table_rows(details: str) -> list[list[str]]:
    """The phase table of ``cairn jobs show``, its header first, each row split on its column gaps."""
    lines = details.splitlines()
    start = lines.index("Phases:") + 1
    return [re.split(r"\s{2,}", line.strip()) for line in lines[start:] if line.startswith("  ")]


def test_each_run_shows_its_code_version_and_a_run_after_a_deploy_is_marked_changed() -> None:
    phases = [
        record("fetch", 1, "next", OLD, nextPhase="check"),
        record("check", 1, "retry", OLD, error="The gate is closed"),
        record("check", 2, "next", NEW, nextPhase="publish"),
        record("publish", 1, "done", NEW),
    ]

    rows = table_rows(job_details(view(phases), NOW))

    assert rows[0] == ["PHASE", "ATTEMPT", "OUTCOME", "STARTED", "DURATION", "CODE", "ERROR"]
    assert [(row[0], row[1], row[5]) for row in rows[1:]] == [
        ("fetch", "1", "9ab81c2d3e4f"),
        ("check", "1", "9ab81c2d3e4f"),
        ("check", "2", "3f2a9c1b7d4e (changed)"),  # the deploy came between the two runs of check
        ("publish", "1", "3f2a9c1b7d4e"),  # its first run: nothing to compare with
    ]
    assert rows[2][6] == "The gate is closed"


def test_the_same_code_on_every_run_marks_nothing() -> None:
    phases = [record("check", 1, "retry", NEW), record("check", 2, "retry", NEW), record("check", 3, "done", NEW)]

    out = timeline(phases)

    assert "changed" not in out
    assert out.count("3f2a9c1b7d4e") == 3


def test_a_phase_is_compared_with_its_own_previous_run_not_the_run_before() -> None:
    phases = [
        record("extract", 1, "next", OLD, nextPhase="publish"),
        record("publish", 1, "retry", NEW),  # another phase, other code: no change of extract's
        record("extract", 2, "next", OLD, nextPhase="publish"),  # a rerun of extract on the code it ran before
        record("publish", 2, "done", OLD),  # publish's code went back: that is a change too
    ]

    assert code_changes(phases) == [None, None, None, NEW]


def test_runs_without_a_version_show_none_and_neither_change_nor_compare() -> None:
    phases = [
        record("check", 1, "retry", OLD),
        record("check", 2, "retry", None),  # written before cairn kept versions, or by a worker that could not tell
        record("check", 3, "done", NEW),
    ]

    assert code_changes(phases) == [None, None, OLD]
    rows = table_rows(job_details(view(phases), NOW))
    assert [row[5] for row in rows[1:]] == ["9ab81c2d3e4f", "-", "3f2a9c1b7d4e (changed)"]


def test_no_version_anywhere_is_no_column() -> None:
    rows = table_rows(job_details(view([record("check", 1, "done", None)]), NOW))

    assert rows[0] == ["PHASE", "ATTEMPT", "OUTCOME", "STARTED", "DURATION"]


@pytest.mark.parametrize(
    ("version", "shown"),
    [
        ("sha256:3f2a9c1b7d4e", "3f2a9c1b7d4e"),  # a hash of the phase's module: its hex digits
        ("4b825dc642cb6eb9a060e54bf8d69288fbee4904", "4b825dc642cb"),  # a commit: its first 12 digits
        ("lambda:7", "lambda:7"),  # a published Lambda version
        ("build-42", "build-42"),
        ("20261202100000", "20261202100000"),  # a build number that is all digits: no hash, kept whole
        ("release-2026-12-02-hotfix-3", "release-2026-12-02-…"),
        (None, "-"),
        ("", "-"),
    ],
)
def test_a_version_is_shown_short(version: str | None, shown: str) -> None:
    assert short_version(version) == shown
