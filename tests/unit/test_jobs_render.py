"""What `cairn jobs` prints for a paused job whose worker still runs its phase, and for one that has stopped."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cairn.client.render import job_details, status_line

NOW = int(datetime(2026, 12, 2, 10, 0, tzinfo=UTC).timestamp() * 1000)


def paused_view(**changes: Any) -> dict[str, Any]:
    view: dict[str, Any] = {
        "jobId": "invoice-7",
        "pipeline": "document-intake",
        "status": "paused",
        "nextPhase": "extract",
        "attempt": 2,
        "createdAt": NOW - 60_000,
        "updatedAt": NOW - 5_000,
        "phases": [],
    }
    return {**view, **changes}


def test_a_paused_job_whose_worker_still_runs_says_it_is_pausing() -> None:
    view = paused_view(claimedAt=NOW - 30_000)

    details = job_details(view, NOW)
    line = status_line(view)

    assert "Status:" in details
    assert "paused (pausing: phase extract is still running since " in details
    assert line.startswith("invoice-7 (document-intake): paused (pausing: phase extract is still running since ")
    assert line.endswith(", next phase extract, attempt 2")


def test_a_paused_job_without_a_worker_is_just_paused() -> None:
    view = paused_view(claimedAt=None)

    assert "pausing" not in job_details(view, NOW)
    assert status_line(view) == "invoice-7 (document-intake): paused, next phase extract, attempt 2"


def test_only_a_paused_job_is_pausing() -> None:
    running = paused_view(status="running", claimedAt=NOW - 30_000)

    assert "pausing" not in job_details(running, NOW)
    assert "pausing" not in status_line(running)
