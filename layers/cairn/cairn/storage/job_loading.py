"""A pulled job made into a stored one: the job and its linked history, as :meth:`Storage.put_job` takes them.

The history is the file's writes, oldest first, each a :class:`~cairn.core.models.HistoryItem` linked to the
one before it, then one more: the mark that the job was loaded ("Loaded from FILE, pulled from API at
TIME"), which enters the job's checkpoint. The job's sequence counts those writes, its tokens are fresh,
its expiry runs from now: every read and write path treats it as any other job.

A job file is an input from outside: every store's ``put_job`` first checks what it is given
(:func:`checked_whole_job`), and the file reader checks the same id and usage rules as it reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from ..core import ttl
from ..core.admission import checked_usage
from ..core.errors import InvalidInputError
from ..core.ids import validate_job_id
from ..core.models import HistoryItem, Job, LogEntry
from ..core.transitions import new_token
from .job_file import JobFile

LOADED_PREFIX = "Loaded from "
"""How the log entry that marks a loaded job begins."""


def loaded_message(source: str, pulled: JobFile) -> str:
    """The log line that marks a loaded job: which file, which API, when it was pulled."""
    when = datetime.fromtimestamp(pulled.pulled_at / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    redacted = f" (redacted: {', '.join(pulled.redacted)})" if pulled.redacted else ""
    return f"{LOADED_PREFIX}{source}, pulled from {pulled.pulled_from} at {when}{redacted}"


def loaded_job(pulled: JobFile, *, source: str, now_ms: int, ttl_seconds: int = 86400) -> tuple[Job, list[HistoryItem]]:
    """The job to store for ``pulled`` (read from ``source``) and its history items, oldest first."""
    items: list[HistoryItem] = []
    for write in pulled.history:
        prev = items[-1].token if items else None
        items.append(HistoryItem(token=new_token(), prev=prev, log=write.log, record=write.record, entry=write.entry))
    job = pulled.job
    mark = LogEntry(message=loaded_message(source, pulled), timestamp=now_ms, kind="action", level="info")
    head = new_token()
    items.append(HistoryItem(token=head, prev=items[-1].token if items else None, log=[mark], entry=job.checkpoint))
    stored = Job(
        job_id=job.job_id,
        pipeline=job.pipeline,
        status=job.status,
        checkpoint=job.checkpoint,
        error=job.error,
        attempt=job.attempt,
        result=job.result,
        input=job.input,
        usage=dict(job.usage),
        created_at=job.created_at,
        updated_at=now_ms,
        expires_at=ttl.expires_at(now_ms, ttl_seconds),
        ttl_seconds=ttl_seconds,
        sequence=len(items),
        run=1,
        waiting_for=job.waiting_for,
        write_token=head,
        history_head=head,
        input_token=head,
        history_renew_by=ttl.renew_by(ttl.side_expires_at(now_ms, ttl_seconds), ttl_seconds),
    )
    return stored, items


def checked_history(job: Job, history: Sequence[HistoryItem]) -> None:
    """InvalidInputError unless ``history`` is one chain, oldest first, ending at the job's ``history_head``."""
    prev: str | None = None
    for item in history:
        if item.prev != prev:
            raise InvalidInputError(f'The history of job "{job.job_id}" is not one chain, oldest first')
        prev = item.token
    if prev != job.history_head:
        raise InvalidInputError(f'The history of job "{job.job_id}" does not end at the job\'s history head')


def checked_whole_job(job: Job, history: Sequence[HistoryItem]) -> None:
    """What every store's ``put_job`` checks first: InvalidInputError, before anything is written, unless the id is
    one the API takes (:func:`~cairn.core.ids.validate_job_id`), each usage figure finite and non-negative, and the
    history one chain ending at the job's head."""
    validate_job_id(job.job_id)
    checked_usage(job.usage)
    checked_history(job, history)
