"""Listings and the sweep: jobs found through the sharded indexes, their fields read from the job items.

The indexes project keys only (:mod:`cairn.aws.dynamodb.schema`): a listing queries each of the
owner's shards, merges their keys newest first (:mod:`cairn.aws.dynamodb.cursors`), and reads the
few fields it shows from the job items in one consistent batch. The sweep reads the ``Stalled``
index, over every owner, the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...core import recovery
from ...core.errors import CorruptJobError, InvalidInputError, StorageError
from ...core.listing import MAX_TIME_MS, JobFilter, with_status
from ...core.models import Job, JobPage, JobStatus, JobSummary
from . import schema
from .attributes import UNREADABLE, Item, from_item, location, to_item
from .cursors import CURSOR_END, decode_cursor, encode_cursor, merge_newest_first, position_of
from .expressions import Expression
from .table import BATCH_ATTEMPTS, Table

logger = logging.getLogger(__name__)

BATCH_GET_LIMIT = 100


#: How many times a page of a filtered listing reads the index before it returns what it found.
MAX_ROUNDS = 8


@dataclass(frozen=True)
class _Listing:
    """What one listing reads: its index, the index's key attribute, the owner's key and the filter."""

    index: str
    key_name: str
    scope: str
    where: JobFilter


@dataclass(frozen=True)
class StalledJob:
    """A running job with no live claim that has not been written for a while."""

    owner: str
    job_id: str
    pipeline: str
    next_phase: str | None
    updated_at: int
    sequence: int = 0


class Listings:
    """One owner's listings, and the sweep of every owner's stalled jobs."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def list_jobs(self, read_job: Callable[[str], Job | None], *, status: JobStatus | None = None) -> list[Job]:
        """Every live job of this owner, newest first (reads each job; use ``list_page`` for listings).

        A job that cannot be read is left out and logged with its key, as ``FileStorage`` does.
        """
        jobs: list[Job] = []
        cursor: str | None = None
        while True:
            page = self.list_page(status=status, cursor=cursor, limit=100)
            for summary in page.jobs:
                if summary.corrupt:
                    continue  # logged by list_page
                try:
                    job = read_job(summary.job_id)
                except CorruptJobError as exc:
                    logger.warning("Left an unreadable job out of a listing: %s", exc, extra={"key": exc.location})
                    continue
                if job is not None and (status is None or job.status == status):
                    jobs.append(job)
            cursor = page.cursor
            if cursor is None:
                return sorted(jobs, key=lambda job: (job.created_at, job.job_id), reverse=True)

    def list_page(
        self,
        *,
        status: JobStatus | None = None,
        cursor: str | None = None,
        limit: int = 50,
        where: JobFilter | None = None,
    ) -> JobPage:
        """One page of this owner's live jobs, newest first: keys from a listing index, fields from the items.

        The owner's jobs are spread over ``LIST_SHARDS`` index partitions. A page
        queries each for up to ``limit`` keys, newest first, and merges them by
        ``(createdAt, jobId)`` descending, always taking the next key of a shard,
        so each shard is read in its own order; the cursor records, per shard,
        the last key taken (a shard nothing was taken from stays where it was).
        Paging therefore returns every job once, newest first.

        A job item that cannot be read is listed as a summary with ``corrupt``
        set and ``error`` saying why (and logged with its key); the rest of the
        page is unaffected. A cursor this listing did not return (another
        owner's, another status's, altered) is an InvalidInputError.

        ``where`` filters on the server, across pages: its status picks the
        index, its created-time range bounds the index's sort key, its id
        prefix filters the index's keys, and its pipeline the items read. A
        page reads on until it holds ``limit`` matches, the listing ends, or
        it has read ``MAX_ROUNDS`` times (a page of a narrow filter may then
        hold fewer, even none, and still have a cursor); the cursor is bound
        to the filter.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInputError(f"limit must be between 1 and 1000, got {limit!r}")
        where = with_status(where, status)
        index, key_name, scope = self._listing(where.status)
        bound = scope if where == JobFilter(status=where.status) else f"{scope}?{where.fingerprint()}"
        positions = (
            decode_cursor(cursor, index, bound, self.table.owner) if cursor is not None else [None] * schema.LIST_SHARDS
        )
        summaries: list[JobSummary] = []
        for _ in range(MAX_ROUNDS):
            found, positions = self._round(_Listing(index, key_name, scope, where), positions, limit - len(summaries))
            summaries.extend(found)
            if len(summaries) == limit or all(position == CURSOR_END for position in positions):
                break
        done = all(position == CURSOR_END for position in positions)
        return JobPage(jobs=summaries, cursor=None if done else encode_cursor(index, bound, positions))

    def _round(self, listing: _Listing, positions: list[Any], limit: int) -> tuple[list[JobSummary], list[Any]]:
        """Up to ``limit`` more entries from the shards at ``positions``: the matches, and where each shard is then."""
        fetched: list[list[Item]] = []
        frontiers: list[Item | None] = []
        for shard, position in enumerate(positions):
            if position == CURSOR_END:
                fetched.append([])
                frontiers.append(None)
                continue
            page = self.table.call(self.table.client.query, **self._shard_query(listing, shard, position, limit))
            fetched.append(list(page.get("Items", [])))
            frontiers.append(page.get("LastEvaluatedKey") or None)
        taken = merge_newest_first(fetched, frontiers, limit)
        where = listing.where
        listed = self._summaries([item for _, item in taken], where.status)
        summaries = [summary for summary in listed if summary.corrupt or where.matches(summary)]
        next_positions: list[Any] = []
        for shard, position in enumerate(positions):
            mine = [item for taken_shard, item in taken if taken_shard == shard]
            frontier = frontiers[shard]
            if len(mine) < len(fetched[shard]):  # the rest is read again by the next page
                next_positions.append(position_of(mine[-1]) if mine else position)
            elif frontier is None:
                next_positions.append(CURSOR_END)
            else:  # every entry it returned was taken: on from the last one it examined (a filter may skip some)
                next_positions.append(position_of(frontier))
        return summaries, next_positions

    def _listing(self, status: JobStatus | None) -> tuple[str, str, str]:
        """The index, its key attribute and the owner's key (before the shard) for a listing."""
        if status is None:
            return schema.BY_OWNER_INDEX, "owner", self.table.owner
        return schema.BY_STATUS_INDEX, "statusKey", f"{self.table.owner}#{JobStatus(status).value}"

    def _shard_query(self, listing: _Listing, shard: int, position: Any, limit: int) -> dict[str, Any]:
        """The Query of one shard of a listing, newest first, after ``position`` when there is one.

        The filter's created-time range is part of the key condition (the index's sort key), its id
        prefix a filter on the keys the index holds: neither reads a job item.
        """
        index, key_name, where = listing.index, listing.key_name, listing.where
        key_value = f"{listing.scope}#{shard}"
        condition = "#key = :key"
        names = {"#key": key_name}
        values: dict[str, Any] = {":key": key_value}
        if where.created_from is not None or where.created_to is not None:
            names["#created"] = "createdAt"
            low = 0 if where.created_from is None else where.created_from
            high = MAX_TIME_MS if where.created_to is None else where.created_to
            condition += " AND #created BETWEEN :createdFrom AND :createdTo"
            values |= {":createdFrom": low, ":createdTo": high}
        kwargs: dict[str, Any] = {
            "TableName": self.table.name,
            "IndexName": index,
            "KeyConditionExpression": condition,
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if where.id_prefix is not None:
            kwargs["FilterExpression"] = "begins_with(#pk, :idPrefix)"
            names["#pk"] = "pk"
            values[":idPrefix"] = self.table.codec.pk(where.id_prefix)
        kwargs["ExpressionAttributeNames"] = names
        kwargs["ExpressionAttributeValues"] = to_item(values)
        if position is not None:
            created_at, job_id = position
            kwargs["ExclusiveStartKey"] = {
                key_name: {"S": key_value},
                "createdAt": {"N": created_at},
                "pk": {"S": self.table.codec.pk(job_id)},
                "sk": {"S": schema.JOB_SK},
            }
        return kwargs

    def _summaries(self, keys: list[Item], status: JobStatus | None) -> list[JobSummary]:
        """The summaries of the job items the index ``keys`` name (expired ones left out, unreadable ones marked)."""
        mine = f"JOB#{self.table.owner}#"
        partition_keys = []
        for key in keys:
            pk = key.get("pk", {}).get("S")
            if isinstance(pk, str) and pk.startswith(mine):
                partition_keys.append(key["pk"])
            else:  # an index entry that is not this owner's: never follow it
                logger.warning("Left a foreign index entry out of a listing", extra={"key": location(key)})
        now = self.table.clock()
        summaries = []
        for item in self.summary_items(partition_keys):
            try:
                if self.table.expired(item, now):
                    continue
                summary = self.table.codec.decode_summary(item, status=status)
            except CorruptJobError as exc:
                summary = self.table.codec.corrupt_summary(item, exc, status=status)
            if summary.corrupt:
                pk = item.get("pk", {}).get("S")
                logger.warning("Listed an unreadable job %s: %s", pk, summary.error, extra={"key": pk})
            elif status is not None and summary.status != status:
                continue  # its status changed after the index was read
            summaries.append(summary)
        return summaries

    def summary_items(self, partition_keys: list[Any]) -> list[Item]:
        """The job items of ``partition_keys`` (summary fields only), in the same order; missing ones left out."""
        found: dict[str, Item] = {}
        projection = Expression().projection_kwargs(*schema.SUMMARY_ATTRIBUTES)
        for start in range(0, len(partition_keys), BATCH_GET_LIMIT):
            keys = [{"pk": pk, "sk": {"S": schema.JOB_SK}} for pk in partition_keys[start : start + BATCH_GET_LIMIT]]
            request: dict[str, Any] = {self.table.name: {"Keys": keys, "ConsistentRead": True, **projection}}
            for _ in range(BATCH_ATTEMPTS):
                response = self.table.call(self.table.client.batch_get_item, RequestItems=request)
                for item in response.get("Responses", {}).get(self.table.name, []):
                    found[str(item["pk"].get("S"))] = item
                request = dict(response.get("UnprocessedKeys") or {})
                if not request:
                    break
            if request:
                raise StorageError("DynamoDB left part of a listing unread; try again", retryable=True)
        return [found[str(pk.get("S"))] for pk in partition_keys if str(pk.get("S")) in found]

    def stalled_jobs(self, *, idle_seconds: float, limit: int = 100) -> list[StalledJob]:
        """Running jobs of every owner with no live claim and no write for ``idle_seconds``.

        A job item that cannot be read is skipped and logged with its key; the sweep goes on.
        """
        now = self.table.clock()
        cutoff = now - int(idle_seconds * 1000)
        found: list[StalledJob] = []
        for shard in schema.sweep_keys():
            kwargs: dict[str, Any] = {
                "TableName": self.table.name,
                "IndexName": schema.STALLED_INDEX,
                "KeyConditionExpression": "sweepKey = :shard",
                "ExpressionAttributeValues": to_item({":shard": shard}),
            }
            while len(found) < limit:
                page = self.table.call(self.table.client.query, **kwargs)
                for item in self.summary_items([key["pk"] for key in page.get("Items", [])]):
                    try:
                        stalled = self._stalled(item, now, cutoff)
                    except (CorruptJobError, *UNREADABLE) as exc:
                        pk = item.get("pk", {}).get("S")
                        logger.warning("The sweep skipped an unreadable job %s: %s", pk, exc, extra={"key": pk})
                        continue
                    if stalled is not None:
                        found.append(stalled)
                if not page.get("LastEvaluatedKey"):
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return found[:limit]

    def _stalled(self, item: Item, now: int, cutoff: int) -> StalledJob | None:
        """The stalled job an item holds, or None when it is not stalled (not running, claimed, waiting, recent)."""
        values = from_item(item)
        if values.get("status") != JobStatus.RUNNING.value or self.table.expired(item, now):
            return None
        if not recovery.is_stalled(
            str(values["status"]),
            updated_at=int(values["updatedAt"]),
            lease_expires_at=int(values.get("leaseExpiresAt", 0)),
            not_before=int(values.get("notBefore", 0)),
            now_ms=now,
            cutoff_ms=cutoff,
        ):
            return None
        _, owner, job_id = str(values["pk"]).split("#", 2)
        next_phase = values.get("nextPhase")
        return StalledJob(
            owner,
            job_id,
            str(values["pipeline"]),
            next_phase if isinstance(next_phase, str) else None,
            int(values["updatedAt"]),
            int(values.get("sequence", 0)),
        )
