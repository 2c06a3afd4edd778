"""A job's history: the items its writes add, linked newest first from the job's ``history_head``.

A write that never landed may leave an item no head links to; every walk here follows the links
only, so such an item is never seen, and a corrupt loop ends the walk.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..models import Checkpoint, HistoryItem, Job, LogEntry, PhaseRecord
from .requests import Journal


def merge_usage(usage: Mapping[str, float], delta: Mapping[str, float]) -> dict[str, float]:
    """Usage counters with ``delta`` added."""
    merged = dict(usage)
    for key, value in delta.items():
        merged[key] = merged.get(key, 0) + value
    return merged


def action_entry(action: str, actor: str | None, now_ms: int, phase: str | None = None) -> LogEntry:
    """The log entry of an operator action (``action``: "Job paused", say), naming who asked when known.

    A pause, a cancel or a signal names no phase: a store may make it without reading the job.
    """
    who = f" by {actor}" if actor else ""
    return LogEntry(message=f"{action}{who}", timestamp=now_ms, phase=phase, kind="action", actor=actor)


def shown_log(history_log: list[LogEntry], pending: list[LogEntry]) -> list[LogEntry]:
    """A job's log as shown: what its history holds, then the operator actions not yet in it (``pending_log``)."""
    return [*history_log, *pending] if pending else history_log


def history_item(
    token: str,
    prev: str | None,
    journal: Journal,
    record: PhaseRecord | None = None,
    entry: Checkpoint | None = None,
) -> HistoryItem:
    """The history a write adds after ``prev``; ``entry`` is the checkpoint the write set (a phase entered)."""
    return HistoryItem(token=token, prev=prev, log=list(journal.log), record=record, entry=entry)


def entered(
    items: Mapping[str, HistoryItem], head: str | None, phase: str, before: int | None = None
) -> Checkpoint | None:
    """The checkpoint of the newest write in the history ending at ``head`` that entered ``phase``.

    With ``before`` (Unix ms), the newest whose checkpoint was written at or before then.
    """
    for item in history_chain(items, head):
        if item.entry is not None and item.entry.next_phase == phase and entered_by(item.entry, before):
            return item.entry
    return None


def entered_by(entry: Checkpoint, before: int | None) -> bool:
    """Whether ``entry`` was written at or before ``before`` (Unix ms; None: any time)."""
    return before is None or entry.created_at <= before


def waits_to_enter(job: Job, entry: Checkpoint) -> bool:
    """Whether ``entry`` is the job's own checkpoint and no run of its phase has begun from it: the job only waits
    to enter that phase (queued, paused, waiting for a signal, or stopped before it ran).

    A run has begun when the job holds a claim from it (``claimed_at``) or a record of the phase started at or
    after the entry is among ``job.phases`` (a write of the phase's run is the job's newest history).
    """
    current = job.checkpoint
    if current is None or (current.next_phase, current.created_at) != (entry.next_phase, entry.created_at):
        return False
    if job.claimed_at is not None:
        return False
    return not any(record.phase == entry.next_phase and record.started_at >= entry.created_at for record in job.phases)


def history_chain(items: Mapping[str, HistoryItem], head: str | None) -> list[HistoryItem]:
    """The history items linked from ``head``, newest first; a corrupt loop ends the walk."""
    chain: list[HistoryItem] = []
    seen: set[str] = set()
    while head is not None and head in items and head not in seen:
        seen.add(head)
        chain.append(items[head])
        head = items[head].prev
    return chain


def linked_history(items: Mapping[str, HistoryItem], head: str | None) -> tuple[list[LogEntry], list[PhaseRecord]]:
    """The log and phase records of the history ending at ``head``, oldest first.

    Items not reachable from ``head`` (written by a write that never landed)
    are left out; a corrupt loop ends the walk.
    """
    chain = history_chain(items, head)
    chain.reverse()
    log = [entry for item in chain for entry in item.log]
    records = [item.record for item in chain if item.record is not None]
    return log, records
