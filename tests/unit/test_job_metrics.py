"""A phase run that ends its job counts it: JobsCompleted or JobsFailed, beside PhaseDuration (the dashboard's jobs)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cairn.aws.observability import metrics, record_phase_metrics
from cairn.core.models import Job, JobStatus, PhaseRecord


@pytest.fixture(autouse=True)
def metrics_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)


def emitted(job: Job, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The metrics one advance that returned ``job`` prints (its EMF blob's values, by name)."""
    capsys.readouterr()
    record_phase_metrics(job, phase="publish", duration_ms=12.0)
    metrics.flush_metrics()
    (blob,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    (directive,) = blob["_aws"]["CloudWatchMetrics"]
    return {item["Name"]: blob[item["Name"]] for item in directive["Metrics"]}


def job_with(status: JobStatus, outcome: str) -> Job:
    record = PhaseRecord(phase="publish", attempt=1, started_at=0, ended_at=12, outcome=outcome)  # type: ignore[arg-type]
    return Job(
        job_id="j-1", pipeline="p", status=status, created_at=0, updated_at=12, expires_at=2**31, phases=[record]
    )


@pytest.mark.parametrize(
    ("status", "outcome", "counted"),
    [
        (JobStatus.COMPLETE, "done", {"JobsCompleted"}),
        (JobStatus.ERROR, "error", {"JobsFailed", "PhaseFailures"}),
        (JobStatus.RUNNING, "next", set()),
        (JobStatus.RUNNING, "retry", {"PhaseRetries"}),
    ],
)
def test_a_run_that_ends_its_job_counts_it(
    status: JobStatus, outcome: str, counted: set[str], capsys: pytest.CaptureFixture[str]
) -> None:
    values = emitted(job_with(status, outcome), capsys)
    assert values.pop("PhaseDuration") == [12.0]
    assert set(values) == counted
    assert all(value == [1.0] for value in values.values())
