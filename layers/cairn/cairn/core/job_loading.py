"""A pulled job made into a stored one: the job and its linked history, as :meth:`Storage.put_job` takes them.

The history is the file's writes, oldest first, each a :class:`~cairn.core.models.HistoryItem` linked to the
one before it, then one more: the mark that the job was loaded ("Loaded from FILE, pulled from API at
TIME"), which enters the job's checkpoint. The job's sequence counts those writes, its tokens are fresh,
its expiry runs from now: every read and write path treats it as any other job.
"""

from __future__ import annotations

from datetime import UTC, datetime

from . import ttl
from .job_file import JobFile
from .models import HistoryItem, Job, LogEntry
from .transitions import new_token

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
