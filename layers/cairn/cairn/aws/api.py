"""The API function: start, watch, retry, pause and cancel jobs over an HTTP API (payload format 2.0).

Routes (errors are ``{"error": {"code", "message"}}``; see :mod:`cairn.aws.api_errors`):

- ``POST /jobs`` starts a job (202); an existing ``jobId`` is never reset (409 with that job).
- ``GET /jobs`` lists the caller's jobs, newest first, a page at a time (``status``, ``cursor``, ``limit``).
- ``GET /jobs/counts`` counts the caller's jobs per status (exact up to a bound, else "at least").
- ``GET /jobs/{jobId}`` shows a job; the checkpoint's state only with ``?includeState=true``.
- ``GET /jobs/{jobId}/log`` returns the job's log entries and annotations (a page with ``limit`` or ``cursor``).
- ``GET /jobs/{jobId}/history`` pages what the job's writes added, newest first (``limit``, ``cursor``).
- ``GET /jobs/{jobId}/states/{phase}`` and ``GET /jobs/{jobId}/diff`` show what it saw (:mod:`.api_states`);
  ``GET /jobs/{jobId}/maps`` and ``.../maps/{mapId}/items/{index}`` what its maps did (:mod:`.api_maps`).
- ``POST /jobs/{jobId}/retry`` restarts a job (202): ``resume`` from its checkpoint, or ``full``;
  a resume of a complete job is refused (409) and changes nothing.
  A ``state`` that a resume would ignore (the job has a checkpoint) is refused (409), as the front door
  refuses it.
  A body that fits the document but that the job as it is refuses (its checkpoint, its pipeline's phases,
  its kept states) is a 409; a 400 is a request that does not fit the document (:mod:`cairn.aws.api_document`).
- ``POST /jobs/{jobId}/pause`` and ``POST /jobs/{jobId}/cancel`` (409 when the job's status forbids it; a cancel
  of a cancelled job is a 409 ``already_cancelled`` with the job, nothing written).
- ``GET /pipelines`` lists the deployment's pipelines: phases, state schema and a sample state (for a form).
- Every reply stays under :data:`~cairn.aws.api_limits.MAX_REPLY_BYTES` (Lambda returns at most 6 MB); one
  that would not is a 500 ``reply_too_large`` saying so (:func:`~.api_limits.within_limit`).
- ``GET /health`` reads the table once; ``GET /openapi.json`` is this API's OpenAPI document.
- ``GET /dashboard`` is the dashboard's page, ``GET /assets/{file}`` its files: public (they hold no secret),
  left out of the OpenAPI document; the page calls the routes above with the user's token.

The owner of the jobs a request sees comes only from the authorizer context
(:mod:`cairn.aws.api_auth`); another owner's job is reported as absent (404).

The routes are module-level functions of one resolver, :data:`app`; each acts
through the front door (:class:`cairn.Cairn`) onto the caller's jobs, which
:class:`~cairn.aws.api_services.ApiServices` builds per request.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from http import HTTPStatus
from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from ..app import Cairn
from ..core.errors import (
    AlreadyCancelledError,
    InvalidInputError,
    SchedulingError,
    StorageError,
    TransitionRefusedError,
)
from ..core.ids import validate_job_id
from ..core.models import Job, JobCounts, JobPage, JobStatus
from ..core.pipeline import Pipeline
from ..core.registry import PipelineRegistry
from ..dashboard.assets import INDEX, asset, reply
from .api_auth import Unauthenticated, is_public, owner_of
from .api_cost import SORT_BY_COST, sorted_by_cost
from .api_document import openapi_document, with_deployment
from .api_errors import ApiError, install_error_handlers, refusal
from .api_job_view import JobView
from .api_limits import within_limit
from .api_maps import router as maps_router
from .api_models import (
    CreatedTime,
    CreateJobRequest,
    Cursor,
    Health,
    IdPrefix,
    JobHistory,
    JobLog,
    PipelineList,
    PipelineName,
    PipelineView,
    RetryRequest,
    SignalName,
    epoch_ms,
)
from .api_reads import DEFAULT_HISTORY_PAGE, MAX_HISTORY_PAGE, MAX_LOG_PAGE, job_history, job_log, job_view, shown
from .api_redaction import deployment_redaction, redacted_response
from .api_request import MAX_BODY_BYTES, admit
from .api_routes import JobIdPath, errors, responses
from .api_services import ApiServices, checked_input, current_services
from .api_states import router as states_router
from .entry import Handler, entry_point
from .listing import JobFilter
from .observability import logger, metrics
from .runtime import Runtime

API_TITLE = "cairn"
API_VERSION = "1.0.0"
API_DESCRIPTION = (
    "Start, watch, retry, pause and cancel crash-safe pipeline jobs. The caller (IAM or JWT, from API Gateway's "
    "authorizer) owns the jobs it starts and sees no one else's."
)
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100
HEALTH_OWNER = "cairn-health"

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


app = APIGatewayHttpResolver(
    enable_validation=True, response_validation_error_http_code=HTTPStatus.INTERNAL_SERVER_ERROR
)
"""The API's resolver: every route below and the error handlers of :mod:`cairn.aws.api_errors`."""
app.configure_openapi(title=API_TITLE, version=API_VERSION, description=API_DESCRIPTION)
install_error_handlers(app)
app.include_router(states_router)
app.include_router(maps_router)


