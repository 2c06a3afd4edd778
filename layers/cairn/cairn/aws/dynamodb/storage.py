"""DynamoDB storage: every state change is one conditional write on the job's item.

A claim, a save, a commit, a pause and a cancel are each one conditional
``UpdateItem`` that sets only what changes and returns the item; a start is one
conditional ``PutItem``. What a write adds to the job's history (log entries,
a phase record) is one plain ``PutItem`` made just before it, linked from the
job item only if the job write lands. Every write advances ``sequence``;
a claim is conditioned on the sequence its message carries, the claim holder's
writes on its claim (``leaseOwner`` and ``claimSequence``), a start on the
sequence it read. A condition failure is read from the returned old item: the
request's own write token means it had landed (a lost response); otherwise the
domain outcome follows. It never escapes as a ``ClientError``.

:class:`DynamoDBStorage` implements the port by composing the parts, each over one shared
:class:`~cairn.aws.dynamodb.table.Table` (client, table name, owner, item codec, clock): the jobs
and their transitions (:mod:`.jobs`, :mod:`.job_controls`, :mod:`.job_item`), their history
(:mod:`.history`; read a page at a time by :mod:`.history_reads`), the listings and the sweep
(:mod:`.listings`), the maps (:mod:`.map_items`) and the lessons (:mod:`.lessons`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...core.bulk_port import BulkOperations
from ...core.clock import Clock, system_clock_ms
from ...core.errors import ConfigurationError
from ...core.failure_groups import FailedJobs
from ...core.history_pages import HISTORY_PAGE, LOG_PAGE, VIEW_HISTORY, HistoryPage, LogPage, RecentJob
from ...core.ids import validate_owner
from ...core.models import (
    Checkpoint,
    HistoryItem,
    Job,
    JobCounts,
    JobPage,
    JobStatus,
    Lesson,
    LogEntry,
    MapItem,
    MapMark,
    MapRecord,
)
from ...core.settings import Settings
from ...core.storage_port import ListingFilter, ResultLink, Route, StateLink, Storage
from ...core.transitions import Claim, Commit, Fence, Save, SignalDelivery, StartJob, WaitExpiry
from ..payloads import PayloadCodec
from .codec import ItemCodec
from .history import History
from .history_reads import HistoryReads
from .job_controls import JobControls
from .job_item import JobItem
from .jobs import Jobs
from .lessons import Lessons
from .map_items import MapItems
from .owner_shares import DynamoDBOwnerShares
from .result_links import result_link
from .start_rates import StartCount, give_back, take_start
from .table import Table

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

    from ..listing import JobFilter
    from .listings import Listings
    from .stalled import StalledJob
    from .status_counts import StatusCounts


class DynamoDBStorage(Storage, DynamoDBOwnerShares):
    """Jobs of one ``owner`` in one DynamoDB table (see :mod:`cairn.aws.dynamodb.schema`).

    Clients are injected or built lazily once per process. Table and bucket
    default to the settings (``CAIRN_TABLE_NAME``, ``CAIRN_STATE_BUCKET``).
    """

    def __init__(
        self,
        table_name: str | None = None,
        *,
        owner: str = "default",
        client: DynamoDBClient | None = None,
        bucket: str | None = None,
        s3_client: S3Client | None = None,
        inline_limit: int | None = None,
        clock: Clock | None = None,
        settings: Settings | None = None,
    ) -> None:
        config = settings or Settings.from_env()
        name = table_name or config.table_name
        if not name:
            raise ConfigurationError("DynamoDBStorage needs a table name (argument or CAIRN_TABLE_NAME)")
        payloads = PayloadCodec(
            inline_limit=inline_limit or config.inline_state_limit,
            bucket=bucket or config.state_bucket,
            s3_client=s3_client,
            offload_from=config.offload_state_from,
        )
        table = Table(name, owner=validate_owner(owner), client=client, payloads=payloads, clock=system_clock_ms)
        self._assemble(table)
        self.counts_maintained = config.status_counts == "maintained"
        """Whether :meth:`count_jobs` reads the counts the table's stream keeps (``CAIRN_STATUS_COUNTS``)."""
        super().__init__(clock=clock)

    def _assemble(self, table: Table) -> None:
        """Build the parts over ``table``."""
        self._table = table
        self.table_name: str = table.name
        self.owner: str = table.owner
        self.payloads: PayloadCodec = table.payloads
        self.codec: ItemCodec = table.codec
        history = History(table)
        job_item = JobItem(table, history)
        self._jobs = Jobs(table, job_item, history)
        self._controls = JobControls(table, job_item)
        self._history = history
        self._reads = HistoryReads(table, job_item)
        self._listing_reads: Listings | None = None
        self._maps = MapItems(table)
        self._lessons = Lessons(table)

    def for_owner(self, owner: str) -> DynamoDBStorage:
        """The same table and clients, seen as another owner."""
        other = DynamoDBStorage.__new__(DynamoDBStorage)
        other._assemble(self._table.for_owner(validate_owner(owner)))
        other.owner_concurrency, other.share_wait_seconds = self.owner_concurrency, self.share_wait_seconds
        other.counts_maintained = self.counts_maintained
        return other

    def status_counts(self) -> StatusCounts:
        """What applies the table's stream records to each owner's counts (:mod:`.status_counts`)."""
        from .status_counts import StatusCounts

        return StatusCounts(self._table)

    def bulk_operations(self) -> BulkOperations:
        """This owner's bulk operations, in the same table (:mod:`.bulk_ops`)."""
        from .bulk_ops import DynamoDBBulkOperations

        return DynamoDBBulkOperations(self._table)

    @property
    def clock(self) -> Clock:
        """The clock every part reads (settable, as on every store)."""
        return self._table.clock

    @clock.setter
    def clock(self, clock: Clock) -> None:
        self._table.clock = clock

    @property
    def client(self) -> DynamoDBClient:
        """The DynamoDB client (the process-wide default unless one was injected)."""
        return self._table.client

    # -- jobs --------------------------------------------------------------------------------

    def get_job(self, job_id: str) -> Job | None:
        """The job with its input, log and phase records (one consistent query), or None if absent or expired."""
        return self._jobs.get_job(job_id)

    def get_current_job(self, job_id: str, *, payloads: bool = True) -> Job | None:
        """The job without its log and phase records: the job item, then its state's and input's items (one
        consistent BatchGetItem; with ``payloads`` False, none: a state the job item keeps itself is still
        there). The same reads after ten writes or a thousand."""
        return self._reads.current(job_id, payloads=payloads)

    def get_job_view(self, job_id: str, *, history: int = VIEW_HISTORY) -> RecentJob | None:
        """The job with its newest ``history`` writes' history: the same few reads after ten writes or a thousand.

        See :meth:`.history_reads.HistoryReads.view`.
        """
        return self._reads.view(job_id, history)

    def history_page(self, job_id: str, cursor: str | None = None, limit: int = HISTORY_PAGE) -> HistoryPage | None:
        """What up to ``limit`` writes added, newest first: the job item and about ``limit`` history items read."""
        return self._reads.page(job_id, cursor, limit)

    def log_page(self, job_id: str, cursor: str | None = None, limit: int = LOG_PAGE) -> LogPage | None:
        """Up to ``limit`` log entries, oldest first: the job item and the history items holding them read."""
        return self._reads.log(job_id, cursor, limit)

    def get_route(self, job_id: str) -> Route | None:
        """The job's pipeline, status, next phase and sequence: one small consistent read of the job item."""
        return self._jobs.get_route(job_id)

    def start_job(self, request: StartJob) -> Job:
        """One conditional put of the job item, after its history and input items."""
        return self._jobs.start_job(request)

    def put_job(self, job: Job, history: Sequence[HistoryItem], *, replace: bool = False) -> Job:
        """The job's history and input items, then one conditional put of its item (:mod:`.loading`)."""
        from .loading import put_job

        put_job(self._table, job, history, replace=replace)
        stored = self.get_job(job.job_id)
        assert stored is not None
        return stored

    def claim(self, request: Claim) -> Job | None:
        """One conditional update: the claim, or None when the job is not claimable."""
        return self._jobs.claim(request)

    def save(self, job_id: str, fence: Fence, request: Save) -> Job:
        """One conditional update by the claim holder: the mid-phase checkpoint."""
        return self._jobs.save(job_id, fence, request)

    def commit(self, job_id: str, fence: Fence, request: Commit) -> Job:
        """One conditional update by the claim holder: the phase's outcome, the claim released."""
        return self._jobs.commit(job_id, fence, request)

    def pause(self, job_id: str, *, by: str | None = None) -> Job:
        """One conditional update: a running job paused."""
        return self._controls.pause(job_id, by=by)

    def cancel(self, job_id: str, *, by: str | None = None) -> Job:
        """One conditional update: the job cancelled, its claim fenced."""
        return self._controls.cancel(job_id, by=by)

    def deliver_signal(self, job_id: str, request: SignalDelivery) -> Job:
        """One conditional update: the waiting job runs on with the signal."""
        return self._controls.deliver_signal(job_id, request)

    def expire_wait(self, job_id: str, request: WaitExpiry) -> Job | None:
        """One conditional update: a wait past its deadline ends."""
        return self._controls.expire_wait(job_id, request)

    def entered(self, job_id: str, phase: str, *, before: int | None = None) -> Checkpoint | None:
        """The entry checkpoint of ``phase`` kept in the job's history: the newest linked item with one."""
        return self._history.entered(job_id, phase, before=before)

    def entered_link(
        self, job_id: str, phase: str, *, before: int | None = None, expires_in: int = 300
    ) -> StateLink | None:
        """A presigned GET of the S3 object holding that entry's state; None when the state is in the table."""
        return self._history.entered_link(job_id, phase, before=before, expires_in=expires_in)

    def checkpoint_link(self, job_id: str, *, expires_in: int = 300) -> StateLink | None:
        """A presigned GET of the S3 object holding the checkpoint's state; None when the state is in the table."""
        return self._history.checkpoint_link(job_id, expires_in=expires_in)

    def result_link(self, job_id: str, *, expires_in: int = 300) -> ResultLink | None:
        """A presigned GET of the S3 object holding the job's result; None when the result is in the table."""
        return result_link(self._table, job_id, expires_in=expires_in)

    # -- listings ----------------------------------------------------------------------------

    @property
    def _listings(self) -> Listings:
        """The listing reads, imported on first use: a phase function never lists (a shorter cold start)."""
        if self._listing_reads is None:
            from .listings import Listings

            self._listing_reads = Listings(self._table)
        return self._listing_reads

    def list_jobs(self, *, status: JobStatus | None = None) -> list[Job]:
        """Every live job of this owner, newest first (reads each job; use ``list_page`` for listings)."""
        return self._listings.list_jobs(self.get_job, status=status)

    def list_page(
        self,
        *,
        status: JobStatus | None = None,
        cursor: str | None = None,
        limit: int = 50,
        where: JobFilter | None = None,
    ) -> JobPage:
        """One page of this owner's live jobs, newest first, filtered on the server by ``where``.

        See :meth:`.listings.Listings.list_page`.
        """
        return self._listings.list_page(status=status, cursor=cursor, limit=limit, where=where)

    def cost_page(self, *, where: ListingFilter | None = None, cursor: str | None = None, limit: int = 50) -> JobPage:
        """One page of this owner's live jobs, dearest first, across the whole filter ``where`` (a
        :class:`~cairn.aws.listing.JobFilter`). See :meth:`.cost_listings.CostListings.cost_page`."""
        from ..listing import JobFilter
        from .cost_listings import CostListings

        if where is not None and not isinstance(where, JobFilter):
            raise TypeError("where must be a JobFilter")
        return CostListings(self._table).cost_page(cursor=cursor, limit=limit, where=where)

    def job_usages(self, job_ids: Sequence[str]) -> dict[str, dict[str, float]]:
        """The usage counters of each of ``job_ids`` that is stored: one eventually consistent batch read of their
        job items' ``usage`` (half a read unit a job whose item is up to 4 KB). See :mod:`.summaries`."""
        from .summaries import job_usages

        return job_usages(self._table, job_ids)

    def count_start(self, limit: int) -> StartCount:
        """Count one start of this owner against ``limit`` starts a minute (:mod:`.start_rates`); refused (nothing
        counted) with the seconds until the next minute, when it may start again."""
        return take_start(self._table, self.owner, limit, self._table.clock())

    def uncount_start(self, counted: StartCount) -> None:
        """Give back a start :meth:`count_start` counted that started nothing."""
        give_back(self._table, self.owner, counted.window)

    def failed_jobs(self, *, created_from: int, created_to: int, pipeline: str | None, limit: int) -> FailedJobs:
        """This owner's jobs in error created within the range, from the ``StatusListing`` index and their job
        items (about half a read unit a job). See :meth:`.listings.Listings.failed_jobs`."""
        return self._listings.failed_jobs(
            created_from=created_from, created_to=created_to, pipeline=pipeline, limit=limit
        )

    def count_jobs(self) -> JobCounts:
        """How many of this owner's live jobs have each status.

        With ``counts_maintained``, from the counts the table's stream keeps (:mod:`.kept_counts`), once the
        stream has made them; otherwise exact up to a bound, else a lower bound of each
        (:meth:`.listings.Listings.count_jobs`).
        """
        if self.counts_maintained:
            from .kept_counts import kept_job_counts

            kept = kept_job_counts(self._table, self._listings)
            if kept is not None:
                return kept
        return self._listings.count_jobs()

    def stalled_jobs(self, *, idle_seconds: float, limit: int = 100) -> list[StalledJob]:
        """Running jobs of every owner with no live claim and no write for ``idle_seconds`` (see :mod:`.stalled`)."""
        from .stalled import stalled_jobs  # imported on first use, as the listings are

        return stalled_jobs(self._table, idle_seconds=idle_seconds, limit=limit)

    def note_nudge(self, job_id: str, entry: LogEntry, *, sequence: int) -> bool | None:
        """A nudge's audit entry in the job's log, once per sequence (see :mod:`.nudges`)."""
        from .nudges import note_nudge

        return note_nudge(self._table, job_id, entry, sequence=sequence)

    # -- maps --------------------------------------------------------------------------------

    def get_items(self, job_id: str, fan_out: str) -> list[MapItem]:
        """The map's item records, in item order (one consistent query)."""
        return self._maps.get_items(job_id, fan_out)

    def get_item(self, job_id: str, fan_out: str, index: int) -> MapItem | None:
        """One item record: one consistent GetItem by its key."""
        return self._maps.get_item(job_id, fan_out, index)

    def write_item(
        self,
        job_id: str,
        fan_out: str,
        item: MapItem,
        *,
        expected_version: int | None,
        expires_at: int,
        finishes: bool = False,
    ) -> bool:
        """One conditional put on the version read (or on no record); False when it no longer holds."""
        return self._maps.write_item(
            job_id, fan_out, item, expected_version=expected_version, expires_at=expires_at, finishes=finishes
        )

    def create_map(self, job_id: str, record: MapRecord, *, expires_at: int) -> None:
        """One put on no record: a put sent again (a lost response) leaves the first as it is."""
        self._maps.create_map(job_id, record, expires_at=expires_at)

    def get_map(self, job_id: str, fan_out: str) -> MapRecord | None:
        """The map's record: one consistent GetItem by its key."""
        return self._maps.get_map(job_id, fan_out)

    def get_maps(self, job_id: str) -> list[MapRecord]:
        """The records of the job's maps: one consistent query of their prefix."""
        return self._maps.get_maps(job_id)

    def mark_map(self, job_id: str, fan_out: str, mark: MapMark, token: str) -> bool:
        """One conditional update: the mark set to ``token`` if the record has none (or has this one)."""
        return self._maps.mark_map(job_id, fan_out, mark, token)

    # -- lessons -----------------------------------------------------------------------------

    def remember(self, pipeline: str, lessons: Sequence[Lesson], *, expires_at: int) -> None:
        """Plain puts of the lessons (a batch for several)."""
        self._lessons.remember(pipeline, lessons, expires_at=expires_at)

    def recall(self, pipeline: str, limit: int) -> list[Lesson]:
        """The newest lessons, up to ``limit``."""
        return self._lessons.recall(pipeline, limit)
