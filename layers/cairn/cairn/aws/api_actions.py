"""The routes that act on the caller's jobs: start, retry, pause, cancel and signal.

- ``POST /jobs`` starts a job (202); an existing ``jobId`` is never reset (409 with that job).
- ``POST /jobs/{jobId}/retry`` restarts a job (202): ``resume`` from its checkpoint, or ``full``;
  a resume of a complete job is refused (409) and changes nothing.
  A ``state`` that a resume would ignore (the job has a checkpoint) is refused (409), as the front door
  refuses it.
  A body that fits the document but that the job as it is refuses (its checkpoint, its pipeline's phases,
  its kept states) is a 409; a 400 is a request that does not fit the document (:mod:`cairn.aws.api_document`).
- ``POST /jobs/{jobId}/pause`` and ``POST /jobs/{jobId}/cancel`` (409 when the job's status forbids it; a cancel
  of a cancelled job is a 409 ``already_cancelled`` with the job, nothing written).
- ``POST /jobs/{jobId}/signals/{name}`` delivers a signal to a job waiting for it (202).

A job stored whose first advance could not be scheduled is answered as started: the sweep starts it.
Registered on the API's resolver by :mod:`cairn.aws.api`; the caller sees only its own jobs.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from aws_lambda_powertools.metrics import MetricUnit

from ..app import Cairn
from ..core.errors import (
    AlreadyCancelledError,
    InvalidInputError,
    JobNotFoundError,
    SchedulingError,
    TransitionRefusedError,
)
from ..core.ids import validate_job_id
from ..core.models import Job, JobStatus
from ..core.storage_port import Route
from .api_errors import ApiError
from .api_job_view import JobView
from .api_models import CreateJobRequest, RetryRequest, SignalName
from .api_reads import shown
from .api_routes import JobIdPath, caller, responses
from .api_services import checked_input, current_services
from .observability import logger, metrics

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
"""The routes of this module, included in the API's resolver."""

SignalNamePath = Annotated[SignalName, Path(alias="name", description="The signal's name")]
SignalPayload = list[Any] | dict[str, Any] | str | int | float | bool | None
"""Any JSON value; spelled as a union with a list so that a JSON array is taken whole, not as its first item."""


def _job_response(status: HTTPStatus, view: JobView) -> Response[JobView]:
    return Response(
        status_code=status.value,
        content_type=content_types.APPLICATION_JSON,
        body=view,
        headers={"Location": f"/jobs/{view.job_id}"},
    )


def _started_anyway(jobs: Cairn, job_id: str, exc: SchedulingError) -> Job:
    """The job was stored but its first invoke failed transiently: the sweep starts it; else re-raise."""
    job = jobs.storage.get_job(job_id) if exc.retryable else None
    if job is None:
        raise exc
    logger.warning("Job stored; its first advance is left to the sweep", extra={"job_id": job_id, "error": str(exc)})
    metrics.add_metric(name="JobStartsDeferred", unit=MetricUnit.Count, value=1)
    return job


def existing(jobs: Cairn, job_id: str) -> Route:
    """The caller's job's pipeline and status (one small read of the job item); 404 when it is absent (or
    another owner's)."""
    logger.append_keys(job_id=validate_job_id(job_id))
    route = jobs.storage.get_route(job_id)
    if route is None:
        raise JobNotFoundError(job_id)
    return route


@router.post(
    "/jobs",
    status_code=HTTPStatus.ACCEPTED.value,
    summary="Start a job",
    tags=["jobs"],
    responses=responses(
        HTTPStatus.ACCEPTED,
        "The job is stored and its first phase is scheduled",
        HTTPStatus.CONFLICT,
        HTTPStatus.TOO_MANY_REQUESTS,
    ),
)
def create_job(request: Annotated[CreateJobRequest, Body()]) -> Response[JobView]:
    services = current_services()
    owner = caller(router)
    pipeline = services.pipeline(request.pipeline)
    job_id = request.job_id or str(uuid.uuid4())
    logger.append_keys(job_id=job_id)
    jobs = services.cairn(owner, pipeline)
    state = checked_input(request.state)
    with services.counted_start(owner):
        try:
            job = jobs.start(pipeline, job_id, state=state, by=owner)
        except SchedulingError as exc:
            job = _started_anyway(jobs, job_id, exc)
    metrics.add_metric(name="JobsStarted", unit=MetricUnit.Count, value=1)
    return _job_response(HTTPStatus.ACCEPTED, shown(jobs, job))


