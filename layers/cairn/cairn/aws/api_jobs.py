"""The routes that read the caller's jobs: the list, the counts, one job, its log and its history.

- ``GET /jobs`` lists the caller's jobs, newest first, a page at a time (``status``, ``cursor``, ``limit``; a
  failure group of ``GET /failures`` by ``errorType`` and ``errorPhase``).
- ``GET /jobs/counts`` counts the caller's jobs per status (exact up to a bound, else "at least").
- ``GET /jobs/{jobId}`` shows a job; the checkpoint's state only with ``?includeState=true``.
- ``GET /jobs/{jobId}/log`` returns the job's log entries and annotations (a page with ``limit`` or ``cursor``).
- ``GET /jobs/{jobId}/history`` pages what the job's writes added, newest first (``limit``, ``cursor``).

Registered on the API's resolver by :mod:`cairn.aws.api`; the caller sees only its own jobs.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Literal

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from ..core.models import MAX_TYPE_CHARS, JobCounts, JobPage, JobStatus
from .api_cost import SORT_BY_COST, with_costs
from .api_errors import ApiError
from .api_job_view import JobView
from .api_models import CreatedTime, Cursor, IdPrefix, JobHistory, JobLog, PhaseName, PipelineName, epoch_ms
from .api_reads import DEFAULT_HISTORY_PAGE, MAX_HISTORY_PAGE, MAX_LOG_PAGE, job_history, job_log, job_view
from .api_routes import JobIdPath, caller, responses
from .api_services import current_services
from .listing import JobFilter
from .stalled_listing import COUNT_BOUND, marked, with_stalled

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
"""The routes of this module, included in the API's resolver."""

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100
STALLED_FILTER = (
    "true: only stalled jobs (running, but no worker holds one, or its map's items are done and the next phase never "
    "started). A page of the running jobs is read, then one consistent read of each job's item (1 read unit per "
    "4 KB: 1 to 3, a state from 8 KB on being kept apart) and of its map's record when it is in a map: a page may "
    "hold fewer than limit, and its cursor goes on. Every listed running job is marked stalled true or false at "
    "that cost. status other than running is refused (400)"
)
PIPELINE_FILTER = "Only jobs of this pipeline; one the deployment does not run is refused (400)"
WITH_COSTS = (
    "Newest first: add each job's cost so far (costUsd), read from the page's job items (about half a read unit a "
    "job, 25 a page of 50, where the page alone reads about 2); dearest first always carries it"
)
ERROR_TYPE_FILTER = (
    "Only jobs in error whose exception has this type ('-': none was raised); each job's item is read for it "
    "(about half a read unit a job in error examined, at most 400 a page: a page may then hold fewer, with a "
    "cursor). With a status other than error: refused (400)"
)
ERROR_PHASE_FILTER = "Only jobs in error whose failure was in this phase (read as errorType is)"
CREATED_TO_FILTER = "Only jobs created at or before this time; a time before createdFrom is refused (400)"


@router.get(
    "/jobs",
    summary="List jobs, newest first (or dearest first)",
    description="Read from the listing index: about 0.04 read unit a job listed, plus half a read unit for each "
    "failed job on the page (its item holds its exception type and failed phase, errorType and errorPhase). "
    "Each job's createdAt and updatedAt (its last status change: a finished job's end) give its duration.",
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
    costs: Annotated[bool, Query(description=WITH_COSTS)] = False,
    stalled: Annotated[bool, Query(description=STALLED_FILTER)] = False,
    error_type: Annotated[
        str | None, Query(alias="errorType", min_length=1, max_length=MAX_TYPE_CHARS, description=ERROR_TYPE_FILTER)
    ] = None,
    error_phase: Annotated[PhaseName | None, Query(alias="errorPhase", description=ERROR_PHASE_FILTER)] = None,
) -> JobPage:
    services = current_services()
    if pipeline is not None:
        services.pipeline(pipeline)  # an unknown pipeline is refused (400), not answered with nothing
    if sort == "cost" and (error_type is not None or error_phase is not None):
        refused = "errorType and errorPhase list newest first: leave sort out"
        raise ApiError(HTTPStatus.BAD_REQUEST, "invalid_request", refused)
    if stalled and status not in (None, JobStatus.RUNNING):
        raise ApiError(HTTPStatus.BAD_REQUEST, "invalid_request", "stalled=true lists running jobs: leave status out")
    where = JobFilter(
        status=JobStatus.RUNNING if stalled else status,
        pipeline=pipeline,
        created_from=epoch_ms(created_from),
        created_to=epoch_ms(created_to),
        id_prefix=id_prefix,
        error_type=error_type,
        error_phase=error_phase,
    )
    storage = services.storage(caller(router))
    if sort == "cost":
        page = storage.cost_page(cursor=cursor, limit=limit, where=where)
    else:
        page = storage.list_page(cursor=cursor, limit=limit, where=where)
        page = with_costs(page, storage, services.cairn(caller(router)).prices) if costs else page
    return marked(page, storage, services.runtime.settings, only_stalled=stalled)


@router.get(
    "/jobs/counts",
    summary="How many of your jobs have each status",
    description="On a stack whose table's stream keeps the counts (the template's StatusCounts source, "
    "CAIRN_STATUS_COUNTS=maintained; maintained is true): one read of the caller's counts item, half a read unit, "
    "exact however many jobs; a job counts until DynamoDB's TTL deletes it, and jobs made before the stream are "
    "counted from the listing index until TTL has deleted them. Otherwise read from the listing index, not from "
    "every job: exact while the caller has up to about 4,000 "
    "jobs (1,000 a listing shard); above that each count is a lower bound and exact is false. stalled counts the "
    f"stalled jobs among the newest {COUNT_BOUND} running ones (one listing page, then one consistent read of "
    "each running job's item, 1 to 3 read units, and of its map's record when it is in a map); past that it is a "
    "lower bound and exact is false.",
    tags=["jobs"],
    responses=responses(HTTPStatus.OK, "A count per status; exact says whether each is exact or at least so"),
)
def count_jobs() -> JobCounts:
    services = current_services()
    storage = services.storage(caller(router))
    return with_stalled(storage.count_jobs(), storage, services.runtime.settings)


@router.get(
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
    jobs = current_services().cairn(caller(router))
    settings = current_services().runtime.settings
    return job_view(jobs, job_id, include_state=include_state, include_input=include_input, settings=settings)


@router.get(
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
    return job_log(current_services().cairn(caller(router)), job_id, limit=limit, cursor=cursor)


@router.get(
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
    return job_history(current_services().cairn(caller(router)), job_id, limit=limit, cursor=cursor)
