"""The requests a state change is made of, and what it writes: one frozen value per conditional write.

A request admits the values it carries as it is made (:mod:`cairn.core.admission`): a state, a result
or a signal payload that a store could not write, or not read back, never reaches a store. Each
carries a unique write ``token``, so that a request repeated after its response was lost is
recognised as landed (:func:`landed`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..admission import MAX_SIGNAL_PAYLOAD_BYTES, check_json
from ..models import Checkpoint, FanOut, HistoryItem, Job, JobStatus, LogEntry, PhaseOutcome, PhaseRecord
from .changes import changed


def admit_checkpoint(checkpoint: Checkpoint) -> None:
    """Admit a checkpoint's state, unless it was admitted when the checkpoint was made (it keeps its JSON)."""
    if checkpoint.state_json is None:
        check_json(checkpoint.state, "Checkpoint state")


def new_token() -> str:
    """A fresh write token."""
    return uuid.uuid4().hex[:16]


@dataclass(frozen=True)
class Fence:
    """The claim a worker holds: its name and the sequence the claim was made at."""

    worker: str
    claim_sequence: int


@dataclass(frozen=True)
class Journal:
    """What a phase recorded since its last write: log entries and usage counters."""

    log: tuple[LogEntry, ...] = ()
    usage: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Written:
    """What a transition writes: the job (without history) and the history item it adds, if any.

    ``landed`` is True when the stored job already is this request's write (a
    repeat after a lost response): nothing is to be written again.
    """

    job: Job
    history: HistoryItem | None = None
    landed: bool = False

    def returned(self) -> Job:
        """The job as a transition returns it: its ``log`` and ``phases`` hold what this write added."""
        if self.history is None:
            return self.job
        records = [self.history.record] if self.history.record is not None else []
        return changed(self.job, log=list(self.history.log), phases=records)


@dataclass(frozen=True)
class StartJob:
    """Create a job, or take over an existing one with a new checkpoint.

    ``seen`` is the job as the caller read it (None: there was none). If the
    stored job's sequence differs from it, someone wrote in between and the
    caller reads again. ``resumed``: a resume of the same checkpoint keeps the signal the phase
    was given and the map in progress; ``waiting_for`` (with its deadline and timeout phase) starts the job waiting.
    ``fan_out``: the map a rerun from that map's ``then`` phase takes up again (its item records kept).
    """

    job_id: str
    pipeline: str
    checkpoint: Checkpoint
    now_ms: int
    expires_at: int
    seen: Job | None
    ttl_seconds: int
    input: Any = None
    reset_history: bool = False
    journal: Journal = Journal()
    waiting_for: str | None = None
    wait_deadline: int | None = None
    timeout_phase: str | None = None
    resumed: bool = False
    not_before: int | None = None
    fan_out: FanOut | None = None
    token: str = field(default_factory=new_token)

    def __post_init__(self) -> None:
        admit_checkpoint(self.checkpoint)
        check_json(self.input, "Job input")

    @property
    def expected_sequence(self) -> int | None:
        """The sequence the stored job must still have (None: no live job)."""
        current = live(self.seen, self.now_ms)
        return current.sequence if current else None


@dataclass(frozen=True)
class CrashReport:
    """A report that the invocation given the advance at ``sequence`` died; ``worker`` is its request id.

    It names one claim: the one that invocation made (held by ``worker``, or,
    when the request id is unknown, made at ``sequence``), or, when the
    invocation died before claiming, the unclaimed job still at ``sequence``.
    A report for any other claim is stale.
    """

    worker: str | None = None
    sequence: int | None = None

    @property
    def takeover_worker(self) -> str:
        """The worker name the report's own claim uses: the same for every delivery of the report."""
        return f"crash:{self.worker}" if self.worker else f"crash:seq-{self.sequence}"

    def names(self, job: Job) -> bool:
        """Whether ``job``'s current claim (or lack of one) is the one this report is about."""
        if job.lease_owner is not None:
            if self.worker is not None:
                return job.lease_owner in (self.worker, self.takeover_worker)
            return self.sequence is not None and job.claim_sequence == self.sequence
        return self.sequence is not None and job.sequence == self.sequence


