"""The job item's conditional update, and what the store remembers of each job item it read or wrote.

Every change of a job after its start is one conditional ``UpdateItem`` of its item returning the
new item (or, refused, the old one). The store remembers, per job, the S3 objects the item and its
state refer to (so a write that replaces one removes the old), the item holding its state (so a
replaced save's item is removed: one replaced by the next save, at the save after) and the item's size
(so a large value is offloaded when the item would not hold it).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from ...core import ttl
from ...core.errors import StorageError
from ...core.models import Job, JobStatus
from ..payloads import ITEM_BUDGET
from . import schema
from .attributes import Item, from_item, item_size
from .codec import ItemCodec, state_at
from .entry_codec import kept_object
from .expressions import Expression
from .history import History
from .rereads import read_current
from .table import ConditionFailed, Table, written_by

#: What a write unit covers: the item after the write, 1 KB.
WRITE_UNIT_BYTES = 1024
#: The bytes a write may gain on its way (an expiry renewal sets ``historyRenewBy`` when it is sent again).
RENEWAL_ROOM = 32
#: What a claim sets and its commit removes.
CLAIM_ATTRIBUTES = ("leaseOwner", "leaseExpiresAt", "claimSequence", "claimedAt")
#: Room a started job's item leaves for its first claim's attributes (a worker id of up to 64 characters).
CLAIM_ROOM = 160


class JobItem:
    """Updates of one owner's job items, and the S3 objects and sizes of the last ones seen."""

    def __init__(self, table: Table, history: History) -> None:
        self.table = table
        self.history = history
        self._s3_keys: dict[str, set[str]] = {}
        self._state: dict[str, tuple[str | None, set[str]]] = {}
        self._item_sizes: dict[str, int] = {}
        self._small_items: dict[str, Item] = {}
        #: The job item last read or written whose size is not counted yet (it is, when asked for).
        self._unsized: tuple[str, Item] | None = None
        self._sizing = threading.Lock()
        self._kept_save: dict[str, tuple[str, set[str]]] = {}

    def update(self, job_id: str, expression: Expression, *, now_ms: int, token: str) -> Item:
        """One conditional ``UpdateItem`` of the job item; the new item, or ConditionFailed with the old.

        The write may push the job's expiry up to its ``historyRenewBy`` plus a TTL, where its side
        items still live; past that, the side items are renewed first and the write sent again
        (:mod:`cairn.core.ttl`: at most once per TTL).
        """
        guard = expression.value("renewGuard", ttl.epoch_seconds(now_ms))
        renew_by = expression.name("historyRenewBy")
        expression.require(f"attribute_not_exists({renew_by}) OR {renew_by} >= {guard}")
        try:
            return self._update_once(job_id, expression)
        except ConditionFailed as failed:
            old = failed.old
            if old is None or written_by(old, token) or self.table.expired(old, now_ms):
                raise
            stored = from_item(old)
            kept = stored.get("historyRenewBy")
            if not ttl.renewal_due(kept, now_ms):
                raise
            expression.value("renewGuard", kept)  # the retry holds while no one else renewed in between
            expression.set("historyRenewBy", self.history.renew(job_id, now_ms, int(stored["ttlSeconds"])))
        return self._update_once(job_id, expression)

    def _update_once(self, job_id: str, expression: Expression) -> Item:
        table = self.table
        response = table.call(
            table.client.update_item,
            TableName=table.name,
            Key=table.key(job_id),
            ReturnValues="ALL_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            **expression.update_kwargs(),
        )
        return dict(response["Attributes"])

    def decode_and_remember(self, job_id: str, item: Item) -> Job:
        """The job the item holds, its state read from the item that keeps it; its objects and size remembered.

        A save by the claim holder that lands meanwhile (a pause or a signal does not stop it) may remove
        the state the item names: the job is then read as it now stands (:func:`.rereads.read_current`).
        """

        def decoded(attempt: int) -> Job:
            current = item if attempt == 0 else self._job_item(job_id) or item
            state_item = self.read_state_item(current)
            job = self.table.codec.decode_job(current, state_item=state_item)
            self.remember(job_id, current, state_item)
            return job

        return read_current(decoded)

    def _job_item(self, job_id: str) -> Item | None:
        """The job item as it now stands (one consistent read), or None when there is none."""
        table = self.table
        response = table.call(table.client.get_item, TableName=table.name, Key=table.key(job_id), ConsistentRead=True)
        found = response.get("Item")
        return dict(found) if found else None

    def read_state_item(self, item: Item) -> Item | None:
        """The item holding the job item's state (one consistent read of its ``entry``), or None if it has none."""
        sk = state_at(item)
        if sk is None:
            return None
        table = self.table
        response = table.call(
            table.client.get_item,
            TableName=table.name,
            Key={"pk": item["pk"], "sk": {"S": sk}},
            ConsistentRead=True,
            **Expression().projection_kwargs("pk", "sk", "entry"),
        )
        found = response.get("Item")
        return dict(found) if found else None

    def remember(self, job_id: str, item: Item, state_item: Item | None = None) -> None:
        """Keep the S3 objects, the state's item and the size of the job's item as last read or written."""
        state_keys = ItemCodec.entry_s3_keys(state_item)
        self._state[job_id] = (state_at(item), state_keys)
        kept = self._kept_save.get(job_id)
        self._s3_keys[job_id] = ItemCodec.s3_keys_of(item) | state_keys | (kept[1] if kept else set())
        self._sized(job_id, item)

    def written(self, job_id: str, item: Item, state_keys: set[str] | None = None) -> None:
        """After an update that landed: remove what it no longer refers to, and keep its size.

        ``state_keys`` are the S3 objects of the state the write set (None: the state did not
        change). A save's item the job no longer refers to is deleted with its object; one replaced by
        the next save is kept until the save after (a reader that took the job item just before
        finds it still there, however fast the phase saves), then deleted.
        """
        state_sk = state_at(item)
        old_sk, old_keys = self._state.get(job_id, (None, set()))
        if state_keys is None:
            state_keys = old_keys if old_sk == state_sk else set()
        replaced = old_sk if old_sk is not None and old_sk != state_sk and _is_save(old_sk) else None
        kept = (replaced, old_keys) if replaced is not None and _is_save(state_sk) else None  # a save by a save
        self.release_old_objects(job_id, ItemCodec.s3_keys_of(item) | state_keys | (kept[1] if kept else set()))
        previous = self._kept_save.pop(job_id, None)
        for sk in (previous[0] if previous else None, None if kept else replaced):
            if sk is not None and sk != state_sk:
                self._delete_side_item(item, sk)
        if kept is not None:
            self._kept_save[job_id] = kept
        self._state[job_id] = (state_sk, state_keys)
        self._sized(job_id, item)

    def _sized(self, job_id: str, item: Item) -> None:
        """Keep the job's item as last read or written, its size counted when asked for (:meth:`_settled`).

        The item of another job waiting to be counted is counted now: one item at most waits. A job's
        item replaced by its next before anyone asked is never counted (a claim's and then a commit's
        item, one after the other, count one item).
        """
        with self._sizing:
            waiting = self._unsized
            if waiting is not None and waiting[0] != job_id:
                self._count(*waiting)
            self._item_sizes.pop(job_id, None)
            self._small_items.pop(job_id, None)
            self._unsized = (job_id, item)

    def _settled(self, job_id: str) -> tuple[Item | None, int | None]:
        """The job's item as last read or written while it is small, and that item's size (None: not known).

        The size is counted now if it is still waiting to be; both are of the same item.
        """
        with self._sizing:
            waiting = self._unsized
            if waiting is not None and waiting[0] == job_id:
                self._unsized = None
                self._count(*waiting)
            return self._small_items.get(job_id), self._item_sizes.get(job_id)

    def _count(self, job_id: str, item: Item) -> None:
        """Keep the size of the job's item, and the item itself while it is small."""
        size = self._item_sizes[job_id] = item_size(item)
        if size <= WRITE_UNIT_BYTES:
            self._small_items[job_id] = item

    def fits_one_write_unit(self, job_id: str, expression: Expression, extra: Mapping[str, Any]) -> bool:
        """Whether the job's item, as last read or written, stays within one write unit (1 KB) once ``expression``
        and ``extra`` (top-level attributes it would also set) apply, and once the next claim sets its lease
        again: False when that item was not small."""
        stored, size = self._settled(job_id)
        if stored is None:
            return False
        # the next claim sets its lease again: the item must hold it too
        after = expression.size_after(stored, extra, keeping=CLAIM_ATTRIBUTES, size=size)
        return after + RENEWAL_ROOM <= WRITE_UNIT_BYTES

    def _delete_side_item(self, job_item: Item, sk: str) -> None:
        """Remove an item the job no longer refers to (best effort: its expiry removes it otherwise)."""
        table = self.table
        try:
            table.call(table.client.delete_item, TableName=table.name, Key={"pk": job_item["pk"], "sk": {"S": sk}})
        except StorageError:
            return

    def room(self, job_id: str, seen: Job, expression: Expression) -> int:
        """The bytes a large value may take in an update of the job item, ``expression`` so far included.

        The update is measured as the stored item plus everything it sets, the
        value it replaces counted too (so it fits by DynamoDB's count of the
        item after the write, and by the local emulator's stricter one). The
        stored size is the last item this store read or wrote for the job, or
        else an estimate from ``seen`` that is never smaller than the item.
        """
        _, stored = self._settled(job_id)
        if stored is None:
            stored = self.table.codec.measure(seen)
        return ITEM_BUDGET - stored - expression.size()

    def release_old_objects(self, job_id: str, current: set[str]) -> None:
        """Remove the objects the job's item referred to and no longer does (but for kept entry states)."""
        for key in self._s3_keys.get(job_id, set()) - current:
            if not kept_object(key):
                self.table.payloads.delete(key)
        self._s3_keys[job_id] = set(current)

    def forget_new_objects(self, job_id: str, written: set[str]) -> None:
        """Remove the objects a refused write had put (those the stored item does not refer to)."""
        for key in written - self._s3_keys.get(job_id, set()):
            self.table.payloads.delete(key)


