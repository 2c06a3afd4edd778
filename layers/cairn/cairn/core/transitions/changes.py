"""A job changed by a transition rule, field by field, with names mypy checks: never a string-keyed update.

``job.model_copy(update={...})`` takes any key: a misspelt field is stored silently and the intended one left as it
was. :func:`changed` takes the fields as keywords typed by :class:`JobChange` (mypy refuses a name that is not a
field of :class:`~cairn.core.models.Job`, or a value of the wrong type) and checks the names again when it runs.
tests/unit/test_job_changes.py keeps :class:`JobChange` field for field the same as the model.
"""

from __future__ import annotations

from typing import Any, TypedDict, Unpack

from ..models import Checkpoint, FanOut, Job, JobStatus, LogEntry, PhaseRecord, Signal


class JobChange(TypedDict, total=False):
    """The fields of :class:`~cairn.core.models.Job` a transition may set, each with its type."""

    job_id: str
    pipeline: str
    status: JobStatus
    checkpoint: Checkpoint | None
    error: str | None
    error_type: str | None
    error_phase: str | None
    attempt: int
    result: Any
    input: Any
    usage: dict[str, int | float]
    phases: list[PhaseRecord]
    log: list[LogEntry]
    created_at: int
    updated_at: int
    expires_at: int
    ttl_seconds: int
    sequence: int
    run: int
    lease_owner: str | None
    lease_expires_at: int | None
    claim_sequence: int | None
    claimed_at: int | None
    not_before: int | None
    waiting_for: str | None
    wait_deadline: int | None
    timeout_phase: str | None
    signal: Signal | None
    fan_out: FanOut | None
    write_token: str | None
    history_head: str | None
    pending_log: list[LogEntry]
    input_token: str | None
    history_renew_by: int | None
    share_wait: str | None


_FIELDS = frozenset(Job.model_fields)


def changed(job: Job, **fields: Unpack[JobChange]) -> Job:
    """``job`` with ``fields`` set (a copy; ``job`` is left as it is); a name that is no field is a TypeError."""
    unknown = fields.keys() - _FIELDS
    if unknown:
        raise TypeError(f"Job has no field {sorted(unknown)}")
    return job.model_copy(update=fields)
