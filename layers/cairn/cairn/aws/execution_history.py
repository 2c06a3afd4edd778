"""Keeping each Step Functions execution's history far below its limit of 25,000 events.

A job hands itself on to a fresh execution of the same machine (continue-as-new) once it has moved
:data:`SEQUENCES_PER_EXECUTION` sequences past the one its execution started at. A map's items run in a
distributed ``Map`` state, a child execution per slot; a slot ends after :data:`ITEMS_PER_SLOT` items, and the
job's next advance (the phase after the map finding items left) starts the rest in a fresh map run. The parent's
history then grows with the map's rounds, a child's with its slot's items in one round: neither with the map.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

HISTORY_EVENT_LIMIT = 25_000
"""Step Functions fails an execution whose history would pass this many events (``States.Runtime``)."""

SEQUENCES_PER_EXECUTION = 400
"""An execution hands its job on once the job's sequence is this far past the one it started at.

A phase moves the sequence by 2 (claim, commit) in about 7 events; the costliest loop (a failed task retried
six times, the failure recorded, a backoff waited, the job resolved again) takes under 60 events a sequence:
400 sequences stay under 24,000 events even then, and about 1,500 events for plain phases."""

ITEMS_PER_SLOT = 500
"""A slot of a map (one child execution) runs at most this many items (about 11 events each) before it ends."""

_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def hand_off(job_id: str, *, since: Any, ran_at: int | None, scheduled: dict[str, Any] | None) -> dict[str, Any] | None:
    """The fresh execution an advance's reply asks the state machine to start, or None to go on in this one.

    ``since`` is the sequence the execution was started at (its input's, None for a job's first execution),
    ``ran_at`` the one this advance ran at, ``scheduled`` the next advance the phase asked for (its wire form).
    Without ``since`` the execution hands on each time the sequence crosses a multiple of the limit.
    """
    if not scheduled or not isinstance(scheduled.get("sequence"), int):
        return None
    reached: int = scheduled["sequence"]
    start = since if isinstance(since, int) and not isinstance(since, bool) else None
    if start is not None:
        due = reached - start >= SEQUENCES_PER_EXECUTION
    else:
        due = ran_at is not None and reached // SEQUENCES_PER_EXECUTION > ran_at // SEQUENCES_PER_EXECUTION
    if not due:
        return None
    return {"name": execution_name(job_id, reached), "sequence": reached, "delay": scheduled.get("delay", 0)}


def execution_name(job_id: str, sequence: int) -> str:
    """The name of the execution a job is handed on to at ``sequence`` (the state machine adds its parent's hash).

    Made of the job and the sequence, so that a start retried after a lost response names the same execution;
    at most 47 characters, leaving 33 for ``-`` and the parent execution's MD5 (32 hex) within Step Functions' 80.
    """
    digest = hashlib.sha256(job_id.encode()).hexdigest()[:8]
    return f"{_NAME_UNSAFE.sub('_', job_id)[:24]}-{digest}-s{sequence}"[:47]


def slot_goes_on(item: int, successor: int) -> bool:
    """Whether a map slot runs ``successor`` after ``item`` in the same child execution.

    Slot ``s`` of a map ``c`` items wide runs items ``s, s + c, s + 2c, ...``; it ends each time the next would
    cross a multiple of ``ITEMS_PER_SLOT * c``, so every slot ends after ``ITEMS_PER_SLOT`` items at most. A
    retry of the same item (``successor == item``) goes on.
    """
    width = successor - item
    if width <= 0:
        return True
    span = ITEMS_PER_SLOT * width
    return successor // span == item // span
