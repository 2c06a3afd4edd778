"""Bulk actions on the server: retry, restart or cancel many of the caller's jobs, run by the scheduler function.

- ``POST /bulk`` selects the jobs (a listing filter, or ids; at most ``limit``, refused with 409 when more
  match), keeps the selection and queues its first chunk (202, the bulk); with ``dryRun`` it lists the ids it
  would act on (200) and keeps nothing. An ``Idempotency-Key`` header (or a body ``requestId``) makes a resent
  request return the bulk the first one started; no second bulk starts.
- ``GET /bulk/{bulkId}``: who started it, when, and its progress; ``GET /bulk/{bulkId}/jobs``: each job's
  outcome and its status now, a page at a time. Another caller's bulk is 404.

The work runs in :mod:`cairn.aws.bulk_worker`, a chunk a scheduler invocation: closing the page that asked does
not stop it, and no request runs longer than one selection.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from http import HTTPStatus
from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from ..core.bulk_port import MAX_BULK, PAGE_SIZE, BulkOperations, BulkRecord, Selected
from ..core.errors import InvalidInputError, SchedulingError
from ..core.models import JobStatus
from .api_errors import ApiError
from .api_models import CreatedTime, Cursor, IdPrefix, JobId, PipelineName, RequestModel, epoch_ms
from .api_routes import caller, responses
from .api_services import current_services
from .bulk_worker import BULK_TTL_SECONDS, BulkMessage, send_bulk
from .dynamodb import DynamoDBStorage
from .listing import JobFilter
from .observability import logger, metrics

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
"""The routes of this module, included in the API's resolver."""

BULK_ID_PATTERN = r"^[A-Za-z0-9-]{1,64}$"
KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,128}$")
"""An idempotency key: 1 to 128 printable ASCII characters, no spaces."""
SELECTION_PAGE = 1000
"""Listing entries the selection reads a page (the listing's most): 10,000 jobs in about ten pages."""
OUTCOME_PAGE = 100
CURSOR_PATTERN = r"^[0-9]{1,5}-[0-9]{1,5}$"

BulkIdPath = Annotated[str, Path(alias="bulkId", description="The bulk's id", pattern=BULK_ID_PATTERN, max_length=64)]


class _Reply(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class BulkFilter(RequestModel):
    """The jobs a bulk acts on, as a listing filters them (every field given must match; at least one)."""

    status: JobStatus | None = None
    pipeline: PipelineName | None = None
    created_from: CreatedTime | None = None
    created_to: CreatedTime | None = None
    id_prefix: IdPrefix | None = None


def _one_selection_schema(schema: dict[str, Any]) -> None:
    """The rule of :class:`BulkRequest` as JSON Schema: a ``filter`` object or an ``ids`` array, not both."""
    schema["oneOf"] = [
        {"required": ["filter"], "properties": {"filter": {"type": "object"}, "ids": {"type": "null"}}},
        {"required": ["ids"], "properties": {"ids": {"type": "array"}, "filter": {"type": "null"}}},
    ]


class BulkRequest(RequestModel):
    """Act on every job ``filter`` matches (an empty filter: every job), or on the jobs ``ids`` names; at most
    ``limit`` of them."""

    model_config = ConfigDict(json_schema_extra=_one_selection_schema)

    action: Literal["retry", "restart", "cancel"] = Field(
        description="retry resumes each job from its checkpoint, restart starts it over, cancel cancels it"
    )
    filter: BulkFilter | None = Field(default=None, description="Select by status, pipeline, created time, id prefix")
    ids: list[JobId] | None = Field(default=None, min_length=1, max_length=MAX_BULK, description="Or name the jobs")
    limit: int = Field(ge=1, le=MAX_BULK, description="Refuse (409) when more jobs than this match")
    dry_run: bool = Field(default=False, description="List the jobs it would act on; act on none")
    request_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        pattern=KEY_PATTERN.pattern,
        description="An idempotency key (or the Idempotency-Key header): a resent request returns the same bulk",
    )

    @model_validator(mode="after")
    def _one_selection(self) -> BulkRequest:
        if (self.filter is None) == (self.ids is None):
            raise ValueError("give a filter or ids, not both and not neither")
        return self


