"""Owners' shares in the job table (:mod:`cairn.core.share_port`): one item per owner.

- Share item: ``pk = SHARE#<owner>``, ``sk = SHARE``: ``ownerLimit`` (the owner's override, when one
  is kept), ``slots`` (JSON: ``{jobId: [holder, expiresAt]}``, the live slots and maybe a few expired
  ones), ``waiters`` (JSON: ``{jobId: [pipeline, phase, sequence, createdAt, expiresAt]}``, the notes of
  at most :data:`~cairn.core.share_port.MAX_WAITERS` waiting jobs) and ``version``. It has no
  ``expiresAt`` (an owner's limit lasts), no ``owner`` and no ``sweepKey``: no listing or sweep reads it.

A take, a give or a note is a read and one conditional ``UpdateItem`` on the version read (a write that
lost the race reads again); "fewer than the limit live slots" is therefore checked and written in one
atomic step, however many workers of the owner race, and a give takes the note of the job it wakes in the
same step as its slot. A limit's change moves the version too, so a take in flight reads the new limit.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from typing import Any

from ...core.errors import StorageError
from ...core.ids import validate_owner
from ...core.share_port import (
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
from .attributes import Item, from_item, to_item
from .table import ConditionFailed, Table

SHARE_PREFIX = "SHARE#"
SHARE_SK = "SHARE"
ATTEMPTS = 50
"""How often a take or give reads again after losing its race, before it gives up (retryable)."""


def share_key(owner: str) -> Item:
    """The key of ``owner``'s share item."""
    return to_item({"pk": f"{SHARE_PREFIX}{owner}", "sk": SHARE_SK})


def decode_slots(values: dict[str, Any]) -> dict[str, Slot]:
    """The slots the item's ``slots`` attribute holds (none when it has none or it cannot be read)."""
    try:
        raw = json.loads(values.get("slots") or "{}")
        return {job: Slot(str(slot[0]), int(slot[1])) for job, slot in raw.items()}
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return {}  # every slot expires with its claim: an unreadable set is as good as an empty one


def encode_slots(slots: dict[str, Slot]) -> str:
    """The ``slots`` attribute for ``slots``."""
    return json.dumps({job: [slot.holder, slot.expires_at] for job, slot in slots.items()}, separators=(",", ":"))


def decode_waiters(values: dict[str, Any]) -> dict[str, Waiter]:
    """The notes the item's ``waiters`` attribute holds (none when it has none or it cannot be read)."""
    try:
        raw = json.loads(values.get("waiters") or "{}")
        return {
            job: Waiter(job, str(note[0]), str(note[1]), int(note[2]), int(note[3]), int(note[4]))
            for job, note in raw.items()
        }
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return {}  # every note lapses: an unreadable set only means the waiting jobs look again on their own


def encode_waiters(waiters: dict[str, Waiter]) -> str:
    """The ``waiters`` attribute for ``waiters``."""
    return json.dumps(
        {job: [w.pipeline, w.phase, w.sequence, w.created_at, w.expires_at] for job, w in waiters.items()},
        separators=(",", ":"),
    )