@dataclass(frozen=True)
class Claim:
    """Take the job for one run of ``phase`` until ``lease_expires_at`` (ms).

    Only a running job of ``pipeline`` can be claimed. With ``sequence`` the
    job must still be at that sequence (the message was issued for it); a live
    claim blocks the claim. With ``crash`` the claim named by the report is
    taken over instead, live or not.
    """

    job_id: str
    pipeline: str
    phase: str | None
    worker: str
    now_ms: int
    lease_expires_at: int
    expires_at: int
    sequence: int | None = None
    crash: CrashReport | None = None
    token: str = field(default_factory=new_token)

    def admits(self, job: Job) -> bool:
        """Whether the stored, running ``job`` may be claimed by this request."""
        assert job.checkpoint is not None
        if self.phase is not None and job.checkpoint.next_phase != self.phase:
            return False
        if self.crash is not None:
            return self.crash.names(job)
        if self.sequence is not None and job.sequence != self.sequence:
            return False
        return not job.has_live_claim(self.now_ms)


@dataclass(frozen=True)
class Save:
    """A mid-phase checkpoint by the claim holder; renews its lease.

    ``seen`` is the job as the worker last wrote it (a store that writes only
    the changed fields merges usage and links history from it).
    """

    seen: Job
    checkpoint: Checkpoint
    now_ms: int
    lease_expires_at: int
    expires_at: int
    journal: Journal = Journal()
    token: str = field(default_factory=new_token)

    def __post_init__(self) -> None:
        admit_checkpoint(self.checkpoint)


@dataclass(frozen=True)
class Commit:
    """The end of a phase run by the claim holder; releases the claim.

    ``next`` writes ``checkpoint``; ``done`` clears it and keeps ``result``;
    ``retry`` bumps the attempt and records when its backoff ends
    (``not_before``: the sweep leaves the job alone until then); ``error``
    records ``error``. A retry or an error never writes the checkpoint: the
    stored one stays as it is. ``sleep`` writes ``checkpoint`` and, in
    ``not_before``, when the job wakes; ``wait`` writes ``checkpoint`` and sets
    the job ``waiting`` for ``waiting_for`` until ``wait_deadline``; ``map``
    writes ``checkpoint`` (the phase after the items) and ``fan_out``;
    ``release`` gives the claim back and changes nothing else (a map's next
    phase claimed before its items finished), adding no history.
    """

    seen: Job
    kind: PhaseOutcome
    now_ms: int
    expires_at: int
    record: PhaseRecord
    journal: Journal = Journal()
    checkpoint: Checkpoint | None = None
    result: Any = None
    error: str | None = None
    not_before: int | None = None
    waiting_for: str | None = None
    wait_deadline: int | None = None
    timeout_phase: str | None = None
    fan_out: FanOut | None = None
    token: str = field(default_factory=new_token)
    share_wait: str | None = None
    """A ``release`` of a run past its owner's share: why the job waits (:mod:`cairn.features.owner_share`)."""

    def __post_init__(self) -> None:
        if self.checkpoint is not None:
            admit_checkpoint(self.checkpoint)
        check_json(self.result, "Result")

    @property
    def entry(self) -> Checkpoint | None:
        """The checkpoint of the phase the commit enters (next, sleep, wait, map), kept in its history."""
        return self.checkpoint if self.kind in ENTERING else None

    @property
    def status(self) -> JobStatus | None:
        """The status the commit sets (None: the status stays as it is)."""
        if self.kind == "done":
            return JobStatus.COMPLETE
        if self.kind == "wait":
            return JobStatus.WAITING
        return JobStatus.ERROR if self.kind in ("error", "unknown-phase") else None


@dataclass(frozen=True)
class SignalDelivery:
    """Deliver signal ``name`` with ``payload`` to a job waiting for it; the job runs its next phase."""

    name: str
    payload: Any
    now_ms: int
    token: str = field(default_factory=new_token)
    actor: str | None = None
    """Who sent the signal (the API caller), for the job's log; None when not known."""

    def __post_init__(self) -> None:
        check_json(self.payload, "Signal payload", max_bytes=MAX_SIGNAL_PAYLOAD_BYTES)


@dataclass(frozen=True)
class WaitExpiry:
    """End the wait the job entered at ``sequence`` once its deadline has passed: its timeout phase, or error."""

    sequence: int
    now_ms: int
    token: str = field(default_factory=new_token)


ENTERING: tuple[PhaseOutcome, ...] = ("next", "sleep", "wait", "map")
"""The commits that enter a phase: they write the checkpoint."""


def live(job: Job | None, now_ms: int) -> Job | None:
    """The job, or None when it is absent or past its TTL."""
    if job is None or job.is_expired(now_ms):
        return None
    return job


def landed(job: Job | None, token: str) -> Written | None:
    """The stored job when it is this request's own write (repeated after a lost response)."""
    if job is not None and job.write_token == token:
        return Written(job, landed=True)
    return None
