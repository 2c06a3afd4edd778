"""Local JSON checkpoints: one file per job, atomic writes, a lock per job, retention and health.

A job's history (log entries and phase records) is appended to a file of its
own, ``<job>.history.jsonl``, so a transition rewrites only the small job file
and its cost does not grow with the job's past.

A job's maps are folders, ``<job>.maps/<map id>/``: ``map.json`` (the map's record, its count of
finished items) and one ``<index>.json`` per item, each written whole (a flushed temporary file
renamed over it), so that an item's transitions read and write only its own file.

The pipelines' memory (the lessons of :mod:`cairn.core.lessons`) is ``.memory/<pipeline>.jsonl``: one
lesson record a line, appended under a lock; the newest record of a lesson counts.

A job file that cannot be read (garbage, truncated, nested too deep to parse)
is a :class:`~cairn.core.errors.CorruptJobError` naming the file; listings, ``health()``
and ``cleanup()`` log it and go on with the other jobs. A history line torn by a
crash mid-append is skipped: the job never linked it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import timedelta
from pathlib import Path

from filelock import FileLock, Timeout
from pydantic import BaseModel

from ..core.clock import Clock
from ..core.errors import CorruptJobError, InvalidInputError, StorageError
from ..core.ids import validate_job_id
from ..core.lessons import StoredLesson
from ..core.models import HistoryItem, Job, JobStatus, Lesson, MapItem
from ..core.pipeline import NAME_PATTERN
from .document import DocumentStorage, StoredMap
from .file_io import TEMP_PREFIX, append_line, folder_entries, fsync_directory, read_parsed, read_records, replace_file
from .owner_shares import FileShareTable, LocalOwnerShares, ShareTable

logger = logging.getLogger(__name__)

_SUFFIX = ".json"
_HISTORY_SUFFIX = ".history.jsonl"
_ITEMS_SUFFIX = ".items.jsonl"
_MAPS_SUFFIX = ".maps"
_MAP_FILE = "map.json"
_MAP_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_RECOVERABLE = {JobStatus.RUNNING, JobStatus.PAUSED, JobStatus.ERROR, JobStatus.CANCELLED}


class StorageHealth(BaseModel):
    """What ``FileStorage.health()`` reports."""

    healthy: bool
    last_checkpoint_age: float | None
    job_count: int
    can_recover: bool
    recommendation: str
    unreadable_files: list[str] = []


class _LessonLine(BaseModel):
    """One line of a pipeline's memory file: a lesson and when it may be deleted (Unix seconds)."""

    lesson: Lesson
    expires_at: int


