"""The storage port: one conditional transition per state change.

An adapter implements reads and the transitions of :mod:`cairn.core.transitions`
(start, claim, save, commit, pause, cancel), each as a single atomic,
conditional write of the job, preceded by at most one write of the history it
adds. A request sent again after a lost response (the same request object,
hence the same write token) is recognised as landed, never applied twice or
refused. The engine talks to storage only through this port.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from . import history_pages
from .bulk_port import BulkOperations
from .clock import Clock, system_clock_ms
from .errors import ConfigurationError
from .failure_groups import FailedJobs, failed_summary
from .history_pages import HISTORY_PAGE, LOG_PAGE, VIEW_HISTORY, HistoryPage, LogPage, RecentJob
from .models import (
    Checkpoint,
    FanOut,
    HistoryItem,
    Job,
    JobCounts,
    JobPage,
    JobStatus,
    JobSummary,
    Lesson,
    LogEntry,
    MapItem,
    MapMark,
    MapRecord,
)
from .share_port import OwnerShares
from .storage_compat import adapt_earlier_methods
from .transitions import Claim, Commit, Fence, Save, SignalDelivery, StartJob, WaitExpiry


class ListingFilter(Protocol):
    """What a listing is filtered by (:class:`cairn.aws.listing.JobFilter`): which summaries pass, and a digest a
    cursor is bound to."""

    def matches(self, summary: JobSummary) -> bool:
        """Whether a listed job passes the filter."""
        ...

    def fingerprint(self) -> str:
        """A short digest of the filter."""
        ...


@dataclass(frozen=True)
class Route:
    """A job's routing fields: enough to decide which phase runs next, and for which message."""

    pipeline: str
    status: JobStatus
    next_phase: str | None
    sequence: int
    fan_out: FanOut | None = None
    """The map whose items run before ``next_phase`` (None: no map)."""


@dataclass(frozen=True)
class ObjectLink:
    """A short-lived link to a value stored as an object of its own: a plain GET of ``url`` reads it.

    ``size`` is the object's bytes; ``encoding`` says how they hold the value's JSON (``"gzip"`` or ``"json"``).
    """

    url: str
    size: int
    encoding: str
    expires_at: int
    """Unix ms: the link stops working then."""


@dataclass(frozen=True)
class StateLink(ObjectLink):
    """A link to a kept state (:class:`ObjectLink`), with the entry checkpoint it belongs to."""

    checkpoint: Checkpoint
    """The entry checkpoint the state belongs to (its ``state`` left out: None)."""
    sequence: int | None = None
    """The job's ``sequence`` when a link to its checkpoint's state was made (None: not known, as for a history
    entry's): two checkpoints written in the same millisecond are told apart by it."""


@dataclass(frozen=True)
class ResultLink(ObjectLink):
    """A link to a job's result (:class:`ObjectLink`), with the write of the job it was read at."""

    sequence: int
    """The job's ``sequence`` when the link was made: the result belongs to that write of the job."""


