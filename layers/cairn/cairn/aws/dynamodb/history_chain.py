"""Walking a job's history chain a page of items at a time, newest first or oldest first.

The items of one run sort by the sequence their writes give the job (``H#<run>#<sequence>#<token>``,
:mod:`.schema`), and each names its predecessor (``prev``); the job item's ``historyHead`` names the
newest. An item no head reaches (a write that never landed) is skipped by both walks:

- :class:`NewestFirst` reads the run's items down from a sequence, newest first, and follows the chain
  from a token through ``prev``: an item read that is not the one the chain names next is passed over.
  It reads on (``LastEvaluatedKey``) only while the item it looks for is not among those read. A
  ``prev`` with no ordered item in the run is an item written before history items were ordered
  (``HIST#<token>``): one GetItem reads it, and the chain goes on from there.
- :class:`OldestFirst` reads the run's items up from a sequence: an item is linked when a later item
  names it (or it is the head), and one that was not named before an item naming a later one is of a
  write that never landed (a write's predecessor is always the head it read, which a landed write made
  the head: so every ``prev`` names a linked item, and the chain's sequences only rise). A chain that
  leaves the ordered items (it began before they were) is :class:`NotOrdered`: the caller reads it whole.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ...core.errors import CorruptJobError
from ...core.models import HistoryItem
from . import schema
from .attributes import UNREADABLE, Item, from_item, location, to_item, unreadable_reason
from .table import Table


class NotOrdered(Exception):
    """The run's chain passes through items that are not ordered ones (written before they were)."""


class CursorMissed(Exception):
    """The item a walk was to start at is not there (a cursor that no walk returned)."""


@dataclass(frozen=True)
class Link:
    """One item of the chain: its sort key, the item as stored, and the history it holds."""

    sk: str
    item: Item
    history: HistoryItem


def parse(item: Item) -> HistoryItem:
    """The history an item holds; CorruptJobError names an unreadable one."""
    try:
        return HistoryItem.model_validate_json(from_item(item)["history"])
    except UNREADABLE as exc:
        raise CorruptJobError(location(item), unreadable_reason(exc)) from exc


def chain_of(job_item: Item) -> tuple[int, int, str | None]:
    """A job item's run, sequence and history head; CorruptJobError when they cannot be read."""
    try:
        values = from_item(job_item)
        head = values.get("historyHead")
        return int(values["run"]), int(values["sequence"]), head if isinstance(head, str) else None
    except UNREADABLE as exc:
        raise CorruptJobError(location(job_item), unreadable_reason(exc)) from exc


def _sk(item: Item) -> str:
    return str(item["sk"].get("S", ""))


class _RunQuery:
    """The ordered history items of one run between two sort keys, in one direction: ``page`` items, then
    ``more`` at a time (what a walk reads past its page is usually one item, the one after it)."""

    def __init__(
        self,
        table: Table,
        job_id: str,
        low: str,
        high: str,
        *,
        page: int,
        forward: bool,
        projected: bool,
        more: int | None = None,
    ) -> None:
        self.table, self.job_id = table, job_id
        self.low, self.high = low, high
        self.page, self.forward, self.projected = page, forward, projected
        self.more = more or page
        self._start: dict[str, Any] | None = None
        self.exhausted = False

    def next_page(self) -> list[Item]:
        """The next items (an empty list once none is left)."""
        if self.exhausted:
            return []
        table = self.table
        values = {":pk": table.codec.pk(self.job_id), ":low": self.low, ":high": self.high}
        kwargs: dict[str, Any] = {
            "TableName": table.name,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :low AND :high",
            "ExpressionAttributeValues": to_item(values),
            "ConsistentRead": True,
            "ScanIndexForward": self.forward,
            "Limit": self.more if self._start else self.page,
        }
        if self.projected:  # a page of history needs no item's state (it is billed the same)
            kwargs["ProjectionExpression"] = "#pk, #sk, #history"
            kwargs["ExpressionAttributeNames"] = {"#pk": "pk", "#sk": "sk", "#history": "history"}
        if self._start:
            kwargs["ExclusiveStartKey"] = self._start
        response = table.call(table.client.query, **kwargs)
        self._start = response.get("LastEvaluatedKey")
        self.exhausted = not self._start
        return [dict(item) for item in response.get("Items", [])]