class FileStorage(DocumentStorage, LocalOwnerShares):
    """Jobs as JSON files in ``directory``, safe for several threads and processes at once.

    Each write goes to a temporary file that is flushed to disk and renamed
    over the old one, so a crash leaves either the old or the new job, never
    half of one. Every write but a claim also flushes the folder, so that the
    rename survives a power cut; a claim lost with the machine lets the phase
    run again, which the death of its worker allows anyway. ``lock_timeout``
    bounds the wait for another process's lock.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        lock_timeout: float = 30.0,
    ) -> None:
        super().__init__(clock=clock)
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise InvalidInputError(f"FileStorage directory {self.directory} exists and is not a directory")
        self._locks = self.directory / ".locks"
        self._locks.mkdir(parents=True, exist_ok=True)
        self._lock_timeout = lock_timeout

    def _new_share_table(self) -> ShareTable:
        """Owners' shares in ``.owner-shares.json`` (:mod:`cairn.storage.owner_shares`), shared across processes."""
        return FileShareTable(self._locks / "owner-shares.json", lock_timeout=self._lock_timeout)

    def path_for(self, job_id: str) -> Path:
        """The file that holds ``job_id``."""
        return self.directory / f"{validate_job_id(job_id)}{_SUFFIX}"

    @contextlib.contextmanager
    def _held(self, job_id: str) -> Iterator[None]:
        self.path_for(job_id)
        with self._held_file(job_id, what=f'job "{job_id}"'):
            yield

    @contextlib.contextmanager
    def _held_file(self, name: str, *, what: str | None = None) -> Iterator[None]:
        """Hold the lock ``.locks/<name>.lock`` (across threads and processes)."""
        lock = FileLock(str(self._locks / f"{name}.lock"), timeout=self._lock_timeout)
        try:
            with lock:
                yield
        except Timeout as exc:
            raise StorageError(
                f"Timed out after {self._lock_timeout}s waiting for the lock on {what or name}", retryable=True
            ) from exc

    def _locked(self, job_id: str) -> AbstractContextManager[object]:
        return self._held(job_id)

    def _load(self, job_id: str) -> Job | None:
        return read_parsed(self.path_for(job_id), lambda raw: Job.model_validate(json.loads(raw)))

    def _store(self, job: Job, *, lasting: bool = True) -> None:
        # a claim need not survive a power cut (see DocumentStorage._store): it leaves the folder unflushed
        data = json.dumps(job.to_wire(), separators=(",", ":")).encode()
        replace_file(self.path_for(job.job_id), data, lasting=lasting, temp_prefix=f"{TEMP_PREFIX}{job.job_id}-")

    def history_path_for(self, job_id: str) -> Path:
        """The file that holds ``job_id``'s history, one JSON item per line."""
        return self.path_for(job_id).with_name(f"{job_id}{_HISTORY_SUFFIX}")

    def _history(self, job_id: str) -> Mapping[str, HistoryItem]:
        # a line torn by a crash mid-append is never linked from the job
        return {
            item.token: item for item in read_records(self.history_path_for(job_id), HistoryItem.model_validate_json)
        }

    def _append_history(self, job_id: str, item: HistoryItem) -> None:
        append_line(self.history_path_for(job_id), item.model_dump_json(by_alias=True).encode())

    def items_path_for(self, job_id: str) -> Path:
        """The one file that held the item records of ``job_id``'s maps before each record had a file of its own."""
        return self.path_for(job_id).with_name(f"{job_id}{_ITEMS_SUFFIX}")

    def maps_path_for(self, job_id: str) -> Path:
        """The folder of ``job_id``'s maps: one folder per map, ``map.json`` and ``<index>.json`` per item."""
        return self.path_for(job_id).with_name(f"{job_id}{_MAPS_SUFFIX}")

    def _map_folder(self, job_id: str, fan_out: str) -> Path:
        if not _MAP_ID.fullmatch(fan_out):
            raise InvalidInputError(f"Invalid map id {fan_out!r}")
        return self.maps_path_for(job_id) / fan_out

    def _items(self, job_id: str, fan_out: str) -> dict[int, MapItem]:
        items: dict[int, MapItem] = {}
        for path in folder_entries(self._map_folder(job_id, fan_out)):
            if path.suffix == _SUFFIX and path.stem.isdigit():
                item = read_parsed(path, MapItem.model_validate_json)
                if item is not None:
                    items[item.index] = item
        return items

    def _item(self, job_id: str, fan_out: str, index: int) -> MapItem | None:
        return read_parsed(self._map_folder(job_id, fan_out) / f"{int(index)}{_SUFFIX}", MapItem.model_validate_json)

    def _put_item(self, job_id: str, fan_out: str, item: MapItem, *, new: bool = False) -> None:
        folder = self._map_folder(job_id, fan_out)
        # a new map's records are made lasting by the flush of the folder when its map record is written
        replace_file(folder / f"{item.index}{_SUFFIX}", item.model_dump_json(by_alias=True).encode(), lasting=not new)

    def _map(self, job_id: str, fan_out: str) -> StoredMap | None:
        return read_parsed(self._map_folder(job_id, fan_out) / _MAP_FILE, StoredMap.model_validate_json)

    def _put_map(self, job_id: str, stored: StoredMap) -> None:
        folder = self._map_folder(job_id, stored.record.fan_out.id)
        path = folder / _MAP_FILE
        first = not path.exists()
        replace_file(path, stored.model_dump_json(by_alias=True).encode(), lasting=True)
        if first:  # the new folders' names themselves survive a power cut
            fsync_directory(folder.parent)
            fsync_directory(self.directory)

    def _maps(self, job_id: str) -> list[StoredMap]:
        folders = sorted(path for path in folder_entries(self.maps_path_for(job_id)) if path.is_dir())
        found = (read_parsed(folder / _MAP_FILE, StoredMap.model_validate_json) for folder in folders)
        return [stored for stored in found if stored is not None]

    def memory_path_for(self, pipeline: str) -> Path:
        """The file that holds the lessons of ``pipeline``, one record a line."""
        if not NAME_PATTERN.fullmatch(pipeline):
            raise InvalidInputError(f"Invalid pipeline name {pipeline!r}")
        return self.directory / ".memory" / f"{pipeline}.jsonl"

    def _lessons(self, pipeline: str) -> list[StoredLesson]:
        records = read_records(self.memory_path_for(pipeline), _LessonLine.model_validate_json)
        return [StoredLesson(record.lesson, record.expires_at) for record in records]

    def _add_lessons(self, pipeline: str, records: Sequence[StoredLesson]) -> None:
        path = self.memory_path_for(pipeline)
        path.parent.mkdir(exist_ok=True)
        lines = [_LessonLine(lesson=record.lesson, expires_at=record.expires_at) for record in records]
        with self._held_file(f"memory-{pipeline}"):
            for line in lines:
                append_line(path, line.model_dump_json(by_alias=True).encode())

    def _job_ids(self) -> Iterator[str]:
        for path in sorted(self.directory.glob(f"*{_SUFFIX}")):
            if not path.name.startswith("."):
                yield path.name[: -len(_SUFFIX)]

    def get_job_or_skip(self, job_id: str) -> Job | None:
        """Like get_job, but an unreadable file is skipped, logged with its path (and reported by ``health()``)."""
        try:
            return self.get_job(job_id)
        except CorruptJobError as exc:
            logger.warning("Left an unreadable job file out of a listing: %s", exc, extra={"key": exc.location})
            return None

    def unreadable_files(self) -> list[str]:
        """Job files that cannot be read."""
        bad = []
        for job_id in self._job_ids():
            try:
                self._load(job_id)
            except CorruptJobError as exc:
                bad.append(exc.location)
        return bad

    def delete(self, job_id: str) -> bool:
        """Remove a job's file; True when there was one."""
        with self._held(job_id):
            self.history_path_for(job_id).unlink(missing_ok=True)
            self.items_path_for(job_id).unlink(missing_ok=True)
            shutil.rmtree(self.maps_path_for(job_id), ignore_errors=True)
            try:
                self.path_for(job_id).unlink()
            except FileNotFoundError:
                return False
        (self._locks / f"{job_id}.lock").unlink(missing_ok=True)
        return True

    def cleanup(self, *, keep: int | None = None, max_age: timedelta | None = None) -> list[str]:
        """Delete expired jobs, then finished ones beyond the newest ``keep`` or older than ``max_age``.

        A running or paused job is never removed unless it has expired.
        Returns the ids removed. Unreadable files are left for a person to look at.
        """
        if keep is not None and keep < 0:
            raise InvalidInputError(f"keep must not be negative, got {keep}")
        now = self.clock()
        removed: list[str] = []
        finished: list[Job] = []
        for job_id in list(self._job_ids()):
            try:
                job = self._load(job_id)
            except CorruptJobError:
                continue
            if job is None:
                continue
            if job.is_expired(now):
                if self.delete(job_id):
                    removed.append(job_id)
            elif job.status not in (JobStatus.RUNNING, JobStatus.PAUSED):
                finished.append(job)
        finished.sort(key=lambda job: job.updated_at, reverse=True)
        for index, job in enumerate(finished):
            too_many = keep is not None and index >= keep
            too_old = max_age is not None and now - job.updated_at > max_age.total_seconds() * 1000
            if (too_many or too_old) and self.delete(job.job_id):
                removed.append(job.job_id)
        self._remove_stale_temp_files()
        return removed

    def _remove_stale_temp_files(self, older_than: float = 3600.0) -> None:
        cutoff = time.time() - older_than
        for temp in self.directory.glob(f"{TEMP_PREFIX}*"):
            with contextlib.suppress(FileNotFoundError):
                if temp.stat().st_mtime < cutoff:
                    temp.unlink()

    def health(self) -> StorageHealth:
        """Whether the store is usable, how fresh its newest checkpoint is, and what to do next."""
        now = self.clock()
        writable = os.access(self.directory, os.W_OK)
        bad = self.unreadable_files()
        jobs = self.list_jobs()
        checkpoints = [job.checkpoint.created_at for job in jobs if job.checkpoint is not None]
        age = (now - max(checkpoints)) / 1000 if checkpoints else None
        recoverable = [job for job in jobs if job.checkpoint is not None and job.status in _RECOVERABLE]
        stalled = [job for job in recoverable if job.status == JobStatus.RUNNING and not job.has_live_claim(now)]
        if not writable:
            advice = f"Directory {self.directory} is not writable: fix its permissions"
        elif bad:
            advice = f"Move aside or delete {len(bad)} unreadable job file(s): {', '.join(bad)}"
        elif stalled:
            advice = (
                f"{len(stalled)} running job(s) have no live worker: resume them with "
                "run_pipeline(..., retry_mode='resume')"
            )
        elif recoverable:
            advice = f"{len(recoverable)} job(s) can be resumed from their checkpoint"
        else:
            advice = "Nothing to do"
        return StorageHealth(
            healthy=writable and not bad,
            last_checkpoint_age=age,
            job_count=len(jobs),
            can_recover=bool(recoverable),
            recommendation=advice,
            unreadable_files=bad,
        )
