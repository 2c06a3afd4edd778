"""Each owner's job counts by status, kept up to date from the table's stream rather than re-read.

- Counts item: ``pk = COUNTS#<owner>``, ``sk = COUNTS``, with ``since`` (Unix ms, set once when the item is
  made), one number per status (``n_<status>``; ``n_unreadable`` for a status that is not one), ``changedAt``
  (when the newest change was applied) and the marks of the stream batches applied (``m_<batch>``, below). It
  has no ``expiresAt``, ``owner``, ``status`` or ``sweepKey``: it lasts, and no listing, count or sweep reads it.

**What is counted.** The counts hold every job item of the owner whose ``createdAt`` is at or after ``since``, at
its status now: each stream record of a job item moves its job from the status its old image had (if that image
was counted) to the status its new image has (if that one is), and a removal (a delete, or DynamoDB's TTL)
takes it out. The jobs created before ``since`` (made before the stream ran) are counted by reading their
``Listing`` entries (``createdAt < since`` is a key condition, so nothing newer is read), until TTL has removed
the last of them: then ``oldDone`` is set and a count is one read of the counts item.

**Exactly once.** Lambda delivers a failed batch of a stream shard again from the same record, and a batch may
then be longer (records arrived since). Each owner's update names its batch by its first record for that owner
(``m_<digest of its eventID>``), storing how many of the owner's records it applied; the update is conditional on
that mark, so a batch delivered again applies only the records after those. Marks are removed ten minutes after
they were written (a batch is retried within seconds), at most :data:`MAX_MARKS` kept. Each owner's update is one
``UpdateItem`` of an item under 2 KB: 1 to 2 write units a batch, whatever its size.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...core.errors import StorageError
from ...core.models import JobStatus
from .attributes import Item, to_item
from .table import ConditionFailed, Table

logger = logging.getLogger(__name__)

COUNTS_PREFIX = "COUNTS#"
COUNTS_SK = "COUNTS"
UNREADABLE = "unreadable"
"""The count of jobs whose stored status is not one cairn knows."""
MARK_KEPT_MS = 10 * 60 * 1000
"""How long a batch's mark is kept: a failed batch is delivered again within seconds."""
MAX_MARKS = 24
"""The most marks kept (the oldest go first): one per stream shard in flight is what a retry needs."""
ATTEMPTS = 5
"""How often an owner's update is tried against a concurrent one before the batch fails (and comes again)."""


@dataclass(frozen=True)
class Image:
    """What a job item's stream image says of its count: when the job was created, and its status."""

    created_at: int
    status: str


@dataclass(frozen=True)
class StatusChange:
    """One stream record of a job item: its old and new image (None: there was none, or there is none now)."""

    event_id: str
    before: Image | None
    after: Image | None


def counts_key(owner: str) -> Item:
    """The key of the owner's counts item."""
    return to_item({"pk": f"{COUNTS_PREFIX}{owner}", "sk": COUNTS_SK})


def count_name(status: str) -> str:
    """The attribute that counts the jobs in ``status`` (one cairn does not know counts as unreadable)."""
    known = status in {s.value for s in JobStatus}
    return f"n_{status if known else UNREADABLE}"


def moves(changes: Sequence[StatusChange], since: int) -> Counter[str]:
    """How each count changes with ``changes``: a job counts while its image's ``created_at`` is at least ``since``."""
    delta: Counter[str] = Counter()
    for change in changes:
        if change.before is not None and change.before.created_at >= since:
            delta[count_name(change.before.status)] -= 1
        if change.after is not None and change.after.created_at >= since:
            delta[count_name(change.after.status)] += 1
    return Counter({name: n for name, n in delta.items() if n})


def _mark_name(event_id: str) -> str:
    return "m_" + hashlib.blake2b(event_id.encode(), digest_size=8).hexdigest()


@dataclass
class _Known:
    """What an owner's counts item held when last read or written: ``since`` and the marks (name: written at)."""

    since: int
    marks: dict[str, int] = field(default_factory=dict)


def _applied(mark: str) -> int:
    """How many of its owner's records a stored mark says its batch applied."""
    return int(mark.partition(":")[2])


def _number(item: Item, name: str) -> int | None:
    value = item.get(name, {}).get("N") if isinstance(item.get(name), dict) else None
    return int(value) if isinstance(value, str) and value.lstrip("-").isdigit() else None


def _marks(item: Item) -> dict[str, tuple[int, int]]:
    """The marks an item holds: name -> (written at, records applied)."""
    marks = {}
    for name, value in item.items():
        text = value.get("S") if name.startswith("m_") and isinstance(value, dict) else None
        at, _, applied = str(text).partition(":")
        if text and at.isdigit() and applied.isdigit():
            marks[name] = (int(at), int(applied))
    return marks


