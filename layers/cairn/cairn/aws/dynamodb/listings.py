"""Listings and counts: one owner's jobs found through the sharded ``Listing`` index.

A listing queries each of the owner's ``Listing`` shards (:mod:`cairn.aws.dynamodb.schema`), or of the
index keyed on its status or pipeline filter (``StatusListing``, ``PipelineListing``), merges their
entries newest first (:mod:`cairn.aws.dynamodb.cursors`) and shows the summary the index
projects (:mod:`cairn.aws.dynamodb.summaries`), reading a job item only where an entry cannot answer.
A count reads the same entries up to a bound. The sweep's read of every owner's stalled jobs is
:mod:`cairn.aws.dynamodb.stalled`.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from ...core.errors import CorruptJobError, InvalidInputError, StorageError
from ...core.failure_groups import FailedJobs
from ...core.models import Job, JobCounts, JobPage, JobStatus, JobSummary
from ..listing import MAX_TIME_MS, JobFilter, with_status
from . import schema
from .attributes import Item, location, to_item
from .count_entries import shard_entries
from .cursors import CURSOR_END, decode_cursor, encode_cursor, merge_newest_first, position_of
from .summaries import Verdict, corrupt_summary, summary_items, summary_of, triage
from .table import Table

logger = logging.getLogger(__name__)

#: How many times a page of a filtered listing reads the index before it returns what it found.
MAX_ROUNDS = 8

#: The most entries of one shard a count reads: below it a count is exact, at it a lower bound.
COUNT_BOUND = 1000

#: The most job items one count reads to confirm entries it cannot decide alone (beyond: counted unconfirmed).
MAX_CONFIRMED = 100


#: The most entries one round of a filtered page reads from one shard (about 40 KB: 5 read units), so that a
#: page of a narrow filter reads at most ``MAX_ROUNDS`` x ``LIST_SHARDS`` x this before it returns what it found.
MAX_SHARD_READ = 250

#: A page filtered by exception type or failed phase reads each entry's job item (half a read unit): it reads at
#: most this many rounds of at most this many entries a shard (400 items, 200 read units), then returns what it
#: found with a cursor.
MAX_FAILURE_ROUNDS = 2
MAX_FAILURE_SHARE = 50

#: The most pages of 100 a read of failed jobs takes (:meth:`Listings.failed_jobs`) before it says "at least".
MAX_FAILED_PAGES = 20

#: Seconds a process lists without a filter index it found missing or backfilling before it tries it again.
INDEX_RECHECK_SECONDS = 300.0

#: Filter indexes found missing or backfilling, by table and index name: until when they are not tried.
_unready_indexes: dict[tuple[str, str], float] = {}


class _IndexUnready(Exception):
    """A filter's index is not there yet (a stack deployed before it, or one backfilling it)."""


def _unready(exc: StorageError, index: str) -> bool:
    """Whether a failed query failed because its index does not exist or is still being built."""
    cause = exc.__cause__
    if not isinstance(cause, ClientError):
        return False
    error = cause.response.get("Error", {})
    code = error.get("Code")  # DynamoDB says ValidationException (missing or backfilling); moto, not found
    return code in {"ValidationException", "ResourceNotFoundException"} and index in str(error.get("Message", ""))


def shard_share(wanted: int, *, matching: float = 1.0) -> int:
    """How many entries a round reads from each shard to find ``wanted`` more: its share, with a margin.

    The owner's jobs are spread evenly over the shards, so a page of 50 takes about 12 from each; 21
    covers nearly every page at once. ``matching`` is the share of the entries read so far that a
    filter let through (a query's limit counts the entries it examines, not those it returns).
    """
    share = math.ceil(wanted * 3 / (2 * schema.LIST_SHARDS * max(matching, 1 / MAX_SHARD_READ))) + 2
    return min(share, wanted if matching >= 1 else MAX_SHARD_READ)


def _status_of(entry: Item) -> JobStatus | None:
    """The status an index entry holds (None: one that cannot be read)."""
    value = entry.get("status")
    text = value.get("S") if isinstance(value, dict) else None
    return JobStatus(text) if text in set(JobStatus) else None


