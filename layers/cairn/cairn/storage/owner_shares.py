"""Owners' shares kept by the local stores (:mod:`cairn.core.share_port`): in memory, or in a JSON file.

A memory or file store holds the jobs of one owner, ``"local"`` unless named (``share_owner``); stores
that name different owners and share one :class:`ShareTable` (``use_share_table``) share their limits,
as the owners of one DynamoDB table do. A :class:`MemoryShareTable` lives in the process; a
:class:`FileShareTable` is ``.owner-shares.json`` in the file store's folder, each change made under its
file lock (safe across processes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from ..core.clock import Clock
from ..core.ids import validate_owner
from ..core.share_port import (
    NoteOutcome,
    OwnerShares,
    ShareTaken,
    Slot,
    SlotRequest,
    Waiter,
    WaiterNote,
    admit_slot,
    checked_limit,
    next_waiter,
    note_waiter_in,
)

LOCAL_OWNER = "local"
"""The owner of a local store's jobs unless it is given another."""


@dataclass
class OwnerRecord:
    """One owner's limit (None: the default), its slots and the notes of its waiting jobs, by job id."""

    limit: int | None = None
    slots: dict[str, Slot] = field(default_factory=dict)
    waiters: dict[str, Waiter] = field(default_factory=dict)


class ShareTable(ABC):
    """Every owner's record, changed one owner at a time under a lock."""

    @abstractmethod
    def changing(self, owner: str) -> AbstractContextManager[OwnerRecord]:
        """The owner's record; what is changed in it is kept when the block ends (atomically)."""

    def read(self, owner: str) -> OwnerRecord:
        """The owner's record as it is now."""
        with self.changing(owner) as record:
            return OwnerRecord(record.limit, dict(record.slots), dict(record.waiters))


class MemoryShareTable(ShareTable):
    """Owners' records in a dict, guarded by one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owners: dict[str, OwnerRecord] = {}

    @contextlib.contextmanager
    def changing(self, owner: str) -> Iterator[OwnerRecord]:
        with self._lock:
            yield self._owners.setdefault(owner, OwnerRecord())


class FileShareTable(ShareTable):
    """Owners' records in one JSON file, read and rewritten (a renamed temporary file) under its file lock."""

    def __init__(self, path: Path, *, lock_timeout: float = 30.0) -> None:
        self.path = path
        self._lock = FileLock(str(path.with_name(path.name + ".lock")), timeout=lock_timeout)

    @contextlib.contextmanager
    def changing(self, owner: str) -> Iterator[OwnerRecord]:
        with self._lock:
            data = self._load()
            raw = data.get(owner) or {}
            record = OwnerRecord(
                raw.get("limit"),
                {job: Slot(slot["holder"], int(slot["expiresAt"])) for job, slot in (raw.get("slots") or {}).items()},
                {job: Waiter(**waiter) for job, waiter in (raw.get("waiters") or {}).items()},
            )
            yield record
            data[owner] = {
                "limit": record.limit,
                "slots": {job: {"holder": s.holder, "expiresAt": s.expires_at} for job, s in record.slots.items()},
                "waiters": {job: dataclasses.asdict(waiter) for job, waiter in record.waiters.items()},
            }
            self._save(data)

    def _load(self) -> dict[str, Any]:
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):  # none yet, or unreadable: the slots expire anyway
            return {}
        return loaded if isinstance(loaded, dict) else {}

    def _save(self, data: dict[str, Any]) -> None:
        fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp-shares-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.replace(temp, self.path)


class LocalOwnerShares(OwnerShares):
    """Owners' shares for a local store (mixed into it): a :class:`MemoryShareTable` unless given another."""

    _share_owner: str = LOCAL_OWNER
    _share_table: ShareTable | None = None
    notes_waiters = True
    clock: Clock

    def _new_share_table(self) -> ShareTable:
        return MemoryShareTable()

    @property
    def share_owner(self) -> str:
        """The owner whose jobs this store holds (``"local"`` unless named with :meth:`use_share_table`)."""
        return self._share_owner

    @property
    def share_table(self) -> ShareTable:
        """Where this store keeps owners' limits and slots."""
        if self._share_table is None:
            self._share_table = self._new_share_table()
        return self._share_table

    def use_share_table(self, table: ShareTable | None = None, *, owner: str | None = None) -> ShareTable:
        """Keep shares in ``table`` (shared with other stores) and/or hold ``owner``'s jobs; returns the table."""
        if table is not None:
            self._share_table = table
        if owner is not None:
            self._share_owner = validate_owner(owner)
        return self.share_table

    def owner_limit(self, owner: str) -> int | None:
        return self.share_table.read(validate_owner(owner)).limit

    def set_owner_limit(self, owner: str, limit: int | None) -> None:
        checked = None if limit is None else checked_limit(limit)
        with self.share_table.changing(validate_owner(owner)) as record:
            record.limit = checked

    def take_slot(self, request: SlotRequest) -> ShareTaken | None:
        with self.share_table.changing(request.owner) as record:
            limit = request.limit if record.limit is None else record.limit
            admitted = admit_slot(record.slots, dataclasses.replace(request, limit=limit))
            if isinstance(admitted, ShareTaken):
                return admitted
            record.slots = admitted
            record.waiters.pop(request.job_id, None)  # it runs now: nothing to wake it for
            return None

    def give_slot(self, owner: str, job_id: str, holder: str) -> None:
        with self.share_table.changing(owner) as record:
            slot = record.slots.get(job_id)
            if slot is not None and slot.holder == holder:
                del record.slots[job_id]

    def note_waiter(self, note: WaiterNote) -> NoteOutcome:
        with self.share_table.changing(note.owner) as record:
            limited = dataclasses.replace(note, limit=note.limit if record.limit is None else record.limit)
            outcome, record.waiters = note_waiter_in(record.slots, record.waiters, limited)
            return outcome

    def give_slot_to_next(self, owner: str, job_id: str, holder: str, *, pipeline: str | None = None) -> Waiter | None:
        with self.share_table.changing(owner) as record:
            slot = record.slots.get(job_id)
            if slot is None or slot.holder != holder:
                return None
            del record.slots[job_id]
            woken, record.waiters = next_waiter(record.waiters, self.clock(), pipeline)
            return woken

    def running_slots(self, owner: str, now_ms: int) -> int:
        return sum(1 for slot in self.share_table.read(owner).slots.values() if slot.expires_at > now_ms)