class DryRun(_Reply):
    """The jobs a bulk would act on (newest first); nothing was done."""

    dry_run: Literal[True] = True
    action: str
    matched: int
    job_ids: list[str]


class BulkView(_Reply):
    """A bulk operation: who started it, when, and how far it is."""

    bulk_id: str
    action: str
    by: str
    created_at: int = Field(description="Unix ms")
    limit: int
    filter: dict[str, object]
    matched: int = Field(description="Jobs selected")
    done: int
    refused: int
    errored: int
    pending: int
    finished: bool
    finished_at: int | None = None

    @classmethod
    def of(cls, record: BulkRecord) -> BulkView:
        """The view of ``record``."""
        return cls(
            bulk_id=record.bulk_id,
            action=record.action,
            by=record.by,
            created_at=record.created_at,
            limit=record.limit,
            filter=record.filter,
            matched=record.selected,
            done=record.counts.get("done", 0),
            refused=record.counts.get("refused", 0),
            errored=record.counts.get("errored", 0),
            pending=record.pending,
            finished=record.finished_at is not None,
            finished_at=record.finished_at,
        )


class BulkJob(_Reply):
    """One job of a bulk: its outcome (None while pending) and its status now (``missing`` when it is gone)."""

    job_id: str
    outcome: Literal["done", "refused", "errored"] | None = None
    detail: str = ""
    at: int | None = None
    status: str
    selected_status: str | None = None


class BulkJobs(_Reply):
    """A page of a bulk's jobs, in the order it acts on them; ``cursor`` reads on (None on the last page)."""

    jobs: list[BulkJob]
    cursor: str | None = None


def _operations(storage: DynamoDBStorage) -> BulkOperations:
    operations = storage.bulk_operations()
    if operations is None:  # pragma: no cover - a store without them
        raise ApiError(HTTPStatus.NOT_IMPLEMENTED, "not_supported", "This deployment's store keeps no bulk operations")
    return operations


def _idempotency_key(request: BulkRequest) -> str | None:
    """The request's idempotency key: the header or ``requestId`` (400 when both differ or the header is bad)."""
    headers = {name.lower(): value for name, value in (router.current_event.headers or {}).items()}
    header = headers.get("idempotency-key")
    if header is not None and not KEY_PATTERN.fullmatch(header):
        raise ApiError(
            HTTPStatus.BAD_REQUEST, "invalid_request", "Idempotency-Key must be 1 to 128 printable characters"
        )
    if header is not None and request.request_id is not None and header != request.request_id:
        raise ApiError(HTTPStatus.BAD_REQUEST, "invalid_request", "Idempotency-Key and requestId differ")
    return header or request.request_id


def _bulk_id(owner: str, key: str | None) -> str:
    """A bulk's id: from the caller and its key (so a resent request names the same bulk), else new."""
    if key is None:
        return f"b-{uuid.uuid4().hex}"
    return "b-" + hashlib.sha256(f"{owner}\0{key}".encode()).hexdigest()[:32]


