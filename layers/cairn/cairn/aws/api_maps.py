"""What a job's maps did: each map as one lane (its items counted by status, the failed and the slowest listed),
and one item whole (its attempts, error, traceback, log and result).

- ``GET /jobs/{jobId}/maps``: every map the job has run, oldest first. It reads every item record of the
  job's maps (an operator's view of a map; the job's own view never calls it).
- ``GET /jobs/{jobId}/maps/{mapId}/items/{index}``: one item, one record read.

Registered on the API's resolver by :mod:`cairn.aws.api`; the caller sees only its own jobs.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import Field

from ..core.models import Failure, LogEntry, MapItem, MapItemStatus, MapRecord, WireModel
from .api_routes import JobIdPath, callers_jobs, responses

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
"""The routes of this module, included in the API's resolver."""

#: Failed items a lane lists by index (the rest are counted).
LISTED_FAILED = 20
#: Items a lane lists as the slowest.
LISTED_SLOWEST = 5
#: The highest item index a request may name (a map holds at most this many items).
MAX_ITEM_INDEX = 100_000


class ItemSummary(WireModel):
    """One item as a lane lists it: where it stands, how many attempts, its error (and exception type)."""

    index: int
    status: MapItemStatus
    attempt: int
    updated_at: int = Field(description="Unix ms of the item's last write (when it finished, once it has)")
    ran_ms: int | None = Field(
        default=None, description="How long its last attempt ran (ms), once it finished; null when not known"
    )
    error: str | None = None
    error_type: str | None = Field(default=None, description="The last failed attempt's exception type")

    @classmethod
    def of(cls, item: MapItem) -> ItemSummary:
        """The summary of ``item``."""
        failure_type = item.failure.type if item.failure is not None else None
        return cls(
            index=item.index,
            status=item.status,
            attempt=item.attempt,
            updated_at=item.updated_at,
            ran_ms=ran_ms(item),
            error=item.error,
            error_type=failure_type,
        )


def ran_ms(item: MapItem) -> int | None:
    """How long a finished item's last attempt ran: from its claim to its finish (None: unfinished, or unknown)."""
    if item.status == "pending" or item.claimed_at is None:
        return None
    return max(0, item.updated_at - item.claimed_at)


class MapLane(WireModel):
    """One map of a job: what ran it, its items counted by status, the failed ones and the slowest."""

    id: str
    phase: str = Field(description="The item phase (each item runs it)")
    started_by: str
    then: str
    created_at: int
    count: int
    max_concurrency: int
    counts: dict[str, int] = Field(description="Items by status: pending, done, failed")
    attempts: int = Field(description="Attempts of every item together (a retried item counts each)")
    failed: list[ItemSummary] = Field(description=f"The failed items, by index (the first {LISTED_FAILED})")
    slowest: list[ItemSummary] = Field(
        description=f"The {LISTED_SLOWEST} finished items whose last attempt ran longest, slowest first"
    )

    @classmethod
    def of(cls, record: MapRecord, items: list[MapItem]) -> MapLane:
        """The lane of the map ``record`` from its item records."""
        counts = {"pending": 0, "done": 0, "failed": 0}
        for item in items:
            counts[item.status] = counts.get(item.status, 0) + 1
        counts["pending"] += max(0, record.fan_out.count - len(items))  # items not yet written are pending
        timed = [item for item in items if ran_ms(item) is not None]
        slowest = sorted(timed, key=lambda item: (-(ran_ms(item) or 0), item.index))[:LISTED_SLOWEST]
        return cls(
            id=record.fan_out.id,
            phase=record.fan_out.phase,
            started_by=record.started_by,
            then=record.then,
            created_at=record.created_at,
            count=record.fan_out.count,
            max_concurrency=record.fan_out.max_concurrency,
            counts=counts,
            attempts=sum(item.attempt for item in items),
            failed=[ItemSummary.of(item) for item in items if item.status == "failed"][:LISTED_FAILED],
            slowest=[ItemSummary.of(item) for item in slowest],
        )


class JobMaps(WireModel):
    """``GET /jobs/{jobId}/maps``."""

    job_id: str
    maps: list[MapLane]


class ItemView(ItemSummary):
    """``GET /jobs/{jobId}/maps/{mapId}/items/{index}``: one item whole."""

    job_id: str
    map_id: str
    input: Any = None
    result: Any = None
    failure: Failure | None = None
    log: list[LogEntry] = Field(default_factory=list)


MapIdPath = Annotated[
    str, Path(alias="mapId", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$", description="The map's id")
]
IndexPath = Annotated[int, Path(alias="index", ge=0, le=MAX_ITEM_INDEX, description="The item's index")]


@router.get(
    "/jobs/<jobId>/maps",
    summary="A job's maps, each as one lane",
    description="Every map the job has run, oldest first: its items counted by status, the failed ones and the "
    "slowest. Reads every item record of the job's maps.",
    tags=["jobs"],
    responses=responses(HTTPStatus.OK, "The job's maps", HTTPStatus.NOT_FOUND),
)
def get_job_maps(job_id: JobIdPath) -> JobMaps:
    lanes = [MapLane.of(record, items) for record, items in callers_jobs(router, job_id).maps(job_id)]
    return JobMaps(job_id=job_id, maps=lanes)


@router.get(
    "/jobs/<jobId>/maps/<mapId>/items/<index>",
    summary="One item of a job's map",
    description="The item's status, attempts, input, result, error with its exception and traceback, and log.",
    tags=["jobs"],
    responses=responses(HTTPStatus.OK, "The item", HTTPStatus.NOT_FOUND),
)
def get_map_item(job_id: JobIdPath, map_id: MapIdPath, index: IndexPath) -> ItemView:
    item = callers_jobs(router, job_id).map_item(job_id, map_id, index)
    summary = ItemSummary.of(item).model_dump()
    return ItemView(
        **summary,
        job_id=job_id,
        map_id=map_id,
        input=item.input,
        result=item.result,
        failure=item.failure,
        log=item.log,
    )