class StatusCounts:
    """Applies stream records of job items to their owners' counts (one per process, kept warm: ``since`` is read
    once an owner)."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self._known: dict[str, _Known] = {}

    def apply(self, owner: str, changes: Sequence[StatusChange]) -> None:
        """Apply one batch's records of ``owner``'s jobs, in order, once (see the module's "Exactly once")."""
        if not changes:
            return
        known = self._known.get(owner) or self._read(owner)
        mark = _mark_name(changes[0].event_id)
        seen: str | None = None  # the batch's mark as stored, when it came before
        for _attempt in range(ATTEMPTS):
            try:
                item = self._update(owner, known, mark, changes, seen)
            except ConditionFailed:  # the batch came before, or the counts item is gone: read what is stored
                known = self._read(owner)
                seen = self._stored_mark(owner, mark)
                if seen is not None and _applied(seen) >= len(changes):
                    return  # every record of this batch for the owner is counted already
                continue
            marks = _marks(item)
            self._known[owner] = _Known(known.since, {name: at for name, (at, _) in marks.items()})
            return
        raise StorageError(f"The counts of {owner} kept changing under {ATTEMPTS} updates", retryable=True)

    def _update(self, owner: str, known: _Known, mark: str, changes: Sequence[StatusChange], seen: str | None) -> Item:
        """One conditional update: the moves of the records the batch's mark (``seen``) has not applied, the
        batch's mark, old marks removed."""
        now = self.table.clock()
        delta = moves(changes[_applied(seen) if seen else 0 :], known.since)
        names = {"#mark": mark, "#changed": "changedAt", "#since": "since"}
        values: dict[str, Any] = {":mark": f"{now}:{len(changes)}", ":now": now}
        adds = []
        for index, (name, n) in enumerate(sorted(delta.items())):
            names[f"#c{index}"], values[f":c{index}"] = name, n
            adds.append(f"#c{index} :c{index}")
        stale = sorted(known.marks, key=known.marks.__getitem__)
        old = [name for name in stale if known.marks[name] < now - MARK_KEPT_MS]
        old += [name for name in stale[: max(0, len(stale) + 1 - MAX_MARKS)] if name not in old]
        old = [name for name in old if name != mark]
        removes = []
        for index, name in enumerate(old):
            names[f"#r{index}"] = name
            removes.append(f"#r{index}")
        expression = "SET #mark = :mark, #changed = :now" + (" ADD " + ", ".join(adds) if adds else "")
        expression += " REMOVE " + ", ".join(removes) if removes else ""
        if seen is not None:
            condition = "attribute_exists(#since) AND #mark = :seen"
            values[":seen"] = seen
        else:
            condition = "attribute_exists(#since) AND attribute_not_exists(#mark)"
        result = self.table.call(
            self.table.client.update_item,
            TableName=self.table.name,
            Key=counts_key(owner),
            UpdateExpression=expression,
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=to_item(values),
            ReturnValues="ALL_NEW",
        )
        attributes: Item = result.get("Attributes", {})
        return attributes

    def _read(self, owner: str) -> _Known:
        """The owner's counts item as stored (made now, with ``since`` now, when there is none)."""
        item = self._get(owner)
        if item is None:
            with contextlib.suppress(ConditionFailed):  # another batch made it first
                self.table.call(
                    self.table.client.put_item,
                    TableName=self.table.name,
                    Item={**counts_key(owner), **to_item({"since": self.table.clock()})},
                    ConditionExpression="attribute_not_exists(pk)",
                )
            item = self._get(owner)
            if item is None:
                raise StorageError(f"The counts item of {owner} was made and then not found", retryable=True)
        since = _number(item, "since")
        if since is None:
            raise StorageError(f"The counts item of {owner} has no since", retryable=False)
        known = _Known(since, {name: at for name, (at, _) in _marks(item).items()})
        self._known[owner] = known
        return known

    def _stored_mark(self, owner: str, mark: str) -> str | None:
        """The batch's mark as stored (None: the batch has not been applied)."""
        item = self._get(owner) or {}
        text = item[mark].get("S") if isinstance(item.get(mark), dict) else None
        return text if isinstance(text, str) and mark in _marks({mark: item[mark]}) else None

    def _get(self, owner: str) -> Item | None:
        result = self.table.call(
            self.table.client.get_item, TableName=self.table.name, Key=counts_key(owner), ConsistentRead=True
        )
        item: Item | None = result.get("Item")
        return item


@dataclass(frozen=True)
class KeptCounts:
    """An owner's counts item as read: the count of each status (``UNREADABLE`` apart), since when jobs are counted,
    and whether every job created before that is gone (``old_done``)."""

    counts: dict[str, int]
    since: int
    old_done: bool


def read_kept(table: Table) -> KeptCounts | None:
    """The owner's counts item (one eventually consistent read, half a read unit); None when there is none yet."""
    result = table.call(table.client.get_item, TableName=table.name, Key=counts_key(table.owner))
    item: Item | None = result.get("Item")
    since = _number(item, "since") if item else None
    if item is None or since is None:
        return None
    counts = {name[2:]: n for name in item if name.startswith("n_") and (n := _number(item, name)) is not None}
    if any(n < 0 for n in counts.values()):
        logger.warning("The kept counts of %s went below zero: %s", table.owner, counts)
    return KeptCounts({name: max(0, n) for name, n in counts.items()}, since, "oldDone" in item)


def note_old_done(table: Table) -> None:
    """Record that no job created before ``since`` is left: counts then read the counts item alone."""
    table.call(
        table.client.update_item,
        TableName=table.name,
        Key=counts_key(table.owner),
        UpdateExpression="SET oldDone = :yes",
        ConditionExpression="attribute_exists(since)",
        ExpressionAttributeValues=to_item({":yes": True}),
    )