class Storage(ABC):
    """Where jobs and their checkpoints live. Every method is one atomic step.

    The job a transition returns carries every field of the job; its ``log``
    and ``phases`` may hold only what that write added (read ``get_job`` for
    the whole history).
    """

    def __init__(self, *, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or system_clock_ms

    def _lacks(self, capability: str) -> ConfigurationError:
        """The error a capability this store does not implement answers with (maps, signals and waits, lessons)."""
        return ConfigurationError(
            f"{type(self).__name__} keeps no {capability}: a pipeline that uses them needs a store that implements "
            "them (the adapters guide lists each capability and its methods)"
        )

    def __init_subclass__(cls, **kwargs: object) -> None:
        """A store written for an earlier release, whose methods lack a keyword added since, is adapted
        (:mod:`cairn.core.storage_compat`)."""
        super().__init_subclass__(**kwargs)
        adapt_earlier_methods(cls)

    @abstractmethod
    def get_job(self, job_id: str) -> Job | None:
        """The job, or None when it is unknown or expired."""

    def get_route(self, job_id: str) -> Route | None:
        """The job's status, next phase and sequence (None when unknown or expired); adapters read less."""
        job = self.get_job(job_id)
        if job is None:
            return None
        next_phase = job.checkpoint.next_phase if job.checkpoint else None
        return Route(job.pipeline, job.status, next_phase, job.sequence, job.fan_out)

    def get_current_job(self, job_id: str, *, payloads: bool = True) -> Job | None:
        """The job as it stands, its checkpoint's state and its input included; its log and phase records may be
        left out (empty).

        What a start of a known id, a retry, a rerun and a wait's timeout read: an adapter reads the job and the
        values it names, so the cost does not grow with the job's history. With ``payloads`` False an adapter may
        leave out (None) the state and input it keeps apart from the job: what a map's item reads, one small read.
        Optional: by default the whole job (:meth:`get_job`). None when the job is unknown or expired.
        """
        return self.get_job(job_id)

    def get_job_view(self, job_id: str, *, history: int = VIEW_HISTORY) -> RecentJob | None:
        """The job with at least what its newest ``history`` writes added to its log and phase records.

        For showing a job: an adapter reads only that much (its cost does not grow with the job's
        history) and gives the cursor of the older history (``RecentJob.older``, for
        :meth:`history_page`). Here the whole job is read: its whole history, no cursor. None when the
        job is unknown or expired.
        """
        history_pages.checked_limit(history)
        job = self.get_job(job_id)
        return None if job is None else RecentJob(job)

    def history_page(self, job_id: str, cursor: str | None = None, limit: int = HISTORY_PAGE) -> HistoryPage | None:
        """What up to ``limit`` of the job's writes added to its history, newest first, from ``cursor``.

        Without a cursor from the newest write; ``HistoryPage.cursor`` (or a job view's ``older``)
        reads on. Read to the end, the pages hold every write of the job's history once, none that
        never landed: their log entries and records, oldest first, are the job's ``log`` and ``phases``.
        A cursor of another job, altered, or from before a full retry (``run``) is refused
        (InvalidInputError). None when the job is unknown or expired. Here the whole job is read.
        """
        job = self.get_job(job_id)
        return None if job is None else history_pages.history_page_of(job, cursor=cursor, limit=limit)

    def log_page(self, job_id: str, cursor: str | None = None, limit: int = LOG_PAGE) -> LogPage | None:
        """Up to ``limit`` of the job's log entries, oldest first, from ``cursor`` (from the first without one).

        ``LogPage.cursor`` reads on (None: the log ends there, for now); cursors are refused as for
        :meth:`history_page`. None when the job is unknown or expired. Here the whole job is read.
        """
        job = self.get_job(job_id)
        return None if job is None else history_pages.log_page_of(job, cursor=cursor, limit=limit)

    @abstractmethod
    def list_jobs(self, *, status: JobStatus | None = None) -> list[Job]:
        """Live jobs, newest first, optionally only those with ``status``."""

    def cost_page(self, *, where: ListingFilter | None = None, cursor: str | None = None, limit: int = 50) -> JobPage:
        """One page of the live jobs ``where`` lets through, dearest first (each summary with its ``cost_usd``),
        paged by ``cursor`` across the whole filter: a page starts where the one before ended.

        Optional: a store without a cost order refuses (a ConfigurationError naming it); a store of an earlier
        release has none.
        """
        raise self._lacks("a listing dearest first")

    def job_usages(self, job_ids: Sequence[str]) -> dict[str, dict[str, float]]:
        """The usage counters of each of ``job_ids`` that is stored (what a listing prices each job's cost from).

        Optional: by default each job is read; an adapter with a cheaper read of the counters overrides it.
        """
        found = {job_id: self.get_job(job_id) for job_id in job_ids}
        return {job_id: dict(job.usage) for job_id, job in found.items() if job is not None}

    def count_jobs(self) -> JobCounts:
        """How many live jobs have each status: exact here (every job read); an adapter may bound its count.

        An adapter with an index estimates instead (``JobCounts.exact`` False: each count a lower bound).
        """
        return JobCounts.of(Counter(job.status for job in self.list_jobs()), exact=True)

    def failed_jobs(self, *, created_from: int, created_to: int, pipeline: str | None, limit: int) -> FailedJobs:
        """Up to ``limit`` live jobs in error created within ``[created_from, created_to]`` (Unix ms, inclusive),
        of ``pipeline`` if given, newest first, each with its exception type and failed phase; ``exact`` False
        when more matched.

        Optional: by default every job in error is read (``list_jobs``), and a job stored without its exception
        type and failed phase (a store of an earlier release) takes them from its newest failed phase record.
        An adapter with an index reads only the range (:meth:`cairn.aws.dynamodb.DynamoDBStorage.failed_jobs`).
        """
        matching = [
            failed_summary(job)
            for job in self.list_jobs(status=JobStatus.ERROR)
            if created_from <= job.created_at <= created_to and pipeline in (None, job.pipeline)
        ]
        return FailedJobs(matching[:limit], exact=len(matching) <= limit)

    @abstractmethod
    def start_job(self, request: StartJob) -> Job:
        """Create or take over a job (fencing any claim).

        Raises :class:`cairn.core.errors.VersionConflict` when the job changed
        since the caller read it (``request.seen``).
        """

    @abstractmethod
    def claim(self, request: Claim) -> Job | None:
        """Claim the job for one phase run; None when it is not claimable."""

    @abstractmethod
    def save(self, job_id: str, fence: Fence, request: Save) -> Job:
        """Write a mid-phase checkpoint; raises ClaimLostError without the claim."""

    @abstractmethod
    def commit(self, job_id: str, fence: Fence, request: Commit) -> Job:
        """End a phase run and release the claim; raises ClaimLostError without it."""

    @abstractmethod
    def pause(self, job_id: str, *, by: str | None = None) -> Job:
        """Pause a running job (idempotent); the pause joins its pending log, naming ``by`` when given."""

    @abstractmethod
    def cancel(self, job_id: str, *, by: str | None = None) -> Job:
        """Cancel a job, fencing any worker (idempotent); the cancel joins its pending log, naming ``by``."""

    def deliver_signal(self, job_id: str, request: SignalDelivery) -> Job:
        """Hand a job waiting for the signal its payload (it runs again); TransitionRefusedError when none waits."""
        raise self._lacks("signals and waits")

    def expire_wait(self, job_id: str, request: WaitExpiry) -> Job | None:
        """End a wait past its deadline (timeout phase, or error); None when there is no such wait."""
        raise self._lacks("signals and waits")

    @abstractmethod
    def entered(self, job_id: str, phase: str, *, before: int | None = None) -> Checkpoint | None:
        """The checkpoint the job's newest write entering ``phase`` set (its state then); None when none is kept.

        With ``before`` (Unix ms), the newest such checkpoint written at or before then: an earlier run's.
        """

    def entered_link(
        self, job_id: str, phase: str, *, before: int | None = None, expires_in: int = 300
    ) -> StateLink | None:
        """A link (valid ``expires_in`` seconds) to the state of the entry :meth:`entered` finds, read from where it
        is stored rather than through this store's reply; None when that state is not kept as an object of its own
        (the default: a store without such objects, such as the memory store)."""
        return None

    def checkpoint_link(self, job_id: str, *, expires_in: int = 300) -> StateLink | None:
        """A link (valid ``expires_in`` seconds) to the state of the job's checkpoint, read from where it is stored;
        None when that state is not kept as an object of its own (the default) or the job is unknown."""
        return None

    def result_link(self, job_id: str, *, expires_in: int = 300) -> ResultLink | None:
        """A link (valid ``expires_in`` seconds) to the job's result, read from where it is stored; None when the
        result is not kept as an object of its own (the default), the job has none or is unknown."""
        return None

    def get_items(self, job_id: str, fan_out: str) -> list[MapItem]:
        """The item records of the job's map ``fan_out``, in item order (every record: for ``then``, a recovery)."""
        raise self._lacks("maps")

    def get_item(self, job_id: str, fan_out: str, index: int) -> MapItem | None:
        """Item ``index`` of the job's map ``fan_out`` (None when it was never written): one record read.

        An item's own transitions read only this, so that their cost does not grow with the map's size.
        Optional: by default it is found among :meth:`get_items` (every record read).
        """
        return next((item for item in self.get_items(job_id, fan_out) if item.index == index), None)

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
        """Write ``item`` if the stored record has ``expected_version`` (None: there is none); False if not.

        ``expires_at`` (Unix seconds) is when the record may be deleted. With ``finishes`` (the write
        takes the record to ``done`` from the version read) the map's record (:meth:`get_map`) counts
        the item in the same atomic step: written or not, both or neither, so each item counts exactly
        once whatever is sent again (a write sent again after a lost response finds the version moved).
        A map with no record (started before maps kept one) counts nothing.
        """
        raise self._lacks("maps")

    # Map records: optional. A store that keeps none (the defaults) still runs maps: the engine then reads every
    # item record to tell whether the map is done (:class:`cairn.maps.fan_out.ItemRun`), as before maps kept a
    # count, and the maps' lanes (``GET /jobs/{id}/maps``) show none.

    def create_map(self, job_id: str, record: MapRecord, *, expires_at: int) -> None:
        """Write a new map's record (``done`` 0); one already written (a write sent again) is left as it is.

        Optional: by default no record is kept."""
        return None

    def get_map(self, job_id: str, fan_out: str) -> MapRecord | None:
        """The record of the job's map ``fan_out`` (its count of finished items): one record read (None: none kept)."""
        return None

    def get_maps(self, job_id: str) -> list[MapRecord]:
        """The records of every map the job has run (not their items), oldest first (none by default)."""
        return []

    def mark_map(self, job_id: str, fan_out: str, mark: MapMark, token: str) -> bool:
        """Set the map's ``mark`` to ``token``, unless another token set it first (:class:`MapRecord`).

        ``handed_off``: the one finish that schedules ``then``; ``joined``: the run of ``then`` that added
        the items' usage and log to the job's. True when ``token`` holds the mark (it is the first to ask,
        or asks again after a lost response); False when another does, or the map has no record (the default).
        """
        return False

    def note_nudge(self, job_id: str, entry: LogEntry, *, sequence: int) -> bool | None:
        """Add a nudge's ``entry`` to a running job's log at ``sequence`` (no live claim), changing nothing else,
        once per sequence: True when added, False when one was (or the job moved on). Optional: None, the
        default, when this store keeps no such entry (the API then logs the nudge only in its own log)."""
        return None

    def remember(self, pipeline: str, lessons: Sequence[Lesson], *, expires_at: int) -> None:
        """Keep ``lessons`` in the memory of ``pipeline`` (this store's owner's) until ``expires_at`` (Unix s).

        Idempotent: a lesson with the key of one kept (:func:`cairn.core.lessons.lesson_key`) replaces it.
        """
        raise self._lacks("lessons")

    def put_job(self, job: Job, history: Sequence[HistoryItem], *, replace: bool = False) -> Job:
        """Store a whole job with its history (a job loaded from a file: :mod:`cairn.storage.job_loading`).

        ``history`` is every item of the job's history, oldest first, each linked to the one before it,
        ``job.history_head`` the newest. A live job with the id is refused (JobExistsError) unless
        ``replace``, which drops it first. The job is returned as ``get_job`` reads it. A store that
        cannot load jobs raises ConfigurationError. Every store first checks what it is given
        (:func:`cairn.storage.job_loading.checked_whole_job`: the id as the API takes it, finite non-negative
        usage, one history chain): InvalidInputError before anything is written.
        """
        raise ConfigurationError(f"{type(self).__name__} cannot load a job")

    def recall(self, pipeline: str, limit: int) -> list[Lesson]:
        """The ``limit`` newest live lessons in the memory of ``pipeline``, newest first."""
        raise self._lacks("lessons")

    def owner_shares(self) -> OwnerShares | None:
        """Where this store keeps its owners' fair shares (:mod:`cairn.core.share_port`); None: it keeps none.

        Optional. By default a store that is an :class:`~cairn.core.share_port.OwnerShares` keeps its own, and
        any other keeps none: a share set for it (``CAIRN_OWNER_CONCURRENCY``) is refused at start-up. A
        wrapper gives its inner store's (:class:`cairn.storage.delegating.DelegatingStorage`).
        """
        return self if isinstance(self, OwnerShares) else None

    def bulk_operations(self) -> BulkOperations | None:
        """Where this store keeps its owner's bulk operations (:mod:`cairn.core.bulk_port`); None: it keeps none.

        Optional: by default a store keeps none, and a bulk request to it is refused as not supported.
        """
        return None
