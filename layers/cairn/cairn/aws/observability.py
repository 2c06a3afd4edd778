"""Powertools logging, metrics and tracing, shared by cairn's Lambda entry points."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from ..models import Job

logger = Logger(service="cairn")
metrics = Metrics(namespace="cairn")
tracer = Tracer(service="cairn")


def record_phase_metrics(job: Job | None, *, phase: str, duration_ms: float) -> None:
    """EMF metrics for one advance: duration, failures, retries and checkpoint size."""
    metrics.add_metric(name="PhaseDuration", unit=MetricUnit.Milliseconds, value=duration_ms)
    if job is None:
        metrics.add_metric(name="PhaseSkipped", unit=MetricUnit.Count, value=1)
        return
    outcome = job.phases[-1].outcome if job.phases else None
    if outcome in ("error", "unknown-phase"):
        metrics.add_metric(name="PhaseFailures", unit=MetricUnit.Count, value=1)
    if outcome == "retry":
        metrics.add_metric(name="PhaseRetries", unit=MetricUnit.Count, value=1)
    if job.checkpoint is not None:
        size = len(json.dumps(job.checkpoint.state, separators=(",", ":")))
        metrics.add_metric(name="CheckpointBytes", unit=MetricUnit.Bytes, value=size)
    logger.info("Phase advanced", extra={"phase": phase, "status": job.status.value, "outcome": outcome})


def keys_for(job_id: str, phase: str | None, owner: str | None = None) -> dict[str, Any]:
    """The keys every log line of an advance carries."""
    return {"job_id": job_id, "phase": phase, "owner": owner}