class NewestFirst:
    """The linked items of a run's chain from ``head``, newest first, among items of sequence ``until`` or less.

    After each item it yields, ``expected`` is the token of the next one (None: the chain's start was
    reached) and ``until`` the highest sequence that one's key may hold: together, where a later walk
    goes on (a cursor). ``missing`` is True when the chain stopped at a token that names no item.
    ``strict`` False ends the chain at an unreadable item instead of raising CorruptJobError.
    """

    def __init__(
        self,
        table: Table,
        job_id: str,
        *,
        run: int,
        head: str | None,
        until: int,
        page: int,
        projected: bool = False,
        strict: bool = True,
    ) -> None:
        self.table, self.job_id = table, job_id
        self.expected, self.until = head, until
        self.missing = False
        self.strict = strict
        low, high = schema.run_history_prefix(run), schema.run_history_until(run, until)
        self._query = _RunQuery(table, job_id, low, high, page=page, forward=False, projected=projected)
        self._read: dict[str, Item] = {}

    def __iter__(self) -> Iterator[Link]:
        seen: set[str] = set()
        while self.expected is not None and self.expected not in seen:
            token = self.expected
            seen.add(token)
            found = self._find(token)
            if found is None:
                self.missing = True
                return
            try:
                history = parse(found)
            except CorruptJobError:
                if self.strict:
                    raise
                return  # an unreadable item ends the chain there
            sk = _sk(found)
            sequence = schema.history_sequence(sk)
            if sequence is not None:
                self.until = sequence - 1
            self.expected = history.prev
            yield Link(sk, found, history)

    def _find(self, token: str) -> Item | None:
        while token not in self._read and not self._query.exhausted:
            for item in self._query.next_page():
                self._read.setdefault(schema.history_token(_sk(item)), item)
        if token in self._read:
            return self._read.pop(token)
        return self._legacy(token)

    def _legacy(self, token: str) -> Item | None:
        """The item ``token`` wrote before history items were ordered (``HIST#<token>``), or None."""
        table = self.table
        key = to_item({"pk": table.codec.pk(self.job_id), "sk": schema.legacy_history_sk(token)})
        response = table.call(table.client.get_item, TableName=table.name, Key=key, ConsistentRead=True)
        found = response.get("Item")
        return dict(found) if found else None


@dataclass
class _Read:
    sk: str
    token: str
    item: Item
    prev: str | None
    history: HistoryItem | None


class OldestFirst:
    """The linked items of a run's chain, oldest first, from ``start`` (a linked item's key) or the run's first.

    Raises :class:`CursorMissed` when ``start`` is not there, :class:`NotOrdered` when the chain does
    not lie within the run's ordered items (its first item has a predecessor, an item's predecessor is
    not the item before it, or the chain does not end at ``head``), and CorruptJobError for a linked
    item it cannot read.
    """

    def __init__(
        self, table: Table, job_id: str, *, run: int, head: str | None, until: int, start: str | None, page: int
    ) -> None:
        self.head, self.start = head, start
        self._last: str | None = None  # the token of the link yielded last
        low = start if start is not None else schema.run_history_prefix(run)
        high = schema.run_history_until(run, until)
        self._query = _RunQuery(
            table, job_id, low, high, page=page, forward=True, projected=True, more=max(page // 5, 5)
        )

    def _items(self) -> Iterator[_Read]:
        while not self._query.exhausted:
            for item in self._query.next_page():
                sk = _sk(item)
                try:
                    history: HistoryItem | None = parse(item)
                except CorruptJobError:
                    history = None  # its predecessor is unknown: it proves nothing, and fails if linked
                prev = history.prev if history is not None else None
                yield _Read(sk, schema.history_token(sk), item, prev, history)

    def __iter__(self) -> Iterator[Link]:
        pending: deque[_Read] = deque()
        position: dict[str, int] = {}
        linked: set[str] = set()
        if self.start is not None:
            linked.add(schema.history_token(self.start))
        for read in self._items():
            if not position and self.start is not None and read.sk != self.start:
                raise CursorMissed(self.start)
            position[read.token] = len(position)
            pending.append(read)
            if read.prev is not None and read.prev in position:
                linked.add(read.prev)  # named: a linked item, and so is none before it that nothing named
                cut = position[read.prev]
                while pending and position[pending[0].token] <= cut:
                    decided = pending.popleft()
                    if decided.token in linked:
                        yield self._checked(decided)
        if not position and self.start is not None:
            raise CursorMissed(self.start)
        for read in pending:
            if read.token in linked or read.token == self.head:
                yield self._checked(read)
        if self._last != self.head:
            raise NotOrdered(f"the chain does not end at its head {self.head!r} among the run's ordered items")

    def _checked(self, read: _Read) -> Link:
        """``read`` as the next link, after checking that it follows the one before."""
        history = read.history if read.history is not None else parse(read.item)  # raises: unreadable
        if self._last is not None:
            if read.prev != self._last:
                raise NotOrdered(f"{read.sk} follows {read.prev!r}, not the item before it")
        elif self.start is None and read.prev is not None:
            raise NotOrdered(f"the run's first ordered item {read.sk} follows {read.prev!r}")
        self._last = read.token
        return Link(read.sk, read.item, history)