def _select(storage: DynamoDBStorage, request: BulkRequest) -> list[Selected]:
    """The jobs the request selects, newest first; 409 when more than ``limit`` match."""
    if request.ids is not None:
        ids = list(dict.fromkeys(request.ids))
        if len(ids) > request.limit:
            raise ApiError(
                HTTPStatus.CONFLICT,
                "too_many_jobs",
                f"{len(ids)} ids given, more than the limit {request.limit}: raise limit; nothing was done",
            )
        return [Selected(job_id) for job_id in ids]
    chosen = request.filter or BulkFilter()
    if chosen.pipeline is not None:
        current_services().pipeline(chosen.pipeline)  # an unknown pipeline is refused (400)
    where = JobFilter(
        status=chosen.status,
        pipeline=chosen.pipeline,
        created_from=epoch_ms(chosen.created_from),
        created_to=epoch_ms(chosen.created_to),
        id_prefix=chosen.id_prefix,
    )
    found: dict[str, Selected] = {}
    cursor: str | None = None
    while True:
        page = storage.list_page(cursor=cursor, limit=SELECTION_PAGE, where=where)
        for job in page.jobs:
            found.setdefault(job.job_id, Selected(job.job_id, job.status.value))
        if len(found) > request.limit:
            raise ApiError(
                HTTPStatus.CONFLICT,
                "too_many_jobs",
                f"More than {request.limit} jobs match: narrow the filter, or raise limit (up to {MAX_BULK}); "
                "nothing was done",
            )
        cursor = page.cursor
        if not cursor:
            return list(found.values())


def _filter_of(request: BulkRequest) -> dict[str, object]:
    if request.filter is None:
        return {"ids": len(request.ids or [])}
    return request.filter.model_dump(mode="json", by_alias=True, exclude_none=True)


def _accepted(view: BulkView) -> Response[BulkView | DryRun]:
    return Response(
        status_code=HTTPStatus.ACCEPTED.value,
        content_type=content_types.APPLICATION_JSON,
        body=view,
        headers={"Location": f"/bulk/{view.bulk_id}"},
    )