class DynamoDBOwnerShares(OwnerShares):
    """Owners' shares for :class:`~cairn.aws.dynamodb.DynamoDBStorage` (mixed into it), in its table."""

    _table: Table
    notes_waiters = True

    @property
    def share_owner(self) -> str:
        """The owner this store is bound to."""
        return self._table.owner

    def _read(self, owner: str) -> dict[str, Any]:
        table = self._table
        response = table.call(table.client.get_item, TableName=table.name, Key=share_key(owner), ConsistentRead=True)
        item = response.get("Item")
        return from_item(item) if item else {}

    def _write(self, owner: str, values: dict[str, Any], version: int, updates: dict[str, Any]) -> bool:
        """Set ``updates`` (None: remove) if the item is still at ``version``; False when it moved."""
        table = self._table
        names = {"#version": "version"}
        expression_values: dict[str, Any] = {":next": version + 1}
        sets, removes = ["#version = :next"], []
        for index, (attribute, value) in enumerate(updates.items()):
            names[f"#a{index}"] = attribute
            if value is None:
                removes.append(f"#a{index}")
            else:
                sets.append(f"#a{index} = :v{index}")
                expression_values[f":v{index}"] = value
        condition = "attribute_not_exists(#version)"
        if "version" in values:
            condition = "#version = :seen"
            expression_values[":seen"] = version
        update = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        try:
            table.call(
                table.client.update_item,
                TableName=table.name,
                Key=share_key(owner),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=to_item(expression_values),
            )
        except ConditionFailed:
            return False
        return True

    def _change(self, owner: str, change: Any) -> Any:
        """Read, ``change(values, slots)`` -> (updates or None, answer), write on the version read; again if moved."""
        for attempt in range(ATTEMPTS):
            values = self._read(owner)
            updates, answer = change(values, decode_slots(values))
            if updates is None or self._write(owner, values, int(values.get("version", 0)), updates):
                return answer
            time.sleep(random.uniform(0, 0.005 * (attempt + 1)))
        raise StorageError(f'The share of owner "{owner}" is too contended; try again', retryable=True)

    def owner_limit(self, owner: str) -> int | None:
        kept = self._read(validate_owner(owner)).get("ownerLimit")
        return None if kept is None else int(kept)

    def set_owner_limit(self, owner: str, limit: int | None) -> None:
        checked = None if limit is None else checked_limit(limit)
        self._change(validate_owner(owner), lambda values, slots: ({"ownerLimit": checked}, None))

    def take_slot(self, request: SlotRequest) -> ShareTaken | None:
        def change(values: dict[str, Any], slots: dict[str, Slot]) -> tuple[dict[str, Any] | None, ShareTaken | None]:
            kept = values.get("ownerLimit")
            limit = request.limit if kept is None else int(kept)
            # the owner's limit may have changed since it was read: the one read with the slots holds
            admitted = admit_slot(slots, dataclasses.replace(request, limit=limit))
            if isinstance(admitted, ShareTaken):
                return None, admitted
            updates = {"slots": encode_slots(admitted)}
            waiters = decode_waiters(values)
            if waiters.pop(request.job_id, None) is not None:  # it runs now: nothing to wake it for
                updates["waiters"] = encode_waiters(waiters)
            return updates, None

        answer: ShareTaken | None = self._change(request.owner, change)
        return answer

    def give_slot(self, owner: str, job_id: str, holder: str) -> None:
        def change(values: dict[str, Any], slots: dict[str, Slot]) -> tuple[dict[str, Any] | None, None]:
            slot = slots.get(job_id)
            if slot is None or slot.holder != holder:
                return None, None
            del slots[job_id]
            return {"slots": encode_slots(slots)}, None

        self._change(owner, change)

    def note_waiter(self, note: WaiterNote) -> NoteOutcome:
        def change(values: dict[str, Any], slots: dict[str, Slot]) -> tuple[dict[str, Any] | None, NoteOutcome]:
            kept = values.get("ownerLimit")
            limit = note.limit if kept is None else int(kept)
            waiters = decode_waiters(values)
            outcome, noted = note_waiter_in(slots, waiters, dataclasses.replace(note, limit=limit))
            return (None if noted == waiters else {"waiters": encode_waiters(noted)}), outcome

        answer: NoteOutcome = self._change(note.owner, change)
        return answer

    def give_slot_to_next(self, owner: str, job_id: str, holder: str, *, pipeline: str | None = None) -> Waiter | None:
        now = self._table.clock()

        def change(values: dict[str, Any], slots: dict[str, Slot]) -> tuple[dict[str, Any] | None, Waiter | None]:
            slot = slots.get(job_id)
            if slot is None or slot.holder != holder:
                return None, None
            del slots[job_id]
            woken, waiters = next_waiter(decode_waiters(values), now, pipeline)
            return {"slots": encode_slots(slots), "waiters": encode_waiters(waiters)}, woken

        answer: Waiter | None = self._change(owner, change)
        return answer

    def running_slots(self, owner: str, now_ms: int) -> int:
        return sum(1 for slot in decode_slots(self._read(owner)).values() if slot.expires_at > now_ms)