def _is_save(sk: str | None) -> bool:
    """Whether ``sk`` names a save's item (a state saved mid-phase)."""
    return sk is not None and sk.startswith(schema.SAVE_PREFIX)


def set_status(expression: Expression, codec: ItemCodec, job_id: str, status: JobStatus) -> None:
    """Set the job's status, its sweep key (only a running job has one), and what its ``Listing`` entry shows.

    ``statusAt`` and ``statusExpiresAt`` take the ``updatedAt`` and ``expiresAt`` the same write sets, and
    ``listCost`` the ``cost`` it sets (else the item's, :mod:`.cost_figures`): the indexes project them, so only a
    status change writes the indexes (:mod:`cairn.aws.dynamodb.schema`).
    """
    expression.set("status", status.value)
    expression.set_as("statusAt", "updatedAt")
    expression.set_as("statusExpiresAt", "expiresAt")
    # what the CostListing index orders by: the cost this write sets, else the one the item holds
    cost = expression.name(schema.COST_ATTRIBUTE)
    unknown = expression.value("unknownCost", schema.UNKNOWN_COST)
    expression.set_as_or(schema.LISTED_COST_ATTRIBUTE, schema.COST_ATTRIBUTE, f"if_not_exists({cost}, {unknown})")
    expression.remove("statusKey")  # the key of the ByStatus index of earlier releases
    if status == JobStatus.RUNNING:
        expression.set("sweepKey", schema.sweep_key(codec.owner, job_id))
    else:
        expression.remove("sweepKey")
