"""Shared logic for stores that keep each job as one document behind a lock.

Memory and file storage implement a few small methods (lock, load, store,
list ids, read and append history); this base applies the pure transition
rules under the lock, so each transition is one atomic read-check-write. The
job document holds no history: a transition appends what it adds to the job's
history before it writes the document, so its cost does not grow with the
job's past, and the document's ``history_head`` says which items belong.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager

from pydantic import BaseModel

from ..core import lessons as lesson_rules
from ..core import transitions
from ..core.errors import JobExistsError
from ..core.lessons import StoredLesson
from ..core.models import Checkpoint, HistoryItem, Job, JobPage, JobStatus, Lesson, MapItem, MapMark, MapRecord
from ..core.storage_port import ListingFilter, Storage
from ..core.transitions import Claim, Commit, Fence, Save, SignalDelivery, StartJob, WaitExpiry, Written, new_token
from ..core.transitions.changes import changed
from .cost_order import cost_page_of
from .job_loading import checked_whole_job


class StoredMap(BaseModel):
    """A map's record as a document store keeps it: ``counting`` names the item whose finish the count
    includes, written just before that item's record (``counting_token``: the finish's write token)."""

    record: MapRecord
    counting: int | None = None
    counting_token: str | None = None


class DocumentStorage(Storage):
    """A store of whole job documents, each changed under a per-job lock."""

    @abstractmethod
    def _locked(self, job_id: str) -> AbstractContextManager[object]:
        """Hold the job's lock (across threads and, where it applies, processes)."""

    @abstractmethod
    def _load(self, job_id: str) -> Job | None:
        """The stored document (no history), expired or not; None when there is none."""

    @abstractmethod
    def _store(self, job: Job, *, lasting: bool = True) -> None:
        """Write the document atomically (all or nothing).

        ``lasting=False`` (a claim) may skip what only makes the write survive a power cut: a claim lost
        with the machine lets the phase run again, as the death of its worker already does.
        """

    @abstractmethod
    def _job_ids(self) -> Iterator[str]:
        """The ids of every stored document."""

    @abstractmethod
    def _history(self, job_id: str) -> Mapping[str, HistoryItem]:
        """Every history item stored for the job, by token (linked or not)."""

    @abstractmethod
    def _append_history(self, job_id: str, item: HistoryItem) -> None:
        """Add one history item durably (before the document that links it is written)."""

    @abstractmethod
    def _items(self, job_id: str, fan_out: str) -> dict[int, MapItem]:
        """The stored item records of a map, by index."""

    @abstractmethod
    def _item(self, job_id: str, fan_out: str, index: int) -> MapItem | None:
        """One stored item record (None when there is none), read alone."""

    @abstractmethod
    def _put_item(self, job_id: str, fan_out: str, item: MapItem, *, new: bool = False) -> None:
        """Store one item record durably (replacing the one with its index).

        ``new`` (a map's records being created) may leave making the record's name survive a power
        cut to the map record written after them (:meth:`_put_map`).
        """

    @abstractmethod
    def _map(self, job_id: str, fan_out: str) -> StoredMap | None:
        """The stored record of a map (None when there is none)."""

    @abstractmethod
    def _put_map(self, job_id: str, stored: StoredMap) -> None:
        """Store a map's record durably (replacing the one of its map), with the item records created before it."""

    @abstractmethod
    def _maps(self, job_id: str) -> list[StoredMap]:
        """The stored records of every map of the job."""

    @abstractmethod
    def _lessons(self, pipeline: str) -> list[StoredLesson]:
        """Every lesson record kept for ``pipeline`` (older records of a key too, expired ones too)."""

    @abstractmethod
    def _add_lessons(self, pipeline: str, records: Sequence[StoredLesson]) -> None:
        """Keep lesson records durably (a record of a key already kept may be added beside it)."""

    def _update(
        self, job_id: str, change: Callable[[Job | None], Written | None], *, lasting: bool = True
    ) -> Job | None:
        with self._locked(job_id):
            written = change(self._load(job_id))
            if written is None:
                return None
            if not written.landed:
                if written.history is not None:
                    self._append_history(job_id, written.history)
                self._store(changed(written.job, log=[], phases=[]), lasting=lasting)
            return written.returned()

    def _apply(self, job_id: str, change: Callable[[Job | None], Written]) -> Job:
        job = self._update(job_id, change)
        assert job is not None
        return job

    def get_job(self, job_id: str) -> Job | None:
        job = transitions.live(self._load(job_id), self.clock())
        if job is None:
            return None
        log, phases = transitions.linked_history(self._history(job_id), job.history_head)
        return changed(job, log=transitions.shown_log(log, job.pending_log), phases=phases)

    def put_job(self, job: Job, history: Sequence[HistoryItem], *, replace: bool = False) -> Job:
        """The job and its history stored under its lock: the history items first, then the document.

        JobExistsError for a live job of that id unless ``replace``."""
        checked_whole_job(job, history)
        with self._locked(job.job_id):
            existing = transitions.live(self._load(job.job_id), self.clock())
            if existing is not None and not replace:
                raise JobExistsError(job.job_id, existing)
            for item in history:
                self._append_history(job.job_id, item)
            self._store(changed(job, log=[], phases=[], history_renew_by=None))
        stored = self.get_job(job.job_id)
        assert stored is not None
        return stored

    def list_jobs(self, *, status: JobStatus | None = None) -> list[Job]:
        now = self.clock()
        jobs = [job for job in map(self.get_job_or_skip, self._job_ids()) if job is not None]
        live_jobs = [job for job in jobs if not job.is_expired(now)]
        if status is not None:
            live_jobs = [job for job in live_jobs if job.status == status]
        return sorted(live_jobs, key=lambda job: (job.created_at, job.job_id), reverse=True)

    def cost_page(self, *, where: ListingFilter | None = None, cursor: str | None = None, limit: int = 50) -> JobPage:
        """One page of the live jobs ``where`` lets through, dearest first, from every job read whole
        (:mod:`.cost_order`)."""
        return cost_page_of(self.list_jobs(), where, cursor, limit)

    def get_job_or_skip(self, job_id: str) -> Job | None:
        """Like get_job, for listings: adapters may skip unreadable documents here."""
        return self.get_job(job_id)

    def start_job(self, request: StartJob) -> Job:
        return self._apply(request.job_id, lambda job: transitions.start(job, request))

    def claim(self, request: Claim) -> Job | None:
        return self._update(request.job_id, lambda job: transitions.claim(job, request), lasting=False)

    def save(self, job_id: str, fence: Fence, request: Save) -> Job:
        return self._apply(job_id, lambda job: transitions.save(job, job_id, fence, request))

    def commit(self, job_id: str, fence: Fence, request: Commit) -> Job:
        return self._apply(job_id, lambda job: transitions.commit(job, job_id, fence, request))

    def pause(self, job_id: str, *, by: str | None = None) -> Job:
        now, token = self.clock(), new_token()
        return self._apply(job_id, lambda job: transitions.pause(job, job_id, now, token, by))

    def cancel(self, job_id: str, *, by: str | None = None) -> Job:
        now, token = self.clock(), new_token()
        return self._apply(job_id, lambda job: transitions.cancel(job, job_id, now, token, by))

    def deliver_signal(self, job_id: str, request: SignalDelivery) -> Job:
        return self._apply(job_id, lambda job: transitions.deliver_signal(job, job_id, request))

    def expire_wait(self, job_id: str, request: WaitExpiry) -> Job | None:
        return self._update(job_id, lambda job: transitions.expire_wait(job, request))

    def entered(self, job_id: str, phase: str, *, before: int | None = None) -> Checkpoint | None:
        job = transitions.live(self._load(job_id), self.clock())
        if job is None:
            return None
        return transitions.entered(self._history(job_id), job.history_head, phase, before)

    def get_items(self, job_id: str, fan_out: str) -> list[MapItem]:
        with self._locked(job_id):
            stored = self._items(job_id, fan_out)
        return [stored[index] for index in sorted(stored)]

    def get_item(self, job_id: str, fan_out: str, index: int) -> MapItem | None:
        with self._locked(job_id):
            return self._item(job_id, fan_out, index)

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
        """The record, and with ``finishes`` the map's count first, marked as counting this write.

        Two files cannot change in one step, so the map's record says which write it counted
        (``counting``): until that item record is stored, the count is read one lower. A death between
        the two writes leaves a count that is still exact, and the next finish settles it.
        """
        with self._locked(job_id):
            stored = self._item(job_id, fan_out, item.index)
            if (stored.version if stored is not None else None) != expected_version:
                return False
            if finishes:
                kept = self._map(job_id, fan_out)
                if kept is not None:
                    record = self._settled(job_id, kept)
                    counted = record.model_copy(update={"done": record.done + 1})
                    self._put_map(
                        job_id, StoredMap(record=counted, counting=item.index, counting_token=item.write_token)
                    )
            self._put_item(job_id, fan_out, item, new=expected_version is None)
            return True

    def _settled(self, job_id: str, stored: StoredMap) -> MapRecord:
        """The map's record as it stands: its count less the write it counted, if that write never landed."""
        record = stored.record
        if stored.counting is None:
            return record
        item = self._item(job_id, record.fan_out.id, stored.counting)
        if item is not None and item.write_token == stored.counting_token:
            return record
        return record.model_copy(update={"done": record.done - 1})

    def create_map(self, job_id: str, record: MapRecord, *, expires_at: int) -> None:
        with self._locked(job_id):
            if self._map(job_id, record.fan_out.id) is None:
                self._put_map(job_id, StoredMap(record=record))

    def get_map(self, job_id: str, fan_out: str) -> MapRecord | None:
        with self._locked(job_id):
            stored = self._map(job_id, fan_out)
            return self._settled(job_id, stored) if stored is not None else None

    def get_maps(self, job_id: str) -> list[MapRecord]:
        with self._locked(job_id):
            records = [self._settled(job_id, stored) for stored in self._maps(job_id)]
        return sorted(records, key=lambda record: (record.created_at, record.sequence, record.fan_out.id))

    def mark_map(self, job_id: str, fan_out: str, mark: MapMark, token: str) -> bool:
        with self._locked(job_id):
            stored = self._map(job_id, fan_out)
            if stored is None:
                return False
            held = getattr(stored.record, mark)
            if held not in (None, token):
                return False
            if held is None:
                marked = stored.record.model_copy(update={mark: token})
                self._put_map(job_id, stored.model_copy(update={"record": marked}))
            return True

    def remember(self, pipeline: str, lessons: Sequence[Lesson], *, expires_at: int) -> None:
        if lessons:
            self._add_lessons(pipeline, lesson_rules.stored(lessons, expires_at))

    def recall(self, pipeline: str, limit: int) -> list[Lesson]:
        return lesson_rules.newest(self._lessons(pipeline), self.clock(), lesson_rules.checked_limit(limit))