def caller() -> str:
    """The owner the request acts as (the handler has already refused a request without one)."""
    owner = owner_of(app.current_event.raw_event)
    logger.append_keys(owner=owner)
    return owner


def existing(jobs: Cairn, job_id: str) -> Job:
    """The caller's job; 404 when it is absent (or another owner's)."""
    logger.append_keys(job_id=validate_job_id(job_id))
    return jobs.get(job_id)


@app.post(
    "/jobs",
    status_code=HTTPStatus.ACCEPTED.value,
    summary="Start a job",
    tags=["jobs"],
    responses=responses(HTTPStatus.ACCEPTED, "The job is stored and its first phase is scheduled", HTTPStatus.CONFLICT),
)
def create_job(request: Annotated[CreateJobRequest, Body()]) -> Response[JobView]:
    services = current_services()
    owner = caller()
    pipeline = services.pipeline(request.pipeline)
    job_id = request.job_id or str(uuid.uuid4())
    logger.append_keys(job_id=job_id)
    jobs = services.cairn(owner, pipeline)
    try:
        job = jobs.start(pipeline, job_id, state=checked_input(request.state), by=owner)
    except SchedulingError as exc:
        job = _started_anyway(jobs, job_id, exc)
    metrics.add_metric(name="JobsStarted", unit=MetricUnit.Count, value=1)
    return _job_response(HTTPStatus.ACCEPTED, shown(jobs, job))


PIPELINE_FILTER = "Only jobs of this pipeline; one the deployment does not run is refused (400)"
CREATED_TO_FILTER = "Only jobs created at or before this time; a time before createdFrom is refused (400)"


@app.get(
    "/jobs",
    summary="List jobs, newest first",
    tags=["jobs"],
    responses=responses(HTTPStatus.OK, "One page of jobs; pass its cursor to get the next"),
)
def list_jobs(
    status: Annotated[JobStatus | None, Query(description="Only jobs with this status")] = None,
    pipeline: Annotated[PipelineName | None, Query(description=PIPELINE_FILTER)] = None,
    created_from: Annotated[
        CreatedTime | None, Query(alias="createdFrom", description="Only jobs created at or after this time")
    ] = None,
    created_to: Annotated[CreatedTime | None, Query(alias="createdTo", description=CREATED_TO_FILTER)] = None,
    id_prefix: Annotated[IdPrefix | None, Query(alias="idPrefix", description="Only jobs whose id starts so")] = None,
    cursor: Annotated[Cursor | None, Query(description="The cursor of the previous page, with the same filter")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE, description="Jobs to examine")] = DEFAULT_PAGE_SIZE,
    sort: Annotated[Literal["cost"] | None, Query(description=SORT_BY_COST)] = None,
) -> JobPage:
    services = current_services()
    if pipeline is not None:
        services.pipeline(pipeline)  # an unknown pipeline is refused (400), not answered with nothing
    where = JobFilter(
        status=status,
        pipeline=pipeline,
        created_from=epoch_ms(created_from),
        created_to=epoch_ms(created_to),
        id_prefix=id_prefix,
    )
    page = services.storage(caller()).list_page(cursor=cursor, limit=limit, where=where)
    return sorted_by_cost(page, services.cairn(caller())) if sort == "cost" else page