@router.post(
    "/jobs/<jobId>/retry",
    status_code=HTTPStatus.ACCEPTED.value,
    summary="Retry a job",
    description="resume continues from the checkpoint's nextPhase; a resume of a complete job is refused (409: it "
    "is already complete; Start over, mode full, runs it again) and changes nothing; full discards the checkpoint "
    "and the log; from reruns the job at the body's phase with the "
    "body's state, else the state it had when it last entered that phase (409 when none is kept), and the log "
    "records who reran it from where. A fresh start uses the body's state, else the "
    "job's stored input; a state sent with resume when there is a checkpoint to resume from is refused (409), "
    "as it would be ignored; so is a phase the job's pipeline does not have. "
    "A worker still running the job is fenced off.",
    tags=["jobs"],
    responses=responses(HTTPStatus.ACCEPTED, "The job is restarted", HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT),
)
def retry_job(job_id: JobIdPath, request: Annotated[RetryRequest | None, Body()] = None) -> Response[JobView]:
    services = current_services()
    owner = caller(router)
    retry = request or RetryRequest()
    pipeline = services.pipeline_of(job_id, existing(services.cairn(owner), job_id).pipeline)
    jobs = services.cairn(owner, pipeline)
    state = checked_input(retry.state)
    if retry.phase is not None and not pipeline.has_phase(retry.phase) and _deployment_has_phase(retry.phase):
        raise ApiError(
            HTTPStatus.CONFLICT,
            "conflict",
            f'Job "{job_id}" is of pipeline "{pipeline.name}", which has no phase "{retry.phase}"',
        )
    if state is not None:
        pipeline.dump_state(state)  # a state the pipeline's model refuses is the documented 400
    try:
        job = jobs.retry(job_id, mode=retry.mode, state=state, phase=retry.phase, by=owner)
    except SchedulingError as exc:
        job = _started_anyway(jobs, job_id, exc)
    except TransitionRefusedError:
        raise
    except InvalidInputError as exc:  # the body fits the document: what is refused now is the job as it is
        raise ApiError(HTTPStatus.CONFLICT, "conflict", exc.message) from exc
    metrics.add_metric(name="JobsRetried", unit=MetricUnit.Count, value=1)
    return _job_response(HTTPStatus.ACCEPTED, shown(jobs, job))


def _deployment_has_phase(name: str) -> bool:
    """Whether a pipeline of this deployment has phase ``name`` (the document's enum of phases)."""
    return any(pipeline.has_phase(name) for pipeline in current_services().pipelines)


def change_status(job_id: str, change: Callable[..., Job], metric: str) -> JobView:
    """Pause or cancel, in the caller's name; a status that refuses the change is a 409 (TransitionRefusedError)."""
    owner = caller(router)
    jobs = current_services().cairn(owner)
    logger.append_keys(job_id=validate_job_id(job_id))
    job = change(jobs, job_id, by=owner)
    metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
    return shown(jobs, job)


@router.post(
    "/jobs/<jobId>/pause",
    summary="Pause a running job at its next phase boundary",
    tags=["jobs"],
    responses=responses(HTTPStatus.OK, "The paused job", HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT),
)
def pause(job_id: JobIdPath) -> JobView:
    return change_status(job_id, Cairn.pause, "JobsPaused")


@router.post(
    "/jobs/<jobId>/cancel",
    summary="Cancel a job; its checkpoint stays, so a resume is still possible",
    description="409 for a complete job (conflict), and for one already cancelled (already_cancelled, with the "
    "job in the error body: nothing changed, the job is as a cancel leaves it, so a client may take it as done).",
    tags=["jobs"],
    responses=responses(HTTPStatus.OK, "The cancelled job", HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT),
)
def cancel(job_id: JobIdPath) -> JobView:
    return change_status(job_id, _cancel_once, "JobsCancelled")


def _cancel_once(jobs: Cairn, job_id: str, *, by: str) -> Job:
    """Cancel the job; one already cancelled is refused (AlreadyCancelledError: 409 with the job, nothing written)."""
    view = jobs.storage.get_job_view(job_id, history=1)
    if view is not None and view.job.status == JobStatus.CANCELLED:
        raise AlreadyCancelledError(job_id, view.job)
    return jobs.cancel(job_id, by=by)


@router.post(
    "/jobs/<jobId>/signals/<name>",
    status_code=HTTPStatus.ACCEPTED.value,
    summary="Deliver a signal to a job waiting for it",
    description="The body (any JSON, or none) is the signal's payload; the phase after the wait reads it as "
    "ctx.signal. A signal no one waits for (the job waits for another, or for nothing, or a second delivery "
    "won the race) is refused with 409 and stored nowhere.",
    tags=["jobs"],
    responses=responses(HTTPStatus.ACCEPTED, "The job runs its next phase", HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT),
)
def send_signal(
    job_id: JobIdPath, name: SignalNamePath, payload: Annotated[SignalPayload, Body(description="The payload")] = None
) -> Response[JobView]:
    services = current_services()
    owner = caller(router)
    jobs = services.cairn(owner, services.pipeline_of(job_id, existing(services.cairn(owner), job_id).pipeline))
    logger.append_keys(job_id=job_id, signal=name)
    try:
        job = jobs.signal(job_id, name, checked_input(payload), by=owner)
    except SchedulingError as exc:
        job = _started_anyway(jobs, job_id, exc)
    metrics.add_metric(name="SignalsDelivered", unit=MetricUnit.Count, value=1)
    return _job_response(HTTPStatus.ACCEPTED, shown(jobs, job))
