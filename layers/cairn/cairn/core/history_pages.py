"""A job's history read a part at a time: the job with its newest history, then older history, a page at a time.

- :class:`RecentJob`: the job with what its newest writes added (the job view); ``older`` continues.
- :class:`HistoryPage`: what older writes added, newest first, and the cursor of the next page.
- :class:`LogPage`: the log, oldest first, and the cursor of the next page.

A cursor is opaque to its reader: URL-safe base64 of a JSON object with the job's id (``j``), its run
(``r``) and the store's position in its history. The history of a run only grows, so a position stays
where it was; a full retry starts a new run with a new history, and a cursor of an older run is
refused, as is one of another job or altered (:class:`~cairn.core.errors.InvalidInputError`).

A store that keeps the whole job as one read (the defaults of :class:`~cairn.core.storage_port.Storage`)
pages it in memory with :func:`history_page_of` and :func:`log_page_of`; an item store reads only the
page (:mod:`cairn.aws.dynamodb.history_reads`).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from .errors import InvalidInputError
from .models import HistoryItem, Job, LogEntry

#: How many of the newest writes a job view holds the history of (their log entries and phase records).
VIEW_HISTORY = 10
#: How many writes a page of history holds unless asked for fewer.
HISTORY_PAGE = 50
#: How many log entries a page of the log holds unless asked for fewer.
LOG_PAGE = 200
#: The longest cursor a store reads (one it returns is a few hundred characters).
MAX_CURSOR_CHARS = 4096


@dataclass(frozen=True)
class RecentJob:
    """A job with its newest history: ``job.log`` and ``job.phases`` hold what its newest writes added.

    ``older`` is the cursor of the history before them (read it with ``Storage.history_page``), None
    when ``job`` holds the whole history. Every other field of ``job`` is as ``Storage.get_job`` reads it.
    """

    job: Job
    older: str | None = None


@dataclass(frozen=True)
class HistoryPage:
    """What some of a job's writes added to its history, newest first; ``cursor`` reads on to older writes.

    Each item is one write's log entries and phase record (its ``entry`` left out); ``cursor`` is
    None when the history begins with this page.
    """

    items: list[HistoryItem]
    cursor: str | None


@dataclass(frozen=True)
class LogPage:
    """One page of a job's log, oldest first, and the cursor of the next (None: the log ends here, for now)."""

    entries: list[LogEntry]
    cursor: str | None


def checked_limit(limit: int) -> int:
    """``limit`` if it is a whole number above 0; else InvalidInputError."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInputError(f"A page holds at least one item: limit {limit!r} is not a whole number above 0")
    return limit


def refused(what: str) -> InvalidInputError:
    """The error for a cursor this job's ``what`` ("log", "history") did not return."""
    return InvalidInputError(f"Invalid cursor: it was not returned by this job's {what}")


def encode_cursor(job_id: str, run: int, **position: Any) -> str:
    """The opaque cursor of a position in the history of ``job_id``'s run ``run``."""
    text = json.dumps({"j": job_id, "r": run, **position}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(text).decode().rstrip("=")


def decode_cursor(cursor: str, job_id: str, run: int, what: str, shapes: Collection[frozenset[str]]) -> dict[str, Any]:
    """The position a cursor of ``job_id``'s run ``run`` holds: its fields but ``j`` and ``r``, one of ``shapes``.

    A cursor that is not one (not base64 JSON, too long, of another shape or another job) is refused,
    one of an earlier run with its own message (the job was started over since).
    """
    if not isinstance(cursor, str) or not 0 < len(cursor) <= MAX_CURSOR_CHARS:
        raise refused(what)
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = json.loads(base64.b64decode(padded.encode("ascii"), altchars=b"-_", validate=True))
    except (ValueError, binascii.Error, RecursionError) as exc:
        raise refused(what) from exc
    if not isinstance(values, dict) or values.get("j") != job_id:
        raise refused(what)
    kept = values.get("r")
    if type(kept) is not int or not 0 <= kept <= run:
        raise refused(what)
    position = {name: value for name, value in values.items() if name not in ("j", "r")}
    if frozenset(position) not in shapes:
        raise refused(what)
    if kept != run:
        raise InvalidInputError(f"Invalid cursor: the job was started over since; read its {what} from the start")
    return position


def cursor_number(position: dict[str, Any], name: str, what: str, *, most: int) -> int:
    """The whole number ``position[name]``, from 0 to ``most``; else the cursor is refused."""
    value = position.get(name)
    if type(value) is not int or not 0 <= value <= most:
        raise refused(what)
    return value


def history_items_of(job: Job) -> list[HistoryItem]:
    """The history of a job read whole, as items, oldest first (for a store that gives only the whole job).

    Each phase record makes one item, with the log entries written up to its end (as the commit that
    wrote it adds them); the entries after the last record make the last item. The log and the
    records, read through the items in order, are the job's own, each entry once.
    """
    items: list[HistoryItem] = []
    start = 0
    for record in job.phases:
        end = start
        while end < len(job.log) and job.log[end].timestamp <= record.ended_at:
            end += 1
        prev = items[-1].token if items else None
        items.append(HistoryItem(token=str(len(items)), prev=prev, log=job.log[start:end], record=record))
        start = end
    if start < len(job.log):
        prev = items[-1].token if items else None
        items.append(HistoryItem(token=str(len(items)), prev=prev, log=job.log[start:]))
    return items


def history_page_of(job: Job, *, cursor: str | None, limit: int) -> HistoryPage:
    """A page of the history of a job read whole: up to ``limit`` items newest first, from ``cursor``.

    The cursor holds how many items (counted from the oldest) are still to be read: a history that
    grew since leaves that count where it was.
    """
    items = history_items_of(job)
    end = len(items)
    if cursor is not None:
        position = decode_cursor(cursor, job.job_id, job.run, "history", [frozenset({"n"})])
        end = cursor_number(position, "n", "history", most=len(items))
    start = max(0, end - checked_limit(limit))
    page = list(reversed(items[start:end]))
    return HistoryPage(page, encode_cursor(job.job_id, job.run, n=start) if start > 0 else None)


def log_page_of(job: Job, *, cursor: str | None, limit: int) -> LogPage:
    """Up to ``limit`` entries of the log of a job read whole, from ``cursor`` (from the first without one)."""
    start = 0
    if cursor is not None:
        position = decode_cursor(cursor, job.job_id, job.run, "log", [frozenset({"o"})])
        start = cursor_number(position, "o", "log", most=len(job.log))
    entries = job.log[start : start + checked_limit(limit)]
    end = start + len(entries)
    return LogPage(list(entries), encode_cursor(job.job_id, job.run, o=end) if end < len(job.log) else None)