@router.post(
    "/bulk",
    status_code=HTTPStatus.ACCEPTED.value,
    summary="Retry, restart or cancel many jobs, on the server",
    description="Selects the jobs (filter or ids, at most limit: 409 when more match, nothing done) and runs the "
    "action in the scheduler function, a chunk at a time; follow it with GET /bulk/{bulkId}. Each job is acted on "
    "at most once, and its log names the caller and the bulk. The same Idempotency-Key (or requestId) from the "
    "same caller returns the same bulk. dryRun: 200 with the ids it would act on, nothing kept.",
    tags=["bulk"],
    responses={
        **responses(HTTPStatus.ACCEPTED, "The bulk is stored and its first chunk queued", HTTPStatus.CONFLICT),
        HTTPStatus.OK.value: {
            "description": "The dry run: the ids it would act on; nothing kept or done",
            "content": {content_types.APPLICATION_JSON: {"model": DryRun}},
        },
    },
)
def start_bulk(request: Annotated[BulkRequest, Body()]) -> Response[BulkView | DryRun]:
    services = current_services()
    owner = caller(router)
    key = _idempotency_key(request)
    storage = services.storage(owner)
    operations = _operations(storage)
    bulk_id = _bulk_id(owner, key)
    logger.append_keys(bulk_id=bulk_id)
    existing = operations.get_bulk(bulk_id) if key is not None and not request.dry_run else None
    if existing is not None:
        if existing.action != request.action:
            raise ApiError(
                HTTPStatus.CONFLICT,
                "conflict",
                f"This idempotency key already names bulk {existing.bulk_id}, a {existing.action}: use a new key",
            )
        if existing.finished_at is None and existing.pending == existing.selected:
            _kick(existing, owner)  # it may never have started (its first message was lost): harmless twice
        return _accepted(BulkView.of(existing))
    selected = _select(storage, request)
    if request.dry_run:
        preview = DryRun(action=request.action, matched=len(selected), job_ids=[job.job_id for job in selected])
        return Response(HTTPStatus.OK.value, content_types.APPLICATION_JSON, preview)
    now = storage.clock()
    pages = [selected[start : start + PAGE_SIZE] for start in range(0, len(selected), PAGE_SIZE)]
    record = BulkRecord(
        bulk_id=bulk_id,
        by=owner,
        action=request.action,
        created_at=now,
        selected=len(selected),
        pages=len(pages),
        selection=uuid.uuid4().hex[:12],
        limit=request.limit,
        filter=_filter_of(request),
    )
    stored = operations.create_bulk(record, pages, expires_at=now // 1000 + BULK_TTL_SECONDS)
    if stored.selection == record.selection:
        _kick(stored, owner)
        metrics.add_metric(name="BulkOperationsStarted", unit=MetricUnit.Count, value=1)
        metrics.add_metric(name="BulkJobsSelected", unit=MetricUnit.Count, value=len(selected))
    return _accepted(BulkView.of(stored))


def _kick(record: BulkRecord, owner: str) -> None:
    """Queue the bulk's first chunk; 503 when the queue cannot take it (resend the request: it starts then)."""
    try:
        send_bulk(current_services().runtime, BulkMessage(bulk_id=record.bulk_id, owner=owner))
    except SchedulingError as exc:
        logger.warning("A bulk is stored but its first chunk could not be queued", extra={"error": str(exc)})
        raise ApiError(
            HTTPStatus.SERVICE_UNAVAILABLE,
            "unavailable",
            "The bulk is stored but could not be started; send the request again with the same Idempotency-Key",
        ) from exc


def _position(cursor: str | None) -> tuple[int, int]:
    """The page and index a cursor of a bulk's jobs names; a cursor this route did not return is refused (400)."""
    if cursor is None:
        return 0, 0
    if not re.fullmatch(CURSOR_PATTERN, cursor):
        raise InvalidInputError(f"Invalid cursor: not one this bulk's jobs returned ({cursor[:40]!r})")
    page, start = cursor.split("-")
    return int(page), int(start)


def _record(bulk_id: str) -> tuple[DynamoDBStorage, BulkOperations, BulkRecord]:
    storage = current_services().storage(caller(router))
    operations = _operations(storage)
    logger.append_keys(bulk_id=bulk_id)
    record = operations.get_bulk(bulk_id)
    if record is None:
        raise ApiError(HTTPStatus.NOT_FOUND, "not_found", f'No bulk "{bulk_id}"')
    return storage, operations, record


@router.get(
    "/bulk/<bulkId>",
    summary="A bulk's progress",
    tags=["bulk"],
    responses=responses(HTTPStatus.OK, "The bulk", HTTPStatus.NOT_FOUND),
)
def get_bulk(bulk_id: BulkIdPath) -> BulkView:
    return BulkView.of(_record(bulk_id)[2])


@router.get(
    "/bulk/<bulkId>/jobs",
    summary="A bulk's jobs: each one's outcome and its status now",
    tags=["bulk"],
    responses=responses(HTTPStatus.OK, "A page of the bulk's jobs; pass its cursor to read on", HTTPStatus.NOT_FOUND),
)
def get_bulk_jobs(
    bulk_id: BulkIdPath,
    cursor: Annotated[
        Cursor | None, Query(description="The cursor of the previous page of this bulk's jobs (else 400)")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=OUTCOME_PAGE, description="Jobs a page")] = OUTCOME_PAGE,
) -> BulkJobs:
    page, start = _position(cursor)
    storage, operations, record = _record(bulk_id)
    if page >= record.pages:
        return BulkJobs(jobs=[])
    selected = operations.selected_page(record, page)
    stop = min(start + limit, len(selected))
    outcomes = operations.outcomes(record, page, start, stop)
    jobs = []
    for index in range(start, stop):
        chosen = selected[index]
        outcome = outcomes.get(index)
        route = storage.get_route(chosen.job_id)
        jobs.append(
            BulkJob(
                job_id=chosen.job_id,
                outcome=outcome.outcome if outcome else None,
                detail=outcome.detail if outcome else "",
                at=outcome.at if outcome else None,
                status=route.status.value if route is not None else "missing",
                selected_status=chosen.status,
            )
        )
    if stop < len(selected):
        following: str | None = f"{page}-{stop}"
    else:
        following = f"{page + 1}-0" if page + 1 < record.pages else None
    return BulkJobs(jobs=jobs, cursor=following)
