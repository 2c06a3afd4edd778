"""Reads of a job that cost what they return, whatever the job's length: its view, its history, its log.

- :meth:`HistoryReads.view`: one consistent GetItem of the job item; one Query of its run's newest
  history items (newest first, up to the job item's sequence, a page of about the view's size), the
  chain walked down from ``historyHead``; one GetItem (or BatchGetItem) for the input and, when not on
  the page, the item holding the state. It costs the same after ten writes as after a thousand.
- :meth:`HistoryReads.page`: the job item, then the chain from the cursor's position, newest first.
- :meth:`HistoryReads.log`: the job item, then the run's items oldest first from the cursor's position.

Cursors (:mod:`cairn.core.history_pages`) hold ``{t, s}`` for the history: the token of the next item
and the highest sequence its key can hold; ``{k, o}`` for the log: the key of a linked item and the
offset in its log of the next entry. A job whose history began before history items were ordered is
read the old way where the ordered items do not reach: the chain by GetItem of its ``HIST#`` items, the
log by the partition query, paged in memory (``{o}``, the offset in the whole log, as before).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...core import transitions
from ...core.errors import CorruptJobError, StorageError
from ...core.history_pages import (
    HistoryPage,
    LogPage,
    RecentJob,
    checked_limit,
    cursor_number,
    decode_cursor,
    encode_cursor,
    refused,
)
from ...core.models import HistoryItem, Job, LogEntry
from . import schema
from .attributes import UNREADABLE, Item, from_item, to_item, unreadable_reason
from .codec import pending_actions, state_at
from .history_chain import CursorMissed, Link, NewestFirst, NotOrdered, OldestFirst, chain_of, parse
from .job_item import JobItem
from .rereads import read_current
from .table import Table

_TOKEN = re.compile(r"^[^#]{1,128}$")
#: The most entries of one item's log a log cursor may skip (an item holds far fewer).
_MOST_ENTRIES = 100_000
#: Items read past a page's size, for writes that never landed in between.
_SLACK = 1
_HISTORY_SHAPES = [frozenset({"t", "s"})]
_LOG_KEYED, _LOG_OFFSET = frozenset({"k", "o"}), frozenset({"o"})


@dataclass(frozen=True)
class _ViewRead:
    """What one read of a job view found: the job item, its newest links, the items by key, the older cursor."""

    job_item: Item
    links: list[Link]
    items: dict[str, Item]
    older: str | None


class HistoryReads:
    """The job view, history pages and log pages of one owner's jobs."""

    def __init__(self, table: Table, job_item: JobItem) -> None:
        self.table = table
        self.job_item = job_item

    def _job_item(self, job_id: str) -> Item | None:
        """The job item (one consistent GetItem), or None when absent or expired."""
        table = self.table
        response = table.call(table.client.get_item, TableName=table.name, Key=table.key(job_id), ConsistentRead=True)
        item = response.get("Item")
        if not item or table.expired(item, table.clock()):
            return None
        return dict(item)

    # -- the job as it stands --------------------------------------------------------------------

    def current(self, job_id: str, *, payloads: bool = True) -> Job | None:
        """The job without its log and phase records: the job item, then the items holding its state and input
        (with ``payloads`` False, the job item alone: a state or input it does not keep itself is None).

        A save that lands between the reads may remove the item holding the state the job item named: the
        job is read again (:func:`.rereads.read_current`).
        """
        return read_current(lambda _: self._current(job_id, payloads))

    def _current(self, job_id: str, payloads: bool) -> Job | None:
        job_item = self._job_item(job_id)
        if job_item is None:
            return None
        if not payloads:
            return self.table.codec.decode_job(job_item, with_payloads=False)
        holder = state_at(job_item)
        input_token = job_item.get("inputToken", {}).get("S")
        items = self._get(job_id, [sk for sk in (holder, schema.input_sk(input_token) if input_token else None) if sk])
        state_item = items.get(holder) if holder else None
        job = self.table.codec.decode_job(job_item, state_item=state_item)
        self.job_item.remember(job_id, job_item, state_item)
        return job.model_copy(update={"input": self._input(job, items)})

    # -- the job view ----------------------------------------------------------------------------

    def view(self, job_id: str, history: int) -> RecentJob | None:
        """The job with what its newest ``history`` writes added to its history, and the cursor of the older.

        A save that lands between the reads may remove the item or object holding the state the job
        item named (a save deletes what it replaced once the job item names the new): the view is read
        again (:func:`.rereads.read_current`).
        """
        checked_limit(history)
        return read_current(lambda _: self._view(job_id, history))

    def _view(self, job_id: str, history: int) -> RecentJob | None:
        read = self._view_once(job_id, history)
        if read is None:
            return None
        holder = state_at(read.job_item)
        state_item = read.items.get(holder) if holder else None
        job = self.table.codec.decode_job(read.job_item, state_item=state_item)
        self.job_item.remember(job_id, read.job_item, state_item)
        histories = [link.history for link in reversed(read.links)]
        update = {
            "input": self._input(job, read.items),
            "log": transitions.shown_log([entry for item in histories for entry in item.log], job.pending_log),
            "phases": [item.record for item in histories if item.record is not None],
        }
        return RecentJob(job.model_copy(update=update), read.older)

    def _view_once(self, job_id: str, history: int) -> _ViewRead | None:
        job_item = self._job_item(job_id)
        if job_item is None:
            return None
        run, sequence, head = chain_of(job_item)
        chain = NewestFirst(self.table, job_id, run=run, head=head, until=sequence, page=history + _SLACK)
        links: list[Link] = []
        for link in chain:
            links.append(link)
            if len(links) == history:
                break
        items = {link.sk: link.item for link in links}
        holder = state_at(job_item)
        input_token = job_item.get("inputToken", {}).get("S")
        wanted = [sk for sk in (holder, schema.input_sk(input_token) if input_token else None) if sk]
        items.update(self._get(job_id, [sk for sk in wanted if sk not in items]))
        older = None
        if chain.expected is not None and not chain.missing:
            older = encode_cursor(job_id, run, t=chain.expected, s=chain.until)
        return _ViewRead(job_item, links, items, older)

    def _get(self, job_id: str, sort_keys: list[str]) -> dict[str, Item]:
        """The items of the job with these sort keys that exist (consistent): one GetItem, or one BatchGetItem."""
        table = self.table
        keys = [to_item({"pk": table.codec.pk(job_id), "sk": sk}) for sk in sort_keys]
        if not keys:
            return {}
        if len(keys) == 1:
            found = table.call(table.client.get_item, TableName=table.name, Key=keys[0], ConsistentRead=True)
            items = [found["Item"]] if found.get("Item") else []
        else:
            request: dict[str, Any] = {table.name: {"Keys": keys, "ConsistentRead": True}}
            items = []
            for _ in range(5):
                response = table.call(table.client.batch_get_item, RequestItems=request)
                items += response.get("Responses", {}).get(table.name, [])
                request = dict(response.get("UnprocessedKeys") or {})
                if not request:
                    break
            if request:
                raise StorageError("DynamoDB left part of a read unprocessed; try again", retryable=True)
        return {str(item["sk"].get("S", "")): dict(item) for item in items}

    def _input(self, job: Job, by_sk: dict[str, Item]) -> Any:
        if job.input_token is None:
            return None
        sk = schema.input_sk(job.input_token)
        item = by_sk.get(sk)
        if item is None:
            return None
        where = f"{self.table.codec.pk(job.job_id)}/{sk}"
        try:
            return self.table.payloads.decode(from_item(item)["input"], where=where)
        except UNREADABLE as exc:
            raise CorruptJobError(where, unreadable_reason(exc)) from exc

    # -- history, newest first -------------------------------------------------------------------

    def page(self, job_id: str, cursor: str | None, limit: int) -> HistoryPage | None:
        """What up to ``limit`` writes added, newest first, from ``cursor`` (the newest write without one)."""
        checked_limit(limit)
        job_item = self._job_item(job_id)
        if job_item is None:
            return None
        run, sequence, head = chain_of(job_item)
        until = sequence
        if cursor is not None:
            position = decode_cursor(cursor, job_id, run, "history", _HISTORY_SHAPES)
            head, until = position["t"], cursor_number(position, "s", "history", most=sequence)
            if not isinstance(head, str) or not _TOKEN.fullmatch(head):
                raise refused("history")
        chain = NewestFirst(self.table, job_id, run=run, head=head, until=until, page=limit + _SLACK, projected=True)
        items: list[HistoryItem] = []
        for link in chain:
            items.append(link.history.model_copy(update={"entry": None}))
            if len(items) == limit:
                break
        if cursor is not None and not items and chain.missing:
            raise refused("history")  # it names no item of this job's history
        following = None
        if chain.expected is not None and not chain.missing:
            following = encode_cursor(job_id, run, t=chain.expected, s=chain.until)
        return HistoryPage(items, following)

    # -- the log, oldest first -------------------------------------------------------------------

    def log(self, job_id: str, cursor: str | None, limit: int) -> LogPage | None:
        """Up to ``limit`` log entries, oldest first, from ``cursor`` (the first entry without one)."""
        checked_limit(limit)
        job_item = self._job_item(job_id)
        if job_item is None:
            return None
        run, sequence, head = chain_of(job_item)
        position: dict[str, Any] = {}
        if cursor is not None:
            position = decode_cursor(cursor, job_id, run, "log", [_LOG_KEYED, _LOG_OFFSET])
        if cursor is not None and "k" not in position:  # a cursor of a log paged in memory
            return self._log_in_memory(job_id, position, limit)
        start, skip = None, 0
        if "k" in position:
            start, skip = position["k"], cursor_number(position, "o", "log", most=_MOST_ENTRIES)
            if not isinstance(start, str) or not start.startswith(schema.run_history_prefix(run)):
                raise refused("log")
            if schema.history_sequence(start) is None or not _TOKEN.fullmatch(schema.history_token(start)):
                raise refused("log")
        page = max(min(limit, 100), 10)
        chain = OldestFirst(self.table, job_id, run=run, head=head, until=sequence, start=start, page=page)
        try:
            found = self._log_forward(job_id, run, chain, skip, limit)
        except CursorMissed:
            raise refused("log") from None
        except NotOrdered:  # the run's history began before history items were ordered: read it whole
            return self._log_in_memory(job_id, position, limit)
        if found.cursor is None:  # the last page: the operator actions not yet in the history come last
            return LogPage(transitions.shown_log(found.entries, pending_actions(job_item)), None)
        return found

    @staticmethod
    def _log_forward(job_id: str, run: int, chain: OldestFirst, skip: int, limit: int) -> LogPage:
        entries: list[LogEntry] = []
        links = iter(chain)
        for link in links:
            log = link.history.log
            begin, skip = (skip, 0) if link.sk == chain.start else (0, 0)
            if begin > len(log):
                raise refused("log")
            if len(entries) == limit:  # the page is full: it ends before this item's entries
                if begin < len(log):
                    return LogPage(entries, encode_cursor(job_id, run, k=link.sk, o=begin))
                continue
            taken = log[begin : begin + limit - len(entries)]
            entries.extend(taken)
            if begin + len(taken) < len(log):
                return LogPage(entries, encode_cursor(job_id, run, k=link.sk, o=begin + len(taken)))
        return LogPage(entries, None)

    def _log_in_memory(self, job_id: str, position: dict[str, Any], limit: int) -> LogPage | None:
        """A page of the log read whole (the partition query), as before history items were ordered."""
        items = list(self.table.query_partition(job_id))
        job_item = next((item for item in items if item["sk"].get("S") == schema.JOB_SK), None)
        if job_item is None or self.table.expired(job_item, self.table.clock()):
            return None
        run, _, head = chain_of(job_item)
        history: dict[str, HistoryItem] = {}
        for item in items:
            sk = str(item["sk"].get("S", ""))
            if schema.is_history_sk(sk):
                linked = parse(item)
                history.setdefault(linked.token, linked)
        chain = list(reversed(transitions.history_chain(history, head)))
        log = [entry for item in chain for entry in item.log]
        start = 0
        if "k" in position:  # a cursor of the ordered items, for a chain that turned out not to be all ordered
            token, offset = schema.history_token(str(position["k"])), int(position["o"])
            before = next((index for index, item in enumerate(chain) if item.token == token), None)
            if before is None or offset > len(chain[before].log):
                raise refused("log")
            start = sum(len(item.log) for item in chain[:before]) + offset
        elif "o" in position:
            start = cursor_number(position, "o", "log", most=len(log))
        entries = log[start : start + limit]
        end = start + len(entries)
        return LogPage(entries, encode_cursor(job_id, run, o=end) if end < len(log) else None)
