"""``GET /failures``: why the caller's jobs are failing, grouped by exception type, failed phase and pipeline.

The range is of creation times, as the list's ``createdFrom`` and ``createdTo`` are, so each group's ``query``
appended to ``GET /jobs?`` (or to the dashboard's ``#/?``) lists exactly the jobs it counted. The store reads at
most ``limit`` failed jobs (:meth:`~cairn.core.storage_port.Storage.failed_jobs`); beyond them ``exact`` is
false and each count is a lower bound. Messages are redacted as every reply is (:mod:`.api_redaction`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Annotated
from urllib.parse import urlencode

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import Field, StringConstraints

from ..core.errors import InvalidInputError
from ..core.failure_groups import FailureGroup, grouped
from ..core.models import WireModel
from ..core.text import shown
from .api_models import PipelineName, epoch_ms
from .api_routes import caller, responses
from .api_services import current_services
from .listing import NO_EXCEPTION

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
"""The route of this module, included in the API's resolver."""

#: The range a request without ``since`` covers: the last 24 hours.
DEFAULT_SINCE = "24h"
#: The most failed jobs one request reads (about half a read unit each), and how many it reads unless asked for fewer.
MAX_EXAMINED = 1000
_UNITS = {"m": 60_000, "h": 3_600_000, "d": 86_400_000}
_AGO = re.compile(r"^(\d{1,6})([mhd])$")
REVERSED = "The created-time range is reversed: since is after until"
RANGE = (
    "A time: ISO 8601 (UTC unless it names its offset, e.g. 2026-12-01T09:30:00Z), or a span before now: "
    "a number and m, h or d (30m, 24h, 7d)"
)
DESCRIPTION = (
    "The caller's jobs in error created within the range (since: 24h ago by default; until: now), grouped by "
    "exception type, failed phase and pipeline, biggest first; each group has its count, its newest failure, the "
    "newest one's message (first line, shortened, redacted) and the filter (query) that lists its jobs. Reads the "
    "status index's entries of the range and each failed job's item: about half a read unit a job (500 for 1,000 "
    f"jobs), at most `limit` jobs (default and most {MAX_EXAMINED}); beyond them exact is false and each count is "
    "at least so. A range whose "
    "start is after its end, or a time that cannot be read, is refused (400)."
)


class FailureGroupView(FailureGroup):
    """A group of failures, with the filter that lists its jobs."""

    filter: dict[str, str] = Field(description="The list's query parameters that show this group's jobs")
    query: str = Field(description="The same, URL-encoded: append it to GET /jobs? or to the dashboard's #/?")


class FailureReport(WireModel):
    """The caller's failures in a range of creation times, grouped."""

    since: int = Field(description="Unix ms: the range's start (inclusive)")
    until: int = Field(description="Unix ms: the range's end (inclusive)")
    groups: list[FailureGroupView]
    examined: int = Field(description="The failed jobs read")
    exact: bool = Field(description="False: more failed jobs matched than were read; each count is at least so")


Span = Annotated[str, StringConstraints(pattern=_AGO.pattern)]
"""A span before now: a number of minutes, hours or days (``30m``, ``24h``, ``7d``)."""
Bound = datetime | Span
"""A range bound as a request gives it: an ISO 8601 time, or a span before now."""


def moment(bound: Bound, *, now_ms: int) -> int:
    """A range bound as Unix ms: a span before ``now_ms`` (``24h``), or a time (UTC unless it names its offset)."""
    if isinstance(bound, datetime):
        return epoch_ms(bound) or 0
    ago = _AGO.fullmatch(bound.strip())
    if ago is None:
        raise InvalidInputError(f"A range bound is a time (ISO 8601) or a span such as 24h, got {shown(bound[:60])}")
    return max(now_ms - int(ago.group(1)) * _UNITS[ago.group(2)], 0)


def group_filter(group: FailureGroup, since: int, until: int) -> dict[str, str]:
    """The list's query parameters that show ``group``'s jobs in the range (the phase left out when unknown)."""
    wanted = {
        "status": "error",
        "pipeline": group.pipeline,
        "errorType": group.type if group.type is not None else NO_EXCEPTION,
        "createdFrom": _iso(since),
        "createdTo": _iso(until),
    }
    if group.phase is not None:
        wanted["errorPhase"] = group.phase
    return wanted


def _iso(ms: int) -> str:
    """Unix ms as the list's ISO 8601 time (UTC, milliseconds)."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@router.get(
    "/failures",
    summary="Why your jobs are failing: failures grouped by exception type, phase and pipeline",
    description=DESCRIPTION,
    tags=["jobs"],
    responses=responses(HTTPStatus.OK, "The groups, biggest first"),
)
def list_failures(
    since: Annotated[Bound, Query(description=f"The range's start. {RANGE}")] = DEFAULT_SINCE,
    until: Annotated[Bound | None, Query(description=f"The range's end (default: now). {RANGE}")] = None,
    pipeline: Annotated[PipelineName | None, Query(description="Only this pipeline's jobs")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_EXAMINED, description="The most failed jobs to read")] = MAX_EXAMINED,
) -> FailureReport:
    services = current_services()
    owner = caller(router)
    if pipeline is not None:
        services.pipeline(pipeline)  # an unknown pipeline is refused (400), not answered with nothing
    now = services.runtime.clock()
    start = moment(since, now_ms=now)
    end = moment(until, now_ms=now) if until is not None else now
    if start > end:
        raise InvalidInputError(REVERSED)
    failed = services.storage(owner).failed_jobs(created_from=start, created_to=end, pipeline=pipeline, limit=limit)
    groups = [
        FailureGroupView(
            **group.model_dump(), filter=(wanted := group_filter(group, start, end)), query=urlencode(wanted)
        )
        for group in grouped(failed.jobs)
    ]
    return FailureReport(since=start, until=end, groups=groups, examined=len(failed.jobs), exact=failed.exact)
