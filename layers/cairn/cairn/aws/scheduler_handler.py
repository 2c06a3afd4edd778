"""The scheduler function: delayed advances, crash reports, the sweep, and the state machine's steps.

It receives five kinds of event:

- SQS records from the delay queue: an advance whose backoff has run out;
- the checkpoint table's stream records of job items: each owner's counts by status (:mod:`.status_stream`);
- Lambda on-failure records from phase functions: the worker died (timeout,
  out of memory); the phase's retry policy decides between a retry and ``error``;
- the scheduled sweep: running jobs with no live claim that stalled between
  a commit and the invoke that should have followed are advanced again;
- ``{"action": "resolve"}`` from the state machine: the job's next phase and its function;
- ``{"action": "record-failure"}`` from the state machine's Catch, and
  ``{"action": "advance"}`` for a phase with no function (an unknown phase);
- a bulk operation's next chunk (:mod:`.bulk_worker`), from the delay queue too;
- ``{"action": "start"}`` and ``{"action": "retry"}`` from trusted callers inside
  the account (an EventBridge rule, another service): the API's start and retry
  without HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.engine import record_crash
from ..core.errors import JobExistsError
from ..core.failures import reported_failure
from ..core.models import Failure, Job, JobStatus, RetryMode
from ..core.registry import PipelineRegistry
from ..core.scheduler_port import Scheduler
from ..scheduling import recovery
from ..scheduling.messages import AdvanceMessage
from .bulk_worker import BulkMessage, BulkRunner, is_bulk_message, send_bulk
from .entry import Handler, LazyRuntime, entry_point
from .observability import logger, metrics, record_job_end
from .routing import function_for
from .runtime import Runtime
from .status_stream import count_status_changes, is_stream_event
from .stepfunctions_scheduler import StepRecorder

EARLY_MS = 1000
"""How early a delayed advance may be invoked rather than queued again (not a wait's timeout)."""


class _ActionRequest(BaseModel):
    """Base of the ``{"action": ...}`` events (from the state machine, or a trusted caller)."""

    # defer_build: the validator is built on first use, not at import (an event is one of these, at most).
    model_config = ConfigDict(defer_build=True)


class ResolveRequest(_ActionRequest):
    """The state machine asks which phase runs next; with ``sequence``, only if the job is still there."""

    jobId: str
    owner: str
    pipeline: str
    sequence: int | None = None


class StartRequest(_ActionRequest):
    """Start a new job (never touching an existing one) with ``state`` as its initial state."""

    jobId: str
    owner: str
    pipeline: str
    state: Any = None


class RetryRequest(_ActionRequest):
    """Retry a job: ``resume`` from its checkpoint or start it ``full``y over."""

    jobId: str
    owner: str
    pipeline: str
    mode: RetryMode = RetryMode.RESUME
    state: Any = None


class DiscardRecord(_ActionRequest):
    """``cairn ops redrive --discard``: who discarded which dead-lettered message, why, and what it was about."""

    messageId: str = Field(max_length=200)
    by: str = Field(min_length=1, max_length=2048)
    reason: str = Field(min_length=1, max_length=1000)
    kind: str = Field(default="event", max_length=100)
    jobId: str | None = Field(default=None, max_length=300)
    phase: str | None = Field(default=None, max_length=300)
    failedAt: str | None = Field(default=None, max_length=100)
    why: str = Field(default="", max_length=1000)


class FailureReport(_ActionRequest):
    """The state machine's Catch: the phase task failed (``error`` is Step Functions' Error/Cause)."""

    jobId: str
    owner: str
    pipeline: str
    phase: str
    sequence: int | None = None
    error: dict[str, Any] = {}

    def cause(self) -> dict[str, Any]:
        """The error's cause as Lambda gives it (``errorType``, ``errorMessage``, ``stackTrace``, ``requestId``)."""
        try:
            cause = json.loads(str(self.error.get("Cause") or ""))
        except ValueError:
            return {}
        return _mapping(cause)

    def request_id(self) -> str | None:
        """The failed invocation's request id, when Lambda put it in the error's cause."""
        request_id = self.cause().get("requestId")
        return request_id if isinstance(request_id, str) and request_id else None

    def failure(self) -> Failure | None:
        """The type and stack of the failure, from Lambda's cause, else the state's ``Error`` name."""
        cause = self.cause()
        return reported_failure(cause.get("errorType") or self.error.get("Error"), cause.get("stackTrace"))


def scheduler_handler(pipelines: PipelineRegistry, *, runtime: Runtime | None = None) -> Handler:
    """The scheduler function's handler for the pipelines of a deployment."""
    runtimes = LazyRuntime(runtime)

    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        dispatch = Dispatcher(pipelines, runtimes.get(), remaining_ms=_remaining(context))
        metrics.add_metric(name="SchedulerEvents", unit=MetricUnit.Count, value=1)
        if isinstance(event.get("Records"), list):
            if is_stream_event(event["Records"]):
                return count_status_changes(event["Records"], dispatch.runtime.status_counts())
            return dispatch.delayed(event["Records"])
        if "requestContext" in event and "requestPayload" in event:
            return dispatch.crash_report(event)
        if event.get("detail-type") == "Scheduled Event":
            return dispatch.sweep()
        action = event.get("action")
        if action == "resolve":
            return dispatch.resolve(ResolveRequest.model_validate(event))
        if action == "record-failure":
            return dispatch.record_failure(FailureReport.model_validate(event))
        if action == "advance":
            return dispatch.advance(AdvanceMessage.model_validate(event))
        if action == "start":
            return dispatch.start(StartRequest.model_validate(event))
        if action == "retry":
            return dispatch.retry(RetryRequest.model_validate(event))
        if action == "discard":
            return dispatch.discard(DiscardRecord.model_validate(event))
        logger.error("Rejected an event the scheduler does not handle", extra={"keys": sorted(event)})
        return {"status": "rejected", "error": "unrecognised event"}

    return entry_point(handler)


class Dispatcher:
    """Handles one scheduler event with the deployment's pipelines and runtime."""

    def __init__(
        self, pipelines: PipelineRegistry, runtime: Runtime, *, remaining_ms: Callable[[], int] = lambda: 60_000
    ) -> None:
        self.pipelines = pipelines
        self.runtime = runtime
        self.remaining_ms = remaining_ms

    def delayed(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """SQS delayed advances: invoke the phase once due, else queue again; failures are retried.

        An advance up to a second early is invoked (a sleep or a backoff ends a moment sooner), except
        the timeout of a wait still on at the message's sequence: it would find the wait not yet over,
        end nothing, and nothing would send it again, so it goes back on the queue until due.
        """
        failures = []
        for record in records:
            try:
                body = json.loads(record["body"])
                if is_bulk_message(body):
                    if not self._bulk_chunk(BulkMessage.model_validate(body)):
                        failures.append({"itemIdentifier": record.get("messageId", "")})
                    continue
                message = AdvanceMessage.model_validate(body)
            except (KeyError, ValueError, ValidationError):
                logger.error("Dropped a malformed delayed advance", extra={"messageId": record.get("messageId")})
                continue
            try:
                pipeline = self.pipelines.get(message.pipeline)
                scheduler = self.runtime.lambda_scheduler(message.owner, pipeline)
                due, now = message.not_before or 0, self.runtime.clock()
                if due > now + EARLY_MS or (due > now and self._waiting_at(message)):
                    scheduler.queue(message)
                else:
                    scheduler.invoke_now(message)
            except Exception:
                logger.exception("Delayed advance failed; SQS will deliver it again")
                failures.append({"itemIdentifier": record.get("messageId", "")})
        return {"batchItemFailures": failures}

    def _bulk_chunk(self, message: BulkMessage) -> bool:
        """Run one chunk of a bulk and queue the next; False when it failed (SQS delivers it again)."""
        try:
            following = BulkRunner(self.runtime, self.pipelines, message.owner).run_chunk(message, self.remaining_ms)
            if following is not None:
                send_bulk(self.runtime, following)
        except Exception:
            logger.exception("A bulk chunk failed; SQS will deliver it again", extra={"bulk_id": message.bulk_id})
            return False
        return True

    def _waiting_at(self, message: AdvanceMessage) -> bool:
        """Whether the message's job is waiting for a signal at the message's sequence (the wait's timeout)."""
        route = self.runtime.storage(message.owner).get_route(message.job_id)
        return route is not None and route.status == JobStatus.WAITING and route.sequence == message.sequence

    def crash_report(self, event: dict[str, Any]) -> dict[str, Any]:
        """A phase function's invocation failed for good: record the crash on the job."""
        try:
            message = AdvanceMessage.model_validate(event["requestPayload"])
        except ValidationError:
            logger.error("Ignored an on-failure record without an advance payload")
            return {"status": "ignored"}
        response = _mapping(event.get("responsePayload"))
        context = _mapping(event.get("requestContext"))
        detail = response.get("errorMessage") or response.get("errorType") or context.get("condition", "unknown")
        logger.append_keys(job_id=message.job_id, phase=message.phase, owner=message.owner)
        pipeline = self.pipelines.get(message.pipeline)
        job = record_crash(
            message.job_id,
            pipeline,
            storage=self.runtime.storage(message.owner),
            scheduler=self.runtime.lambda_scheduler(message.owner, pipeline),
            phase=message.phase,
            error=str(detail),
            dead_worker=context.get("requestId"),
            sequence=message.sequence,
            failure=reported_failure(response.get("errorType"), response.get("stackTrace")),
        )
        record_job_end(job)
        return {"status": job.status.value if job else "stale", "jobId": message.job_id}

    def sweep(self) -> dict[str, Any]:
        """Advance again the running jobs whose worker is gone and that have not moved for a while.

        At most ``CAIRN_SWEEP_BATCH`` jobs a run (the rest wait for the next run); the ``StalledJobs``
        metric counts those found, 0 included (so an alarm on it always has data).
        """
        settings = self.runtime.settings
        storage = self.runtime.storage("sweep")
        found = storage.stalled_jobs(idle_seconds=settings.sweep_idle_seconds, limit=settings.sweep_batch)
        metrics.add_metric(name="StalledJobs", unit=MetricUnit.Count, value=len(found))
        revived = []
        for stalled in found:
            try:
                pipeline = self.pipelines.get(stalled.pipeline)
                scheduler = self.runtime.start_scheduler(stalled.owner, pipeline)
                if recovery.revive(scheduler, stalled.job_id, stalled.next_phase, stalled.sequence):
                    revived.append(stalled.job_id)
            except Exception:
                logger.exception("Could not revive a stalled job", extra={"job_id": stalled.job_id})
        logger.info(
            "Sweep done",
            extra={
                "found": len(found),
                "revived": len(revived),
                "batch": settings.sweep_batch,
                "batch_full": len(found) >= settings.sweep_batch,
            },
        )
        return {"revived": revived}

    def resolve(self, request: ResolveRequest) -> dict[str, Any]:
        """For the state machine: the phase the checkpoint names, the function that runs it, and the sequence.

        Only the job item's routing fields are read. An execution that carries a
        sequence the job has moved past (a stale or duplicate execution) is told
        there is nothing to run; one that carries the sequence of a job still
        waiting for a signal runs the advance that times the wait out.
        """
        pipeline = self.pipelines.get(request.pipeline)
        route = self.runtime.storage(request.owner).get_route(request.jobId)
        base = {"jobId": request.jobId, "owner": request.owner, "pipeline": request.pipeline}
        if route is None or route.status not in (JobStatus.RUNNING, JobStatus.WAITING) or route.next_phase is None:
            return {**base, "run": False, "status": route.status.value if route else "missing"}
        if request.sequence is not None and request.sequence != route.sequence:
            return {**base, "run": False, "status": "stale"}
        if route.status == JobStatus.WAITING and request.sequence is None:
            return {**base, "run": False, "status": route.status.value}
        # A waiting job at the execution's sequence: the execution waited out the wait's timeout; the advance
        # ends the wait (its timeout phase, or error) unless a signal came first (then the sequence moved on).
        return {
            **base,
            "run": True,
            "status": route.status.value,
            "phase": route.next_phase,
            "sequence": route.sequence,
            "functionName": function_for(pipeline, route.next_phase, self.runtime.settings),
        }

    def discard(self, record: DiscardRecord) -> dict[str, Any]:
        """An operator discarded a message of the dead-letter queue (``cairn ops redrive --discard``): the audit
        entry, in this function's log group."""
        logger.warning("Discarded a dead-lettered scheduler event", extra={"discard": record.model_dump()})
        metrics.add_metric(name="DeadLettersDiscarded", unit=MetricUnit.Count, value=1)
        return {"status": "discarded", "messageId": record.messageId}

    def record_failure(self, report: FailureReport) -> dict[str, Any]:
        """For the state machine's Catch: the phase task failed; record it like a crash."""
        pipeline = self.pipelines.get(report.pipeline)
        detail = report.error.get("Cause") or report.error.get("Error") or "the phase task failed"
        recorder = StepRecorder()
        job = record_crash(
            report.jobId,
            pipeline,
            storage=self.runtime.storage(report.owner),
            scheduler=recorder,
            phase=report.phase,
            error=str(detail),
            dead_worker=report.request_id(),
            sequence=report.sequence,
            failure=report.failure(),
        )
        record_job_end(job)
        return {
            "status": job.status.value if job else "stale",
            "jobId": report.jobId,
            "scheduled": recorder.scheduled.to_wire() if recorder.scheduled else None,
        }

    def start(self, request: StartRequest) -> dict[str, Any]:
        """Start a new job; an existing one is reported, never reset."""
        pipeline = self.pipelines.get(request.pipeline)
        try:
            job = self.runtime.cairn(request.owner, pipeline).start(pipeline, request.jobId, state=request.state)
        except JobExistsError:
            return {"status": "exists", "jobId": request.jobId}
        return {"status": job.status.value, "jobId": request.jobId}

    def retry(self, request: RetryRequest) -> dict[str, Any]:
        """Retry a job as the API's retry route does (:meth:`cairn.Cairn.retry`); an unknown job fails the event."""
        jobs = self.runtime.cairn(request.owner, self.pipelines.get(request.pipeline))
        job = jobs.retry(request.jobId, mode=request.mode, state=request.state)
        return {"status": job.status.value, "jobId": request.jobId, "nextPhase": _next_phase(job)}

    def advance(self, message: AdvanceMessage) -> dict[str, Any]:
        """Advance a phase that has no function of its own (the engine records it as unknown).

        The advance may instead end a wait whose next phase is unknown, into its timeout phase: under
        the stepfunctions driver that next advance is reported to the state machine (``scheduled``),
        as a phase function reports it.
        """
        pipeline = self.pipelines.get(message.pipeline)
        recorder = StepRecorder(waker=lambda: self.runtime.execution_scheduler(message.owner, pipeline.name))
        scheduler: Scheduler = (
            recorder
            if self.runtime.settings.driver == "stepfunctions"
            else self.runtime.lambda_scheduler(message.owner, pipeline)
        )
        jobs = self.runtime.cairn(message.owner, pipeline, scheduler=scheduler)
        job = jobs.advance(message.job_id, phase=message.phase, sequence=message.sequence)
        record_job_end(job)
        response: dict[str, Any] = {
            "status": job.status.value if job else "skipped",
            "jobId": message.job_id,
            "phase": message.phase,  # the phase run, as a phase function's reply says it (the state machine's cause)
        }
        if scheduler is recorder:
            response["scheduled"] = recorder.scheduled.to_wire() if recorder.scheduled else None
        return response


def _remaining(context: LambdaContext | None) -> Callable[[], int]:
    """The invocation's time left, in ms (a minute when the context does not say)."""
    remaining: Callable[[], int] | None = getattr(context, "get_remaining_time_in_millis", None)
    return remaining if remaining is not None else (lambda: 60_000)


def _next_phase(job: Job) -> str | None:
    return job.checkpoint.next_phase if job.checkpoint else None


def _mapping(value: object) -> dict[str, Any]:
    """A part of an on-failure record that should be an object (anything else: an empty one)."""
    return value if isinstance(value, dict) else {}