@app.get(
    "/jobs/counts",
    summary="How many of your jobs have each status",
    description="Read from the listing index, not from every job: exact while the caller has up to about 4,000 "
    "jobs (1,000 a listing shard); above that each count is a lower bound and exact is false.",
    tags=["jobs"],
    responses=responses(HTTPStatus.OK, "A count per status; exact says whether each is exact or at least so"),
)
def count_jobs() -> JobCounts:
    return current_services().storage(caller()).count_jobs()


@app.get(
    "/jobs/<jobId>",
    summary="Show a job",
    tags=["jobs"],
    responses=responses(HTTPStatus.OK, "The job", HTTPStatus.NOT_FOUND),
)
def get_job(
    job_id: JobIdPath,
    include_state: Annotated[bool, Query(alias="includeState", description="Include the checkpoint's state")] = False,
    include_input: Annotated[bool, Query(alias="includeInput", description="Include the job's input")] = False,
) -> JobView:
    jobs = current_services().cairn(caller())
    return job_view(jobs, job_id, include_state=include_state, include_input=include_input)


@app.get(
    "/jobs/<jobId>/log",
    summary="A job's log",
    tags=["jobs"],
    responses=responses(
        HTTPStatus.OK, "Log entries and annotations, oldest first; paged with limit and cursor", HTTPStatus.NOT_FOUND
    ),
)
def get_job_log(
    job_id: JobIdPath,
    limit: Annotated[
        int | None, Query(ge=1, le=MAX_LOG_PAGE, description="Entries a page; without it, the whole log")
    ] = None,
    cursor: Annotated[Cursor | None, Query(description="The cursor of the previous page of this job's log")] = None,
) -> JobLog:
    return job_log(current_services().cairn(caller()), job_id, limit=limit, cursor=cursor)


@app.get(
    "/jobs/<jobId>/history",
    summary="A job's history, newest first",
    description="What each of the job's writes added, newest first: its log entries and the record of the phase "
    "run it ended. A page costs what it holds; GET /jobs/{jobId} holds the newest and historyCursor reads on.",
    tags=["jobs"],
    responses=responses(HTTPStatus.OK, "One page of writes; pass its cursor to get older ones", HTTPStatus.NOT_FOUND),
)
def get_job_history(
    job_id: JobIdPath,
    limit: Annotated[int, Query(ge=1, le=MAX_HISTORY_PAGE, description="Writes a page")] = DEFAULT_HISTORY_PAGE,
    cursor: Annotated[Cursor | None, Query(description="A cursor this job's history or view returned")] = None,
) -> JobHistory:
    return job_history(current_services().cairn(caller()), job_id, limit=limit, cursor=cursor)