@dataclass(frozen=True)
class _Listing:
    """What one listing reads: the owner's key (before the shard), the filter, and the filter's attribute the
    index it queries is keyed on (None: the ``Listing`` index, every filter on the entries)."""

    scope: str
    where: JobFilter
    keyed: str | None = None
    items: bool = False
    """Whether each summary is read from its job item (a failure filter, or a read of failed jobs)."""

    @property
    def index(self) -> str:
        """The index this listing queries."""
        return schema.LISTING_INDEX if self.keyed is None else schema.FILTER_INDEXES[self.keyed]

    @property
    def keyed_value(self) -> str:
        """The value of the filter the index is keyed on."""
        where = self.where
        return where.status.value if self.keyed == "status" and where.status else str(where.pipeline)

    @property
    def filtered(self) -> bool:
        """Whether the entries the queries return are still filtered (some read may return none)."""
        where = self.where
        return (
            (where.status is not None and self.keyed != "status")
            or (where.pipeline is not None and self.keyed != "pipeline")
            or where.id_prefix is not None
            or where.names_failure
        )


class Listings:
    """One owner's listings and counts."""

    #: The index a cursor of these listings names (a cursor of another order is refused).
    cursor_index = schema.LISTING_INDEX
    #: What a job item read for an entry that cannot answer gives (:func:`.summaries.summary_items`).
    item_attributes = schema.SUMMARY_ATTRIBUTES
    #: Whether a page reads each failed job's item for its exception type and failed phase (the Error column).
    reads_failures = True

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
        """One page of this owner's live jobs, newest first, from the ``Listing`` index's entries.

        The owner's jobs are spread over ``LIST_SHARDS`` index partitions. A page
        queries each for its share of ``limit`` entries (:func:`first_share`),
        newest first, and merges them by ``(createdAt, jobId)`` descending, always
        taking the next entry of a shard, so each shard is read in its own order;
        the cursor records, per shard, the last entry taken (a shard nothing was
        taken from stays where it was). Paging therefore returns every job once,
        newest first. A round that falls short (a shard held more of the newest
        jobs than its share) is followed by one that reads every shard for all
        that is missing.

        Each summary is the entry's (eventually consistent, as the index is):
        ``updated_at`` is the last status change, ``attempt`` and ``next_phase``
        are left out (:class:`~cairn.core.models.JobSummary`). A job item is read
        (one consistent batch) only for an entry that cannot answer
        (:func:`~cairn.aws.dynamodb.summaries.triage`): a job not written since
        the index kept summaries, or a running job whose status-time expiry has
        passed. A job whose expiry has passed is left out, whether or not
        DynamoDB has deleted it yet. An entry or item that cannot be read is
        listed as a summary with ``corrupt`` set and ``error`` saying why (and
        logged with its key); the rest of the page is unaffected. A cursor this
        listing did not return (another owner's, another filter's, altered) is an
        InvalidInputError.

        ``where`` filters on the server, across pages: its created-time range
        bounds the index's sort key; its status, pipeline and id prefix filter
        the entries (a job item read is checked again). A page reads on until it
        holds ``limit`` matches, the listing ends, or it has read ``MAX_ROUNDS``
        times (a page of a narrow filter may then hold fewer, even none, and
        still have a cursor); the cursor is bound to the filter.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInputError(f"limit must be between 1 and 1000, got {limit!r}")
        return self._filtered_page(with_status(where, status), cursor, limit)

    def _filtered_page(self, where: JobFilter, cursor: str | None, limit: int, *, items: bool = False) -> JobPage:
        """A page of ``list_page``; with ``items``, each summary read from its job item."""
        scope = self.table.owner
        bound = scope if where.is_empty else f"{scope}?{where.fingerprint()}"
        positions = (
            decode_cursor(cursor, schema.LISTING_INDEX, bound, self.table.owner)
            if cursor is not None
            else [None] * schema.LIST_SHARDS
        )
        listing = _Listing(scope, where, self._keyed(where), items=items)
        try:
            return self._page(listing, positions, bound, limit)
        except _IndexUnready:
            return self._page(_Listing(scope, where, items=items), positions, bound, limit)

    def failed_jobs(
        self, *, created_from: int | None, created_to: int | None, pipeline: str | None, limit: int
    ) -> FailedJobs:
        """Up to ``limit`` of this owner's jobs in error created in the range (of ``pipeline``, if given), newest
        first, each summary read from its job item (for its exception type and failed phase, which no index
        holds); ``exact`` False when more may match.

        Reads the ``StatusListing`` entries of the range (about 0.05 read unit a job) and the job items in
        eventually consistent batches of 100 (half a read unit a job item under 4 KB): about half a read unit a
        job examined.
        """
        where = JobFilter(status=JobStatus.ERROR, pipeline=pipeline, created_from=created_from, created_to=created_to)
        summaries: list[JobSummary] = []
        cursor: str | None = None
        for _ in range(MAX_FAILED_PAGES):
            page = self._filtered_page(where, cursor, min(100, limit - len(summaries)), items=True)
            summaries.extend(job for job in page.jobs if not job.corrupt)  # the list shows those as unreadable
            cursor = page.cursor
            if cursor is None:
                return FailedJobs(summaries, exact=True)
            if len(summaries) >= limit:
                break
        return FailedJobs(summaries[:limit], exact=False)

    def _keyed(self, where: JobFilter) -> str | None:
        """The filter attribute whose index a listing queries: the status's, else the pipeline's (None: neither
        filter, or its index found missing a short while ago)."""
        for key, value in (("status", where.status), ("pipeline", where.pipeline)):
            if value is None:
                continue
            until = _unready_indexes.get((self.table.name, schema.FILTER_INDEXES[key]))
            if until is None or until <= time.monotonic():
                return key
        return None

    def _page(self, listing: _Listing, positions: list[Any], bound: str, limit: int) -> JobPage:
        """One page of ``listing`` from ``positions``: rounds of shard queries until it holds ``limit`` matches,
        the listing ends, or ``MAX_ROUNDS`` rounds have read. (A cursor's positions hold for every index: a
        position is an entry's creation time and job id within its shard.)"""
        summaries: list[JobSummary] = []
        examined = passed = 0
        by_failure = listing.where.names_failure  # each entry's item read: fewer, smaller rounds
        for round_number in range(MAX_FAILURE_ROUNDS if by_failure else MAX_ROUNDS):
            wanted = limit - len(summaries)
            if round_number == 0:
                share = shard_share(wanted)
            elif not listing.filtered:  # every shard read for all that is missing: this round fills the page
                share = wanted
            else:
                share = shard_share(wanted, matching=passed / max(examined, 1))
            if by_failure:
                share = min(share, MAX_FAILURE_SHARE)
            found, positions, counts = self._round(listing, positions, wanted, share)
            summaries.extend(found)
            examined, passed = examined + counts[0], passed + counts[1]
            if len(summaries) == limit or all(position == CURSOR_END for position in positions):
                break
        done = all(position == CURSOR_END for position in positions)
        return JobPage(jobs=summaries, cursor=None if done else encode_cursor(self.cursor_index, bound, positions))

    def _round(
        self, listing: _Listing, positions: list[Any], limit: int, share: int
    ) -> tuple[list[JobSummary], list[Any], tuple[int, int]]:
        """Up to ``limit`` more entries, ``share`` read from each shard at ``positions``: the matches, where each
        shard is then, and how many entries the queries examined and let through."""
        fetched: list[list[Item]] = []
        frontiers: list[Item | None] = []
        examined = 0
        for shard, position in enumerate(positions):
            if position == CURSOR_END:
                fetched.append([])
                frontiers.append(None)
                continue
            page = self._query(listing, self._shard_query(listing, shard, position, share))
            fetched.append(list(page.get("Items", [])))
            frontiers.append(page.get("LastEvaluatedKey") or None)
            examined += int(page.get("ScannedCount", len(fetched[-1])))
        taken = self._merge(fetched, frontiers, limit)
        where = listing.where
        listed = self._summaries([item for _, item in taken], where.status, read=listing.items or where.names_failure)
        summaries = [summary for summary in listed if summary.corrupt or where.matches(summary)]
        next_positions: list[Any] = []
        for shard, position in enumerate(positions):
            mine = [item for taken_shard, item in taken if taken_shard == shard]
            frontier = frontiers[shard]
            if len(mine) < len(fetched[shard]):  # the rest is read again by the next page
                next_positions.append(self._position(mine[-1]) if mine else position)
            elif frontier is None:
                next_positions.append(CURSOR_END)
            else:  # every entry it returned was taken: on from the last one it examined (a filter may skip some)
                next_positions.append(self._position(frontier))
        return summaries, next_positions, (examined, sum(len(entries) for entries in fetched))

    def _merge(self, fetched: list[list[Item]], frontiers: list[Item | None], limit: int) -> list[tuple[int, Item]]:
        """Up to ``limit`` entries of the shards' lists in the listing's order (newest first)."""
        return merge_newest_first(fetched, frontiers, limit)

    def _position(self, entry: Item) -> list[str]:
        """A shard's position in a cursor after ``entry``."""
        return position_of(entry)

    def _query(self, listing: _Listing, kwargs: dict[str, Any]) -> Any:
        """One shard query; a filter index found missing or backfilling is noted, and the page read again
        without it (:class:`_IndexUnready`)."""
        try:
            return self.table.call(self.table.client.query, **kwargs)
        except StorageError as exc:
            if listing.keyed is None or not _unready(exc, listing.index):
                raise
            logger.warning("Listing without the %s index, which is missing or being built: %s", listing.index, exc)
            _unready_indexes[(self.table.name, listing.index)] = time.monotonic() + INDEX_RECHECK_SECONDS
            raise _IndexUnready from exc

    def _shard_query(self, listing: _Listing, shard: int, position: Any, limit: int) -> dict[str, Any]:
        """The Query of one shard of a listing, newest first, after ``position`` when there is one.

        The index's key holds the owner's shard and, in a filter's index, the filter's value; the
        created-time range is part of the key condition (the sort key); the other filters filter the
        entries the index holds: none reads a job item.
        """
        where = listing.where
        key_value = schema.owner_key(listing.scope, shard)
        condition = "#key = :key"
        names = {"#key": "owner"}
        values: dict[str, Any] = {":key": key_value}
        if listing.keyed is not None:
            condition += " AND #keyed = :keyed"
            names["#keyed"] = listing.keyed
            values[":keyed"] = listing.keyed_value
        if where.created_from is not None or where.created_to is not None:
            names["#created"] = "createdAt"
            low = 0 if where.created_from is None else where.created_from
            high = MAX_TIME_MS if where.created_to is None else where.created_to
            condition += " AND #created BETWEEN :createdFrom AND :createdTo"
            values |= {":createdFrom": low, ":createdTo": high}
        kwargs: dict[str, Any] = {
            "TableName": self.table.name,
            "IndexName": listing.index,
            "KeyConditionExpression": condition,
            "ScanIndexForward": False,
            "Limit": limit,
        }
        filters = []
        if where.status is not None and listing.keyed != "status":
            filters.append("#status = :status")
            names["#status"] = "status"
            values[":status"] = where.status.value
        if where.pipeline is not None and listing.keyed != "pipeline":
            filters.append("#pipeline = :pipeline")
            names["#pipeline"] = "pipeline"
            values[":pipeline"] = where.pipeline
        if where.id_prefix is not None:
            filters.append("begins_with(#pk, :idPrefix)")
            names["#pk"] = "pk"
            values[":idPrefix"] = self.table.codec.pk(where.id_prefix)
        if filters:
            kwargs["FilterExpression"] = " AND ".join(filters)
        kwargs["ExpressionAttributeNames"] = names
        kwargs["ExpressionAttributeValues"] = to_item(values)
        if position is not None:
            created_at, job_id = position
            kwargs["ExclusiveStartKey"] = {
                "owner": {"S": key_value},
                "createdAt": {"N": created_at},
                "pk": {"S": self.table.codec.pk(job_id)},
                "sk": {"S": schema.JOB_SK},
            }
            if listing.keyed is not None:
                kwargs["ExclusiveStartKey"][listing.keyed] = {"S": listing.keyed_value}
        return kwargs

    def _summaries(self, entries: list[Item], status: JobStatus | None, *, read: bool = False) -> list[JobSummary]:
        """The summaries of index ``entries``, in order: from the entries, or from the job items where they cannot
        answer (expired jobs left out, unreadable ones marked).

        A failed job's exception type and failed phase are on its item only (no index holds them): the item of
        each entry in ``error`` is read too, eventually consistent (half a read unit under 4 KB); with ``read``,
        the item of every entry (a filter on them)."""
        now = self.table.clock()
        decided: list[JobSummary | str] = []  # a summary, or the key of the job item that answers for it
        unread: list[Any] = []
        failed: list[Any] = []
        for entry in self._owned(entries):
            verdict = triage(entry, now)
            if verdict is Verdict.LIST and (read or (self.reads_failures and _status_of(entry) is JobStatus.ERROR)):
                decided.append(str(entry["pk"].get("S")))
                failed.append(entry["pk"])
            elif verdict is Verdict.READ:
                decided.append(str(entry["pk"].get("S")))
                unread.append(entry["pk"])
            elif verdict is Verdict.LIST:
                decided.append(summary_of(entry, status=status))
        attributes = self.item_attributes
        items = {str(item["pk"].get("S")): item for item in summary_items(self.table, unread, attributes)}
        failed_items = summary_items(self.table, failed, attributes, consistent=False)
        items |= {str(item["pk"].get("S")): item for item in failed_items}
        summaries = []
        for found in decided:
            if isinstance(found, str):
                item = items.get(found)
                summary = self._item_summary(item, now, status) if item is not None else None
                if summary is None:
                    continue  # gone, or expired
            else:
                summary = found
            if summary.corrupt:
                pk = f"JOB#{self.table.owner}#{summary.job_id}"
                logger.warning("Listed an unreadable job %s: %s", pk, summary.error, extra={"key": pk})
            summaries.append(summary)
        return summaries

    def _owned(self, entries: list[Item]) -> list[Item]:
        """The index entries that are this owner's jobs (another's is logged and never followed)."""
        mine = f"JOB#{self.table.owner}#"
        owned = []
        for entry in entries:
            pk = entry.get("pk", {}).get("S")
            if isinstance(pk, str) and pk.startswith(mine) and len(pk) > len(mine):
                owned.append(entry)
            else:
                logger.warning("Left a foreign index entry out of a listing", extra={"key": location(entry)})
        return owned

    def _item_summary(self, item: Item, now: int, status: JobStatus | None) -> JobSummary | None:
        """The summary of a job item read for a listing (None: expired); an unreadable one marked corrupt."""
        try:
            if self.table.expired(item, now):
                return None
        except CorruptJobError as exc:
            return corrupt_summary(item, exc, status=status)
        return summary_of(item, status=status)

    def count_jobs(self, *, bound: int | None = None, created_before: int | None = None) -> JobCounts:
        """How many of this owner's live jobs have each status: one read of each shard's entries, up to ``bound``.

        Exact when every shard holds fewer than ``bound`` entries (``COUNT_BOUND`` by default) and every
        entry can be decided (``exact``); otherwise a lower bound of each count: a shard's newest ``bound``
        entries are counted, and entries the index cannot decide (:func:`~.summaries.triage`) are confirmed
        from their job items, up to ``MAX_CONFIRMED`` of them, the rest counted as their entry says. One
        pass counts every status (a ``Select=COUNT`` query per status would read the entries once per
        status); a shard's 1,000 entries are 130 to 200 KB: 16 to 25 read units. With ``created_before``, only
        the jobs created before that time (what the maintained counts leave out, :mod:`.status_counts`).
        """
        bound = COUNT_BOUND if bound is None else bound
        now = self.table.clock()
        statuses: Counter[JobStatus | None] = Counter()  # None: a status that cannot be read
        exact = True
        doubtful: list[Item] = []
        for shard in range(schema.LIST_SHARDS):
            entries, complete = shard_entries(self.table, shard, bound, created_before=created_before)
            exact = exact and complete
            for entry in self._owned(entries):
                verdict = triage(entry, now)
                if verdict is Verdict.READ:
                    doubtful.append(entry)
                elif verdict is Verdict.LIST:
                    statuses[_status_of(entry)] += 1
        for item in summary_items(self.table, [entry["pk"] for entry in doubtful[:MAX_CONFIRMED]]):
            summary = self._item_summary(item, now, None)
            if summary is not None:
                statuses[None if summary.corrupt else summary.status] += 1
        for entry in doubtful[MAX_CONFIRMED:]:  # counted as the entry says: the count is no longer exact
            exact = False
            statuses[_status_of(entry)] += 1
        unreadable = statuses.pop(None, 0)
        return JobCounts.of({status: n for status, n in statuses.items() if status}, exact=exact, unreadable=unreadable)
