"""A storage that passes every call to another one: the base for wrappers that watch or fail calls.

Its capabilities are the inner store's: the owners' shares too (:class:`DelegatingShares`), each of their
calls passing through the wrapper's :meth:`DelegatingStorage.around` like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from ..core.bulk_port import BulkOperations
from ..core.failure_groups import FailedJobs
from ..core.history_pages import HISTORY_PAGE, LOG_PAGE, VIEW_HISTORY, HistoryPage, LogPage, RecentJob
from ..core.models import (
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
from ..core.share_port import NoteOutcome, OwnerShares, ShareTaken, SlotRequest, Waiter, WaiterNote
from ..core.storage_port import ListingFilter, ResultLink, Route, StateLink, Storage
from ..core.transitions import Claim, Commit, Fence, Save, SignalDelivery, StartJob, WaitExpiry

_T = TypeVar("_T")


class DelegatingStorage(Storage):
    """Forwards every operation to ``inner`` through :meth:`around`.

    Subclasses override :meth:`around` to act on every call, or a single
    method to act on one kind of call.
    """

    def __init__(self, inner: Storage) -> None:
        super().__init__(clock=inner.clock)
        self.inner = inner

    def around(self, name: str, operation: Callable[[], _T]) -> _T:
        """Run one storage ``operation`` called ``name``; the default just runs it."""
        return operation()

    def get_job(self, job_id: str) -> Job | None:
        return self.around("get_job", lambda: self.inner.get_job(job_id))

    def get_route(self, job_id: str) -> Route | None:
        return self.around("get_route", lambda: self.inner.get_route(job_id))

    def get_current_job(self, job_id: str, *, payloads: bool = True) -> Job | None:
        return self.around("get_current_job", lambda: self.inner.get_current_job(job_id, payloads=payloads))

    def get_job_view(self, job_id: str, *, history: int = VIEW_HISTORY) -> RecentJob | None:
        return self.around("get_job_view", lambda: self.inner.get_job_view(job_id, history=history))

    def history_page(self, job_id: str, cursor: str | None = None, limit: int = HISTORY_PAGE) -> HistoryPage | None:
        return self.around("history_page", lambda: self.inner.history_page(job_id, cursor, limit))

    def log_page(self, job_id: str, cursor: str | None = None, limit: int = LOG_PAGE) -> LogPage | None:
        return self.around("log_page", lambda: self.inner.log_page(job_id, cursor, limit))

    def list_jobs(self, *, status: JobStatus | None = None) -> list[Job]:
        return self.around("list_jobs", lambda: self.inner.list_jobs(status=status))

    def count_jobs(self) -> JobCounts:
        return self.around("count_jobs", self.inner.count_jobs)

    def cost_page(self, *, where: ListingFilter | None = None, cursor: str | None = None, limit: int = 50) -> JobPage:
        return self.around("cost_page", lambda: self.inner.cost_page(where=where, cursor=cursor, limit=limit))

    def job_usages(self, job_ids: Sequence[str]) -> dict[str, dict[str, float]]:
        return self.around("job_usages", lambda: self.inner.job_usages(job_ids))

    def bulk_operations(self) -> BulkOperations | None:
        return self.inner.bulk_operations()

    def failed_jobs(self, *, created_from: int, created_to: int, pipeline: str | None, limit: int) -> FailedJobs:
        return self.around(
            "failed_jobs",
            lambda: self.inner.failed_jobs(
                created_from=created_from, created_to=created_to, pipeline=pipeline, limit=limit
            ),
        )

    def start_job(self, request: StartJob) -> Job:
        return self.around("start_job", lambda: self.inner.start_job(request))

    def put_job(self, job: Job, history: Sequence[HistoryItem], *, replace: bool = False) -> Job:
        return self.around("put_job", lambda: self.inner.put_job(job, history, replace=replace))

    def claim(self, request: Claim) -> Job | None:
        return self.around("claim", lambda: self.inner.claim(request))

    def save(self, job_id: str, fence: Fence, request: Save) -> Job:
        return self.around("save", lambda: self.inner.save(job_id, fence, request))

    def commit(self, job_id: str, fence: Fence, request: Commit) -> Job:
        return self.around("commit", lambda: self.inner.commit(job_id, fence, request))

    def pause(self, job_id: str, *, by: str | None = None) -> Job:
        return self.around("pause", lambda: self.inner.pause(job_id, by=by))

    def cancel(self, job_id: str, *, by: str | None = None) -> Job:
        return self.around("cancel", lambda: self.inner.cancel(job_id, by=by))

    def deliver_signal(self, job_id: str, request: SignalDelivery) -> Job:
        return self.around("deliver_signal", lambda: self.inner.deliver_signal(job_id, request))

    def expire_wait(self, job_id: str, request: WaitExpiry) -> Job | None:
        return self.around("expire_wait", lambda: self.inner.expire_wait(job_id, request))

    def entered(self, job_id: str, phase: str, *, before: int | None = None) -> Checkpoint | None:
        if before is None:
            return self.around("entered", lambda: self.inner.entered(job_id, phase))
        return self.around("entered", lambda: self.inner.entered(job_id, phase, before=before))

    def entered_link(
        self, job_id: str, phase: str, *, before: int | None = None, expires_in: int = 300
    ) -> StateLink | None:
        """The inner store's link to that entry's state (None when it keeps none), through :meth:`around`."""
        return self.around(
            "entered_link", lambda: self.inner.entered_link(job_id, phase, before=before, expires_in=expires_in)
        )

    def checkpoint_link(self, job_id: str, *, expires_in: int = 300) -> StateLink | None:
        """The inner store's link to the checkpoint's state (None when it keeps none), through :meth:`around`."""
        return self.around("checkpoint_link", lambda: self.inner.checkpoint_link(job_id, expires_in=expires_in))

    def result_link(self, job_id: str, *, expires_in: int = 300) -> ResultLink | None:
        """The inner store's link to the job's result (None when it keeps none), through :meth:`around`."""
        return self.around("result_link", lambda: self.inner.result_link(job_id, expires_in=expires_in))

    def get_items(self, job_id: str, fan_out: str) -> list[MapItem]:
        return self.around("get_items", lambda: self.inner.get_items(job_id, fan_out))

    def get_item(self, job_id: str, fan_out: str, index: int) -> MapItem | None:
        return self.around("get_item", lambda: self.inner.get_item(job_id, fan_out, index))

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
        return self.around(
            "write_item",
            lambda: self.inner.write_item(
                job_id, fan_out, item, expected_version=expected_version, expires_at=expires_at, finishes=finishes
            ),
        )

    def create_map(self, job_id: str, record: MapRecord, *, expires_at: int) -> None:
        return self.around("create_map", lambda: self.inner.create_map(job_id, record, expires_at=expires_at))

    def get_map(self, job_id: str, fan_out: str) -> MapRecord | None:
        return self.around("get_map", lambda: self.inner.get_map(job_id, fan_out))

    def get_maps(self, job_id: str) -> list[MapRecord]:
        return self.around("get_maps", lambda: self.inner.get_maps(job_id))

    def mark_map(self, job_id: str, fan_out: str, mark: MapMark, token: str) -> bool:
        return self.around("mark_map", lambda: self.inner.mark_map(job_id, fan_out, mark, token))

    def note_nudge(self, job_id: str, entry: LogEntry, *, sequence: int) -> bool | None:
        return self.around("note_nudge", lambda: self.inner.note_nudge(job_id, entry, sequence=sequence))

    def remember(self, pipeline: str, lessons: Sequence[Lesson], *, expires_at: int) -> None:
        return self.around("remember", lambda: self.inner.remember(pipeline, lessons, expires_at=expires_at))

    def recall(self, pipeline: str, limit: int) -> list[Lesson]:
        return self.around("recall", lambda: self.inner.recall(pipeline, limit))

    def owner_shares(self) -> OwnerShares | None:
        """The inner store's owners' shares, each call through :meth:`around` (None when it keeps none)."""
        inner = self.inner.owner_shares()
        return None if inner is None else DelegatingShares(self, inner)


class DelegatingShares(OwnerShares):
    """A wrapped store's owners' shares: every call passes through the wrapper's ``around``, to the inner ones.

    The settings (``owner_concurrency``, ``share_wait_seconds``) are the inner store's, read and set through.
    """

    def __init__(self, wrapper: DelegatingStorage, inner: OwnerShares) -> None:
        self._wrapper = wrapper
        self._inner = inner

    @property
    def owner_concurrency(self) -> int | None:
        return self._inner.owner_concurrency

    @owner_concurrency.setter
    def owner_concurrency(self, value: int | None) -> None:
        self._inner.owner_concurrency = value

    @property
    def share_wait_seconds(self) -> float:
        return self._inner.share_wait_seconds

    @share_wait_seconds.setter
    def share_wait_seconds(self, value: float) -> None:
        self._inner.share_wait_seconds = value

    @property
    def notes_waiters(self) -> bool:  # type: ignore[override]  # the inner store's: read only
        return self._inner.notes_waiters

    @property
    def share_owner(self) -> str:
        return self._inner.share_owner

    def default_limit(self) -> int:
        return self._inner.default_limit()

    def owner_limit(self, owner: str) -> int | None:
        return self._wrapper.around("owner_limit", lambda: self._inner.owner_limit(owner))

    def set_owner_limit(self, owner: str, limit: int | None) -> None:
        return self._wrapper.around("set_owner_limit", lambda: self._inner.set_owner_limit(owner, limit))

    def take_slot(self, request: SlotRequest) -> ShareTaken | None:
        return self._wrapper.around("take_slot", lambda: self._inner.take_slot(request))

    def give_slot(self, owner: str, job_id: str, holder: str) -> None:
        return self._wrapper.around("give_slot", lambda: self._inner.give_slot(owner, job_id, holder))

    def running_slots(self, owner: str, now_ms: int) -> int:
        return self._wrapper.around("running_slots", lambda: self._inner.running_slots(owner, now_ms))

    def note_waiter(self, note: WaiterNote) -> NoteOutcome:
        return self._wrapper.around("note_waiter", lambda: self._inner.note_waiter(note))

    def give_slot_to_next(self, owner: str, job_id: str, holder: str, *, pipeline: str | None = None) -> Waiter | None:
        return self._wrapper.around(
            "give_slot_to_next", lambda: self._inner.give_slot_to_next(owner, job_id, holder, pipeline=pipeline)
        )
