"""A listing's summaries: read from ``Listing`` index entries, or from job items where an entry cannot answer.

An index entry and a job item name the listed fields alike (the index projects them:
:data:`~cairn.aws.dynamodb.schema.LISTING_ATTRIBUTES`), so one reading serves both. An entry answers
for its job unless it was written before the index kept summaries (no ``statusAt``) or the job is
running and its ``statusExpiresAt`` has passed: a running job's item is rewritten between status
changes, each write pushing its expiry on, so only the item says whether it is gone. Any other job
whose ``statusExpiresAt`` has passed is gone (nothing else writes it), whether or not DynamoDB has
deleted it yet.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from enum import Enum
from typing import Any

from ...core import ttl
from ...core.errors import CorruptJobError, StorageError
from ...core.models import JobStatus, JobSummary
from . import schema
from .attributes import UNREADABLE, Item, from_item, location, unreadable_reason
from .expressions import Expression
from .table import BATCH_ATTEMPTS, Table


class Verdict(Enum):
    """What a listing does with an index entry."""

    LIST = "list"
    """The entry answers: its summary is listed (a corrupt one as corrupt)."""
    READ = "read"
    """Only the job item answers: it is read, and listed if it is live."""
    SKIP = "skip"
    """The job is gone (its expiry passed): left out."""


def _seconds(item: Item, name: str) -> int | None:
    """The Unix seconds an item holds in ``name`` (None when absent); a value that is not a time is corrupt."""
    value = item.get(name)
    if value is None:
        return None
    text = str(value.get("N")) if isinstance(value, dict) else ""
    if not text.isdigit() or len(text) > 16:
        raise CorruptJobError(location(item), f"its {name} is not a time ({text[:40]!r})")
    return int(text)


def triage(entry: Item, now_ms: int) -> Verdict:
    """Whether an index entry is listed as it is, read from its job item, or left out (expired)."""
    if "statusAt" not in entry or "statusExpiresAt" not in entry:
        return Verdict.READ  # written before the index kept summaries
    try:
        expires = _seconds(entry, "statusExpiresAt")
    except CorruptJobError:
        return Verdict.LIST  # listed as corrupt, with why
    if expires is None or not ttl.is_past(expires, now_ms):
        return Verdict.LIST
    status = entry.get("status")
    running = isinstance(status, dict) and status.get("S") == schema.REWRITTEN_IN_STATUS
    return Verdict.READ if running else Verdict.SKIP


def summary_of(item: Item, *, status: JobStatus | None = None) -> JobSummary:
    """A listing's summary of an index entry or a job item; an unreadable one is marked ``corrupt``.

    ``updated_at`` is the last status change (a job item written before ``statusAt`` existed: its last
    write); ``expires_at`` the item's expiry when the item was read, else the one the last status change
    set (a lower bound). ``status`` stands in for an unreadable status.
    """
    try:
        expires = _seconds(item, schema.TTL_ATTRIBUTE)
        if expires is None:
            expires = _seconds(item, "statusExpiresAt")
        if expires is None:
            raise CorruptJobError(location(item), "it has no expiresAt")
        values = from_item(item)
        return JobSummary(
            job_id=str(values["pk"]).split("#", 2)[2],
            pipeline=values["pipeline"],
            status=JobStatus(values["status"]),
            error=values.get("error"),
            error_type=values.get("errorType"),
            error_phase=values.get("errorPhase"),
            created_at=values["createdAt"],
            updated_at=values["statusAt"] if "statusAt" in values else values["updatedAt"],
            expires_at=expires,
            cost_usd=_listed_cost(values),
        )
    except CorruptJobError as exc:
        return corrupt_summary(item, exc, status=status)
    except (*UNREADABLE, IndexError) as exc:
        return corrupt_summary(item, CorruptJobError(location(item), unreadable_reason(exc)), status=status)


def _listed_cost(values: dict[str, Any]) -> float | None:
    """The dollars of an entry's ``listCost`` (None: it has none, or it is unknown)."""
    figure = values.get(schema.LISTED_COST_ATTRIBUTE)
    if not isinstance(figure, int | float) or isinstance(figure, bool) or figure < 0:
        return None
    return float(figure)


def corrupt_summary(item: Item, error: CorruptJobError, *, status: JobStatus | None = None) -> JobSummary:
    """A listing entry for a job that cannot be read: its id (from its key), ``corrupt``, and why."""

    def plain(name: str, kind: str) -> Any:
        value = item.get(name)
        return value.get(kind) if isinstance(value, dict) else None

    def number(*names: str) -> int:
        for name in names:
            text = plain(name, "N")
            if isinstance(text, str) and text.isdigit() and len(text) <= 16:
                return int(text)
        return 0

    pipeline = plain("pipeline", "S")
    stored_status = plain("status", "S")
    return JobSummary(
        job_id=str(plain("pk", "S") or "").split("#", 2)[-1],
        pipeline=pipeline if isinstance(pipeline, str) else "",
        status=JobStatus(stored_status) if stored_status in set(JobStatus) else status or JobStatus.ERROR,
        error=f"unreadable: {error.reason}"[:1000],
        created_at=number("createdAt"),
        updated_at=number("statusAt", "updatedAt"),
        expires_at=number(schema.TTL_ATTRIBUTE, "statusExpiresAt"),
        corrupt=True,
    )


#: The most keys one BatchGetItem reads.
BATCH_GET_LIMIT = 100


def summary_items(
    table: Table,
    partition_keys: list[Any],
    attributes: list[str] = schema.SUMMARY_ATTRIBUTES,
    *,
    consistent: bool = True,
) -> list[Item]:
    """The job items of ``partition_keys`` (``attributes`` only: the summary's), in the same order; missing ones
    left out. ``consistent``: strongly consistent reads (1 read unit per 4 KB of each item, else half)."""
    found: dict[str, Item] = {}
    projection = Expression().projection_kwargs(*attributes)
    for start in range(0, len(partition_keys), BATCH_GET_LIMIT):
        keys = [{"pk": pk, "sk": {"S": schema.JOB_SK}} for pk in partition_keys[start : start + BATCH_GET_LIMIT]]
        request: dict[str, Any] = {table.name: {"Keys": keys, "ConsistentRead": consistent, **projection}}
        for _ in range(BATCH_ATTEMPTS):
            response = table.call(table.client.batch_get_item, RequestItems=request)
            for item in response.get("Responses", {}).get(table.name, []):
                found[str(item["pk"].get("S"))] = item
            request = dict(response.get("UnprocessedKeys") or {})
            if not request:
                break
        if request:
            raise StorageError("DynamoDB left part of a listing unread; try again", retryable=True)
    return [found[str(pk.get("S"))] for pk in partition_keys if str(pk.get("S")) in found]


def job_usages(table: Table, job_ids: Sequence[str]) -> dict[str, dict[str, float]]:
    """The usage counters of each of ``job_ids`` whose item is stored (eventually consistent; an expired job's
    too, a listing having left it out already); an item whose usage cannot be read is left out."""
    keys = [{"S": table.codec.pk(job_id)} for job_id in dict.fromkeys(job_ids)]
    usages: dict[str, dict[str, float]] = {}
    for item in summary_items(table, keys, ["pk", "usage"], consistent=False):
        try:
            text = from_item(item).get("usage")
            usage = json.loads(text) if isinstance(text, str) else {}
        except (*UNREADABLE, ValueError):
            continue
        if isinstance(usage, dict) and all(isinstance(value, int | float) for value in usage.values()):
            usages[str(item["pk"].get("S")).split("#", 2)[-1]] = usage
    return usages
