"""The Lambda entry point of a phase function: one advance of one job, for one phase of one pipeline."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from ..core.errors import ConfigurationError
from ..core.pipeline import Pipeline
from ..core.registry import PipelineRegistry
from ..core.scheduler_port import Scheduler
from ..core.settings import PHASE, PIPELINE, Settings
from ..core.text import shown
from ..scheduling.messages import AdvanceMessage
from .bundle_pipelines import own_pipelines as own_pipelines  # where a bundle's phases.py imports it from
from .entry import Handler, LazyRuntime, entry_point
from .execution_history import hand_off, slot_goes_on
from .observability import keys_for, logger, metrics, record_phase_metrics
from .routing import function_for
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
    return entry_point(_advance_handler(pipeline, phase, LazyRuntime(runtime)))


def registry_phase_handler(
    registry: PipelineRegistry, *, runtime: Runtime | None = None, environ: Mapping[str, str] | None = None
) -> Handler:
    """The one handler of every phase function: it runs the phase its function's environment names.

    Each phase function is deployed with ``CAIRN_PIPELINE`` and ``CAIRN_PHASE``
    (``environ``, ``os.environ`` by default); they are read once, on the
    process's first invocation (so a deployment error is logged with it), and
    the function then behaves as ``phase_handler(pipeline, phase)``.
    """
    runtimes = LazyRuntime(runtime)
    resolved: list[Handler] = []

    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        if not resolved:
            pipeline, phase = phase_from_environment(registry, environ)
            resolved.append(_advance_handler(pipeline, phase, runtimes))
        return resolved[0](event, context)

    return entry_point(handler)


def phase_from_environment(
    registry: PipelineRegistry, environ: Mapping[str, str] | None = None
) -> tuple[Pipeline[Any], str]:
    """The pipeline and phase that ``CAIRN_PIPELINE`` and ``CAIRN_PHASE`` name; ConfigurationError if they do not."""
    env = os.environ if environ is None else environ
    names = {variable: env.get(variable, "") for variable in (PIPELINE, PHASE)}
    missing = [variable for variable, value in names.items() if not value]
    if missing:
        raise ConfigurationError(f"A phase function needs {' and '.join(missing)} in its environment")
    if names[PIPELINE] not in registry.names:
        known = ", ".join(registry.names) or "none"
        raise ConfigurationError(
            f'{PIPELINE} names no registered pipeline: "{shown(names[PIPELINE])}" (known: {known})'
        )
    pipeline = registry.get(names[PIPELINE])
    if names[PHASE] not in pipeline.phase_names:
        known = ", ".join(pipeline.phase_names)
        raise ConfigurationError(
            f'{PHASE} names no phase of pipeline "{pipeline.name}": "{shown(names[PHASE])}" (its phases: {known})'
        )
    return pipeline, names[PHASE]


def next_advance(recorder: StepRecorder, pipeline: Pipeline[Any], settings: Settings) -> dict[str, Any] | None:
    """The advance a state machine runs next without resolving it again: the one the phase asked for at once.

    None when it asked for none, or for one after a delay (the state machine waits, then resolves the job as it
    then stands). The advance carries the sequence the phase's commit reached: a stale one is a no-op.
    """
    scheduled = recorder.scheduled
    if scheduled is None or scheduled.delay > 0 or scheduled.sequence is None:
        return None
    return {
        "run": True,
        "phase": scheduled.phase,
        "sequence": scheduled.sequence,
        "functionName": function_for(pipeline, scheduled.phase, settings),
    }


def _advance_handler(pipeline: Pipeline[Any], phase: str, runtimes: LazyRuntime) -> Handler:
    """The undecorated handler that advances jobs of ``pipeline`` at ``phase``."""
    own_phase = pipeline.get_phase(phase).name  # an unknown phase is refused when the handler is made

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
        recorder = StepRecorder(  # a job woken for its owner's share runs in an execution of its own
            owner=message.owner,
            pipeline=pipeline.name,
            waker=lambda: active.execution_scheduler(message.owner, pipeline.name),
        )
        scheduler: Scheduler = (
            recorder if active.settings.driver == "stepfunctions" else active.lambda_scheduler(message.owner, pipeline)
        )
        started = time.perf_counter()
        jobs = active.cairn(message.owner, pipeline, scheduler=scheduler)
        job = jobs.advance(
            message.job_id,
            phase=message.phase,
            sequence=message.sequence,
            worker=context.aws_request_id,
            fan_out=message.fan_out,
            item=message.item,
        )
        record_phase_metrics(job, phase=message.phase, duration_ms=(time.perf_counter() - started) * 1000)
        scheduled = recorder.scheduled.to_wire() if recorder.scheduled else None
        reply: dict[str, Any] = {
            "jobId": message.job_id,
            "owner": message.owner,
            "phase": message.phase,
            "status": job.status.value if job else "skipped",
            "scheduled": scheduled,
            "next": next_advance(recorder, pipeline, active.settings),
            "items": [
                item.model_copy(update={"function_name": function_for(pipeline, item.phase, active.settings)}).to_wire()
                for item in recorder.items
                if message.item is None or slot_goes_on(message.item, item.item)
            ],
        }
        handed = hand_off(message.job_id, since=event.get("since"), ran_at=message.sequence, scheduled=scheduled)
        if handed is not None:  # the state machine starts a fresh execution for the job (its history limit)
            reply["handOff"] = handed
        return reply

    return handler
