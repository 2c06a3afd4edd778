"""In-process storage for tests and the inline scheduler.

What it keeps is its own: every record is deep-copied as it is stored and as it is read, as a file or a
table would be written and parsed, so a phase or a migration that edits its state in place, or a caller
that edits what it passed or read, never changes a checkpoint.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TypeVar

from pydantic import BaseModel

from ..core import transitions
from ..core.clock import Clock
from ..core.lessons import StoredLesson
from ..core.models import HistoryItem, Job, MapItem
from ..core.transitions.changes import changed
from .document import DocumentStorage, StoredMap
from .owner_shares import LocalOwnerShares

_Record = TypeVar("_Record", bound=BaseModel)


def _own(record: _Record) -> _Record:
    """A deep copy of ``record``: nothing it holds is shared with the one given."""
    return record.model_copy(deep=True)


def _own_or_none(record: _Record | None) -> _Record | None:
    return None if record is None else _own(record)


class MemoryStorage(DocumentStorage, LocalOwnerShares):
    """Jobs in a dict, guarded by one lock. Nothing survives the process."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        self._jobs: dict[str, Job] = {}
        self._histories: dict[str, dict[str, HistoryItem]] = {}
        self._map_items: dict[tuple[str, str], dict[int, MapItem]] = {}
        self._maps_of: dict[str, dict[str, StoredMap]] = {}
        self._memory: dict[str, dict[str, StoredLesson]] = {}
        self._lock = threading.RLock()

    def _locked(self, job_id: str) -> AbstractContextManager[object]:
        return self._lock

    def _load(self, job_id: str) -> Job | None:
        with self._lock:
            return _own_or_none(self._jobs.get(job_id))

    def _store(self, job: Job, *, lasting: bool = True) -> None:
        with self._lock:
            self._jobs[job.job_id] = _own(job)

    def _history(self, job_id: str) -> Mapping[str, HistoryItem]:
        with self._lock:
            return {token: _own(item) for token, item in self._histories.get(job_id, {}).items()}

    def _append_history(self, job_id: str, item: HistoryItem) -> None:
        with self._lock:
            self._histories.setdefault(job_id, {})[item.token] = _own(item)

    def _items(self, job_id: str, fan_out: str) -> dict[int, MapItem]:
        with self._lock:
            return {index: _own(item) for index, item in self._map_items.get((job_id, fan_out), {}).items()}

    def _item(self, job_id: str, fan_out: str, index: int) -> MapItem | None:
        with self._lock:
            return _own_or_none(self._map_items.get((job_id, fan_out), {}).get(index))

    def _put_item(self, job_id: str, fan_out: str, item: MapItem, *, new: bool = False) -> None:
        with self._lock:
            self._map_items.setdefault((job_id, fan_out), {})[item.index] = _own(item)

    def _map(self, job_id: str, fan_out: str) -> StoredMap | None:
        with self._lock:
            return _own_or_none(self._maps_of.get(job_id, {}).get(fan_out))

    def _put_map(self, job_id: str, stored: StoredMap) -> None:
        with self._lock:
            self._maps_of.setdefault(job_id, {})[stored.record.fan_out.id] = _own(stored)

    def _maps(self, job_id: str) -> list[StoredMap]:
        with self._lock:
            return [_own(stored) for stored in self._maps_of.get(job_id, {}).values()]

    def _lessons(self, pipeline: str) -> list[StoredLesson]:
        with self._lock:
            return list(self._memory.get(pipeline, {}).values())

    def _add_lessons(self, pipeline: str, records: Sequence[StoredLesson]) -> None:
        with self._lock:
            kept = self._memory.setdefault(pipeline, {})
            for record in records:
                kept[record.key] = record

    def _job_ids(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._jobs))

    def inspect(self) -> dict[str, Job]:
        """Every stored job, expired or not, keyed by id, with its log and phase records. For tests only."""
        with self._lock:
            jobs = dict(self._jobs)
            histories = {job_id: dict(items) for job_id, items in self._histories.items()}
        inspected: dict[str, Job] = {}
        for job_id, job in jobs.items():
            log, phases = transitions.linked_history(histories.get(job_id, {}), job.history_head)
            log = transitions.shown_log(log, job.pending_log)
            inspected[job_id] = _own(changed(job, log=log, phases=phases))
        return inspected