@app.post(
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
    owner = caller()
    retry = request or RetryRequest()
    job = existing(services.cairn(owner), job_id)
    pipeline = services.pipeline_of(job)
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
    owner = caller()
    jobs = current_services().cairn(owner)
    logger.append_keys(job_id=validate_job_id(job_id))
    job = change(jobs, job_id, by=owner)
    metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
    return shown(jobs, job)


@app.post(
    "/jobs/<jobId>/pause",
    summary="Pause a running job at its next phase boundary",
    tags=["jobs"],
    responses=responses(HTTPStatus.OK, "The paused job", HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT),
)
def pause(job_id: JobIdPath) -> JobView:
    return change_status(job_id, Cairn.pause, "JobsPaused")


@app.post(
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


@app.post(
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
    owner = caller()
    job = existing(services.cairn(owner), job_id)
    jobs = services.cairn(owner, services.pipeline_of(job))
    logger.append_keys(job_id=job_id, signal=name)
    try:
        job = jobs.signal(job_id, name, checked_input(payload), by=owner)
    except SchedulingError as exc:
        job = _started_anyway(jobs, job_id, exc)
    metrics.add_metric(name="SignalsDelivered", unit=MetricUnit.Count, value=1)
    return _job_response(HTTPStatus.ACCEPTED, shown(jobs, job))


@app.get(
    "/pipelines",
    summary="The pipelines this deployment runs",
    description="Each pipeline's phases in order, the JSON schema of its state ({} for plain JSON) and a sample "
    "initial state (the schema's first example; null when it has none): what a form to start a job needs.",
    tags=["pipelines"],
    responses=responses(HTTPStatus.OK, "Every pipeline, by name"),
)
def list_pipelines() -> PipelineList:
    caller()  # names the caller in the log, as every other route does
    pipelines = sorted(current_services().pipelines, key=lambda pipeline: pipeline.name)
    return PipelineList(pipelines=[PipelineView.of(pipeline) for pipeline in pipelines])


@app.get(
    "/health",
    summary="Whether the job table answers",
    tags=["operations"],
    responses={
        HTTPStatus.OK.value: {"description": "The table answered a read"},
        **errors(HTTPStatus.INTERNAL_SERVER_ERROR, HTTPStatus.SERVICE_UNAVAILABLE),
    },
)
def health() -> Health:
    services = current_services()
    storage = services.storage(HEALTH_OWNER)
    try:
        storage.list_page(limit=1)
    except StorageError as exc:
        logger.exception("Health check: the job table cannot be read", exc_info=exc)
        raise ApiError(HTTPStatus.SERVICE_UNAVAILABLE, "unavailable", "The job table cannot be read") from exc
    return Health(status="ok", driver=services.runtime.settings.driver)


@app.get("/openapi.json", summary="This API's OpenAPI document", tags=["operations"])
def openapi() -> dict[str, Any]:
    pipelines = tuple(sorted(current_services().pipelines, key=lambda pipeline: pipeline.name))
    return _deployment_document(pipelines)


@functools.cache
def _routes_document() -> dict[str, Any]:
    """The routes' document, built on first request, then reused (the routes are fixed at import)."""
    return openapi_document(app)


@functools.lru_cache(maxsize=8)
def _deployment_document(pipelines: tuple[Pipeline[Any], ...]) -> dict[str, Any]:
    """The document with a deployment's pipeline and phase names (a function serves one deployment)."""
    return with_deployment(_routes_document(), pipelines)


# Registered without a return annotation: the response validation would decode a gzipped body as UTF-8 text.
app.get("/dashboard", include_in_schema=False)(lambda: _asset_response(INDEX))
app.get("/assets/<file>", include_in_schema=False)(lambda file: _asset_response(file))


def _asset_response(name: str) -> Response[bytes]:
    """One of the dashboard's files as :func:`~cairn.dashboard.assets.reply` answers it (a 304, or gzipped, by
    the request's headers; base64 in the event, as any bytes body); 404 for a name that is not one of them."""
    found = asset(name)
    if found is None:
        raise ApiError(HTTPStatus.NOT_FOUND, "not_found", "The dashboard has no such file")
    answer = reply(found, app.current_event.headers or {})
    headers = {key: value for key, value in answer.headers.items() if key != "Content-Type"}
    return Response(answer.status, answer.headers["Content-Type"], answer.body, headers=headers)


def _record_response(response: dict[str, Any]) -> None:
    metrics.add_metric(name="ApiRequests", unit=MetricUnit.Count, value=1)
    status = int(response.get("statusCode", 500))
    if status >= 500:
        metrics.add_metric(name="ApiServerErrors", unit=MetricUnit.Count, value=1)
    elif status >= 400:
        metrics.add_metric(name="ApiClientErrors", unit=MetricUnit.Count, value=1)


def api_handler(
    pipelines: PipelineRegistry, *, runtime: Runtime | None = None, max_body_bytes: int = MAX_BODY_BYTES
) -> Handler:
    """The API function's handler for the pipelines of a deployment.

    A request without a caller identity is refused (401) before its route or
    body is looked at, except for the public routes (health, OpenAPI); then a
    request the API cannot read (:func:`~cairn.aws.api_request.admit`: a body
    over ``max_body_bytes``, not JSON, not UTF-8) is refused with a 4xx.
    """
    services = ApiServices(pipelines, runtime)
    redaction = deployment_redaction(pipelines)

    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        try:
            if not is_public(event):
                owner_of(event)
            admitted = admit(event, max_body_bytes=max_body_bytes)
            with services.serving():
                response = within_limit(app.resolve(admitted, context))
        except Unauthenticated as exc:
            logger.info("Refused an unauthenticated request", extra={"reason": exc.message})
            response = refusal(HTTPStatus.UNAUTHORIZED, "unauthenticated", exc.message)
        except ApiError as exc:
            logger.info("Refused a request it cannot read", extra={"reason": exc.message})
            response = refusal(exc.status, exc.code, exc.message)
        _record_response(response)
        return redacted_response(response, redaction)

    return entry_point(handler, correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
