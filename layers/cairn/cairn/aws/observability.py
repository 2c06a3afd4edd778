"""Powertools logging, metrics and tracing, shared by cairn's Lambda entry points.

The X-Ray tracer is made only where it traces (:func:`tracing_enabled`): importing the X-Ray SDK costs
a process 10 to 200 ms (outside Lambda its sampler builds two botocore clients), so a function with
tracing off (``POWERTOOLS_TRACE_DISABLED``, ``cairn dev``'s workers, tests) never loads it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
from aws_lambda_powertools.metrics import MetricUnit

from ..core.models import Job, JobStatus
from ..core.redaction import log_redaction
from ..core.settings import stack_redaction

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer


class RedactingFormatter(LambdaPowertoolsFormatter):
    """Powertools' JSON lines, each redacted as a whole by the process's redaction (:mod:`cairn.core.redaction`)."""

    def format(self, record: logging.LogRecord) -> str:
        """The line, every pattern's match and every secret value in it replaced by ``[redacted]``."""
        return log_redaction(stack_redaction()).text(super().format(record))


logger = Logger(service="cairn", logger_formatter=RedactingFormatter())
# The stack's own namespace (the template sets cairn/<stack>, which its dashboard and alarms read).
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "cairn")

_TRUE = ("1", "y", "yes", "t", "true", "on")
_FALSE = ("0", "n", "no", "f", "false", "off")


def tracing_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether Powertools' Tracer would trace here: in Lambda, not under SAM local or Chalice, not turned off.

    The same decision as ``Tracer()`` makes without ``disabled=``: ``POWERTOOLS_TRACE_DISABLED`` true
    turns it off (a value that is no truth value is a ValueError, as there), and so does running
    outside Lambda (no ``LAMBDA_TASK_ROOT``) or in ``sam local`` (``AWS_SAM_LOCAL``) or Chalice's local
    mode (``AWS_CHALICE_CLI_MODE``).
    """
    env = os.environ if environ is None else environ
    disabled = env.get("POWERTOOLS_TRACE_DISABLED", "false").lower()
    if disabled not in _TRUE + _FALSE:
        raise ValueError(f"invalid truth value {disabled!r}")
    if disabled in _TRUE:
        return False
    return bool(env.get("LAMBDA_TASK_ROOT")) and not (env.get("AWS_SAM_LOCAL") or env.get("AWS_CHALICE_CLI_MODE"))


@cache
def tracer() -> Tracer:
    """The process's X-Ray tracer (service ``cairn``), made on first use: it imports the X-Ray SDK."""
    from aws_lambda_powertools import Tracer

    return Tracer(service="cairn")


def record_job_end(job: Job | None) -> None:
    """``JobsCompleted`` or ``JobsFailed`` when ``job``, as this invocation committed it, has ended.

    Every path that ends a job counts here once: a phase function's advance, and the scheduler's crash
    reports, recorded failures and advances of unknown phases (the failed-jobs alarms watch ``JobsFailed``).
    """
    if job is None:
        return
    if job.status == JobStatus.COMPLETE:
        metrics.add_metric(name="JobsCompleted", unit=MetricUnit.Count, value=1)
    elif job.status == JobStatus.ERROR:
        metrics.add_metric(name="JobsFailed", unit=MetricUnit.Count, value=1)


def record_phase_metrics(job: Job | None, *, phase: str, duration_ms: float) -> None:
    """EMF metrics for one advance: duration, failures, retries and checkpoint size."""
    metrics.add_metric(name="PhaseDuration", unit=MetricUnit.Milliseconds, value=duration_ms)
    if job is None:
        metrics.add_metric(name="PhaseSkipped", unit=MetricUnit.Count, value=1)
        return
    outcome = job.phases[-1].outcome if job.phases else None
    if outcome in ("error", "unknown-phase"):
        metrics.add_metric(name="PhaseFailures", unit=MetricUnit.Count, value=1)
    record_job_end(job)
    if outcome == "retry":
        metrics.add_metric(name="PhaseRetries", unit=MetricUnit.Count, value=1)
    if job.checkpoint is not None and job.checkpoint.state is not None:  # a map's item reads no state kept apart
        size = len(json.dumps(job.checkpoint.state, separators=(",", ":")))
        metrics.add_metric(name="CheckpointBytes", unit=MetricUnit.Bytes, value=size)
    logger.info("Phase advanced", extra={"phase": phase, "status": job.status.value, "outcome": outcome})


def keys_for(job_id: str, phase: str | None, owner: str | None = None) -> dict[str, Any]:
    """The keys every log line of an advance carries."""
    return {"job_id": job_id, "phase": phase, "owner": owner}
