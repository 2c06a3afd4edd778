"""The Lambda entry point of a phase function: one advance of one job, for one phase."""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from ..pipeline import Pipeline
from ..scheduling.base import Scheduler
from ..scheduling.messages import AdvanceMessage
from .entry import Handler, LazyRuntime, entry_point
from .observability import keys_for, logger, metrics, record_phase_metrics
from .runtime import Runtime
from .stepfunctions_scheduler import StepRecorder


def phase_handler(pipeline: Pipeline[Any], phase: str, *, runtime: Runtime | None = None) -> Handler:
    """The handler of the function that runs ``phase`` of ``pipeline``.

    The event is ``{"jobId", "owner", "pipeline", "phase", "sequence"}``: the
    advance runs only while the job is still at ``sequence``. The advance's
    worker id is the Lambda request id, so a crash report (on-failure record)
    can take over exactly this invocation's claim. Under the stepfunctions
    driver the response carries the advance the phase asked for.
    """
    own_phase = pipeline.get_phase(phase).name  # an unknown phase is refused at import time
    runtimes = LazyRuntime(runtime)

    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        active = runtimes.get()
        metrics.add_metric(name="PhaseInvocations", unit=MetricUnit.Count, value=1)
        try:
            message = AdvanceMessage.model_validate(event)
        except ValidationError as exc:
            logger.error("Rejected a malformed advance event", extra={"errors": exc.errors(include_url=False)})
            return {"status": "rejected", "error": "malformed advance event"}
        logger.append_keys(**keys_for(message.job_id, message.phase, message.owner))
        if message.pipeline != pipeline.name or pipeline.resolve_name(message.phase) != own_phase:
            logger.error("Rejected an advance meant for another function", extra={"expected": own_phase})
            return {"status": "rejected", "error": f"this function runs {pipeline.name}/{own_phase}"}
        recorder = StepRecorder()
        scheduler: Scheduler = (
            recorder if active.settings.driver == "stepfunctions" else active.lambda_scheduler(message.owner, pipeline)
        )
        started = time.perf_counter()
        jobs = active.cairn(message.owner, pipeline, scheduler=scheduler)
        job = jobs.advance(
            message.job_id, phase=message.phase, sequence=message.sequence, worker=context.aws_request_id
        )
        record_phase_metrics(job, phase=message.phase, duration_ms=(time.perf_counter() - started) * 1000)
        return {
            "jobId": message.job_id,
            "owner": message.owner,
            "phase": message.phase,
            "status": job.status.value if job else "skipped",
            "scheduled": recorder.scheduled.to_wire() if recorder.scheduled else None,
        }

    return entry_point(handler)
