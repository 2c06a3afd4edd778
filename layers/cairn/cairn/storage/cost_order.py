"""A listing dearest first for a store that reads its jobs whole (memory, files): the same order and paging as
the DynamoDB store's ``CostListing`` index, computed from every live job.

Each job is ordered by its cost figure (:func:`cairn.features.cost.stored_cost`) as it is now, then newest
first; the cursor holds the last job's place in that order and the filter's digest, so a page starts where the
one before ended whatever was started in between, and a cursor of another filter is refused.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable
from decimal import Decimal

from ..core.errors import InvalidInputError
from ..core.ids import JOB_ID_PATTERN
from ..core.models import Job, JobPage, JobSummary
from ..core.storage_port import ListingFilter
from ..features.cost import plain_number, stored_cost

_NUMBER = re.compile(r"-?[0-9]{1,40}(\.[0-9]{1,40})?")
"""A figure as a cursor holds it."""

_Place = tuple[Decimal, int, str]
"""A job's place in the order: its cost figure, its creation time and its id (greatest first)."""


def cost_page_of(jobs: Iterable[Job], where: ListingFilter | None, cursor: str | None, limit: int) -> JobPage:
    """One page of ``jobs`` that ``where`` lets through, dearest first, after ``cursor``'s place."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise InvalidInputError(f"limit must be between 1 and 1000, got {limit!r}")
    bound = "" if where is None else where.fingerprint()
    after = None if cursor is None else _decode(cursor, bound)
    ranked: list[tuple[_Place, JobSummary]] = []
    for job in jobs:
        figure = stored_cost(job.usage)
        summary = JobSummary.of(job).model_copy(
            update={"cost_usd": None if figure is None else float(figure), "attempt": None, "next_phase": None}
        )
        place = (Decimal(-1) if figure is None else figure, job.created_at, job.job_id)
        if (where is None or where.matches(summary)) and (after is None or place < after):
            ranked.append((place, summary))
    ranked.sort(key=lambda ranking: ranking[0], reverse=True)
    page = ranked[:limit]
    more = len(ranked) > limit
    return JobPage(jobs=[summary for _, summary in page], cursor=_encode(page[-1][0], bound) if more else None)


def _encode(place: _Place, bound: str) -> str:
    figure, created_at, job_id = place
    text = json.dumps({"c": [plain_number(figure), created_at, job_id], "f": bound}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(text).decode().rstrip("=")


def _decode(cursor: str, bound: str) -> _Place:
    refused = InvalidInputError("Invalid cursor: it was not returned by this listing")
    if not isinstance(cursor, str) or not 0 < len(cursor) <= 1024:
        raise refused
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error, RecursionError) as exc:
        raise refused from exc
    if not isinstance(values, dict) or set(values) != {"c", "f"} or values["f"] != bound:
        raise refused
    place = values["c"]
    if not (isinstance(place, list) and len(place) == 3):
        raise refused
    figure, created_at, job_id = place
    if not isinstance(figure, str) or not _NUMBER.fullmatch(figure) or type(created_at) is not int:
        raise refused
    if not isinstance(job_id, str) or not JOB_ID_PATTERN.fullmatch(job_id):
        raise refused
    return Decimal(figure), created_at, job_id
