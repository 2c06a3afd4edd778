"""Pages of a job's log for ``GET /jobs/{id}/log?limit=&cursor=``: oldest first, a cursor to the next page.

A cursor is opaque to its reader: base64 of ``{j, r, o}``, the job's id, its run and the offset of the
next entry. The log of a run only grows, so an offset stays where it was; a full retry starts a new run
with a new log, and a cursor of the old run is refused (400), as is one of another job or altered.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from ..core.errors import InvalidInputError
from ..core.models import Job, LogEntry

#: The most entries one page of a log holds.
MAX_LOG_PAGE = 1000


@dataclass(frozen=True)
class LogPage:
    """One page of a job's log, and the cursor of the next (None: this page ends the log as it stands)."""

    entries: list[LogEntry]
    cursor: str | None


def log_page(job: Job, *, limit: int, cursor: str | None) -> LogPage:
    """Up to ``limit`` entries of the job's log from ``cursor`` (from the first without one)."""
    start = 0 if cursor is None else _offset(cursor, job)
    entries = job.log[start : start + limit]
    end = start + len(entries)
    return LogPage(list(entries), _encode(job, end) if end < len(job.log) else None)


def _encode(job: Job, offset: int) -> str:
    text = json.dumps({"j": job.job_id, "r": job.run, "o": offset}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(text).decode().rstrip("=")


def _offset(cursor: str, job: Job) -> int:
    refused = InvalidInputError("Invalid cursor: it was not returned by this job's log")
    try:
        values = json.loads(base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True))
    except (ValueError, binascii.Error, RecursionError) as exc:
        raise refused from exc
    if not isinstance(values, dict) or set(values) != {"j", "r", "o"} or values["j"] != job.job_id:
        raise refused
    offset, run = values["o"], values["r"]
    if type(offset) is not int or type(run) is not int or not 0 <= run <= job.run:
        raise refused
    if run != job.run:
        raise InvalidInputError("Invalid cursor: the job was started over since; read its log from the start")
    if not 0 <= offset <= len(job.log):
        raise refused
    return offset
