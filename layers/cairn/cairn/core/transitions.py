"""The rules of every state change, as pure functions from the stored job to the job to write.

Each function is one conditional write: it checks its condition against the
stored job and either returns what to write, or says why not. Memory and file
stores apply these under a lock; the DynamoDB store expresses the same
conditions as condition expressions. Nothing here does I/O.

Every write advances the job's ``sequence`` and carries a unique ``token``. A
request repeated after its response was lost finds its own token on the job
and is recognised as landed instead of being refused (see docs/PROTOCOL.md).

A request admits the values it carries as it is made (:mod:`cairn.core.admission`): a state, a result
or a signal payload that a store could not write, or not read back, never reaches a store.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .admission import MAX_SIGNAL_PAYLOAD_BYTES, check_json
from .errors import ClaimLostError, InvalidInputError, JobNotFoundError, TransitionRefusedError, VersionConflict
from .models import Checkpoint, FanOut, HistoryItem, Job, JobStatus, LogEntry, PhaseOutcome, PhaseRecord, Signal


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
        return self.job.model_copy(update={"log": list(self.history.log), "phases": records})


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
        check_json(self.checkpoint.state, "Checkpoint state")
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
        check_json(self.checkpoint.state, "Checkpoint state")


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

    def __post_init__(self) -> None:
        if self.checkpoint is not None:
            check_json(self.checkpoint.state, "Checkpoint state")
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


def merge_usage(usage: Mapping[str, float], delta: Mapping[str, float]) -> dict[str, float]:
    """Usage counters with ``delta`` added."""
    merged = dict(usage)
    for key, value in delta.items():
        merged[key] = merged.get(key, 0) + value
    return merged


def history_item(
    token: str,
    prev: str | None,
    journal: Journal,
    record: PhaseRecord | None = None,
    entry: Checkpoint | None = None,
) -> HistoryItem:
    """The history a write adds after ``prev``; ``entry`` is the checkpoint the write set (a phase entered)."""
    return HistoryItem(token=token, prev=prev, log=list(journal.log), record=record, entry=entry)


def entered(items: Mapping[str, HistoryItem], head: str | None, phase: str) -> Checkpoint | None:
    """The checkpoint of the newest write in the history ending at ``head`` that entered ``phase``."""
    for item in history_chain(items, head):
        if item.entry is not None and item.entry.next_phase == phase:
            return item.entry
    return None


def history_chain(items: Mapping[str, HistoryItem], head: str | None) -> list[HistoryItem]:
    """The history items linked from ``head``, newest first; a corrupt loop ends the walk."""
    chain: list[HistoryItem] = []
    seen: set[str] = set()
    while head is not None and head in items and head not in seen:
        seen.add(head)
        chain.append(items[head])
        head = items[head].prev
    return chain


def live(job: Job | None, now_ms: int) -> Job | None:
    """The job, or None when it is absent or past its TTL."""
    if job is None or job.is_expired(now_ms):
        return None
    return job


def _landed(job: Job | None, token: str) -> Written | None:
    """The stored job when it is this request's own write (repeated after a lost response)."""
    if job is not None and job.write_token == token:
        return Written(job, landed=True)
    return None


def start(existing: Job | None, request: StartJob) -> Written:
    """Create the job or take it over: a new sequence and no claim fence any worker mid-phase."""
    repeated = _landed(existing, request.token)
    if repeated is not None:
        return repeated
    current = live(existing, request.now_ms)
    if (current.sequence if current else None) != request.expected_sequence:
        raise VersionConflict(request.job_id)
    if current is not None and current.pipeline != request.pipeline:
        raise InvalidInputError(
            f'Job "{request.job_id}" belongs to pipeline "{current.pipeline}", not "{request.pipeline}"'
        )
    fresh = current is None or request.reset_history
    prev = None if fresh or current is None else current.history_head
    history = history_item(request.token, prev, request.journal, entry=request.checkpoint)
    input_changed = current is None or request.input != current.input
    common: dict[str, Any] = {
        "status": JobStatus.WAITING if request.waiting_for is not None else JobStatus.RUNNING,
        "waiting_for": request.waiting_for,
        "wait_deadline": request.wait_deadline,
        "timeout_phase": request.timeout_phase,
        "checkpoint": request.checkpoint,
        "input": request.input,
        "input_token": request.token if input_changed else current.input_token if current else None,
        "updated_at": request.now_ms,
        "expires_at": request.expires_at,
        "ttl_seconds": request.ttl_seconds,
        "write_token": request.token,
        "history_head": request.token,
    }
    if current is None:
        job = Job(
            job_id=request.job_id,
            pipeline=request.pipeline,
            created_at=request.now_ms,
            sequence=(existing.sequence + 1) if existing else 1,
            run=(existing.run + 1) if existing else 1,
            usage=dict(request.journal.usage),
            **common,
        )
        return Written(job, history)
    job = current.model_copy(
        update={
            **common,
            "error": None,
            "result": None,
            "attempt": 1,
            "signal": current.signal if request.resumed else None,
            "fan_out": request.fan_out or (current.fan_out if request.resumed else None),
            "run": current.run + 1 if request.reset_history else current.run,
            "sequence": current.sequence + 1,
            "lease_owner": None,
            "lease_expires_at": None,
            "claim_sequence": None,
            "claimed_at": None,
            "not_before": request.not_before,
            "usage": merge_usage(current.usage, request.journal.usage),
            "log": [],
            "phases": [],
        }
    )
    return Written(job, history)


def claim(existing: Job | None, request: Claim) -> Written | None:
    """The claimed job, or None when it is not claimable (absent, not running, stale, held)."""
    repeated = _landed(existing, request.token)
    if repeated is not None:
        return repeated
    job = live(existing, request.now_ms)
    if job is None or job.pipeline != request.pipeline:
        return None
    if job.status != JobStatus.RUNNING or job.checkpoint is None or not request.admits(job):
        return None
    # a crash report takes over the dead claim: the run it ends started when that claim was made
    taken_over = request.crash is not None and job.lease_owner is not None
    claimed = job.model_copy(
        update={
            "sequence": job.sequence + 1,
            "claim_sequence": job.sequence,
            "claimed_at": (job.claimed_at or request.now_ms) if taken_over else request.now_ms,
            "lease_owner": request.worker,
            "lease_expires_at": request.lease_expires_at,
            "updated_at": request.now_ms,
            "expires_at": request.expires_at,
            "write_token": request.token,
        }
    )
    return Written(claimed)


def check_fence(existing: Job | None, job_id: str, fence: Fence, now_ms: int) -> Job:
    """The stored job, provided ``fence`` is still its current claim; else ClaimLostError."""
    job = live(existing, now_ms)
    if job is None:
        raise ClaimLostError(job_id, "the job is gone or expired")
    if job.lease_owner != fence.worker or job.claim_sequence != fence.claim_sequence:
        raise ClaimLostError(job_id, "another worker or a retry took the job over")
    return job


def save(existing: Job | None, job_id: str, fence: Fence, request: Save) -> Written:
    """Write a mid-phase checkpoint, provided the worker still holds its claim."""
    repeated = _landed(existing, request.token)
    if repeated is not None:
        return repeated
    job = check_fence(existing, job_id, fence, request.now_ms)
    history = history_item(request.token, job.history_head, request.journal) if request.journal.log else None
    saved = job.model_copy(
        update={
            "checkpoint": request.checkpoint,
            "sequence": job.sequence + 1,
            "usage": merge_usage(job.usage, request.journal.usage),
            "lease_expires_at": request.lease_expires_at,
            "updated_at": request.now_ms,
            "expires_at": request.expires_at,
            "write_token": request.token,
            "history_head": request.token if history else job.history_head,
        }
    )
    return Written(saved, history)


def commit_changes(job: Job, request: Commit) -> dict[str, Any]:
    """The fields a commit sets beyond sequence, claim, usage and history (one home for every store).

    A commit that leaves the phase (next, done, sleep, wait) consumes the signal the phase was given;
    a retry or an error keeps it, so that the phase run again reads it again.
    """
    left = {"attempt": 1, "signal": None, "fan_out": None}
    if request.kind == "next":
        return {**left, "checkpoint": request.checkpoint}
    if request.kind == "map":
        return {**left, "checkpoint": request.checkpoint, "fan_out": request.fan_out}
    if request.kind == "release":
        return {"not_before": job.not_before}
    if request.kind == "sleep":
        return {**left, "checkpoint": request.checkpoint, "not_before": request.not_before}
    if request.kind == "wait":
        return {
            **left,
            "checkpoint": request.checkpoint,
            "status": JobStatus.WAITING,
            "waiting_for": request.waiting_for,
            "wait_deadline": request.wait_deadline,
            "timeout_phase": request.timeout_phase,
        }
    if request.kind == "done":
        return {**left, "checkpoint": None, "status": JobStatus.COMPLETE, "result": request.result}
    if request.kind == "retry":
        return {"attempt": job.attempt + 1, "not_before": request.not_before}
    return {"status": JobStatus.ERROR, "error": request.error}  # error, unknown-phase


def commit(existing: Job | None, job_id: str, fence: Fence, request: Commit) -> Written:
    """End a phase run, provided the worker still holds its claim; releases the claim."""
    repeated = _landed(existing, request.token)
    if repeated is not None:
        return repeated
    job = check_fence(existing, job_id, fence, request.now_ms)
    history = None
    if request.kind != "release":
        history = history_item(request.token, job.history_head, request.journal, request.record, entry=request.entry)
    committed = job.model_copy(
        update={
            "not_before": None,
            **commit_changes(job, request),
            "sequence": job.sequence + 1,
            "usage": merge_usage(job.usage, request.journal.usage),
            "lease_owner": None,
            "lease_expires_at": None,
            "claim_sequence": None,
            "claimed_at": None,
            "updated_at": request.now_ms,
            "expires_at": request.expires_at,
            "write_token": request.token,
            "history_head": request.token if history is not None else job.history_head,
        }
    )
    return Written(committed, history)


def pause(existing: Job | None, job_id: str, now_ms: int, token: str) -> Written:
    """Pause a running job: the phase in flight finishes, nothing after it starts."""
    job = live(existing, now_ms)
    if job is None:
        raise JobNotFoundError(job_id)
    if job.status == JobStatus.PAUSED:
        return Written(job, landed=True)
    if job.status != JobStatus.RUNNING:
        raise TransitionRefusedError(f'Job "{job_id}" is {job.status.value}; only a running job can be paused')
    paused = job.model_copy(
        update={
            "status": JobStatus.PAUSED,
            "sequence": job.sequence + 1,
            "updated_at": now_ms,
            "expires_at": job.expires_at_after(now_ms),
            "write_token": token,
        }
    )
    return Written(paused)


def cancel(existing: Job | None, job_id: str, now_ms: int, token: str) -> Written:
    """Cancel a job: fence any worker, keep the checkpoint so a resume is still possible."""
    job = live(existing, now_ms)
    if job is None:
        raise JobNotFoundError(job_id)
    if job.status == JobStatus.CANCELLED:
        return Written(job, landed=True)
    if job.status == JobStatus.COMPLETE:
        raise TransitionRefusedError(f'Job "{job_id}" is already complete; it cannot be cancelled')
    cancelled = job.model_copy(
        update={
            "status": JobStatus.CANCELLED,
            "sequence": job.sequence + 1,
            "lease_owner": None,
            "lease_expires_at": None,
            "claim_sequence": None,
            "claimed_at": None,
            "updated_at": now_ms,
            "expires_at": job.expires_at_after(now_ms),
            "write_token": token,
        }
    )
    return Written(cancelled)


NOT_WAITING: dict[str, Any] = {"waiting_for": None, "wait_deadline": None, "timeout_phase": None}
"""The wait fields of a job that waits for nothing."""


def waits_for(job: Job, name: str) -> bool:
    """Whether ``job`` is waiting for the signal ``name``."""
    return job.status == JobStatus.WAITING and job.waiting_for == name


def deliver_signal(existing: Job | None, job_id: str, request: SignalDelivery) -> Written:
    """Hand a waiting job the signal it waits for: it runs again. Any other signal is refused, stored nowhere."""
    repeated = _landed(existing, request.token)
    if repeated is not None:
        return repeated
    job = live(existing, request.now_ms)
    if job is None:
        raise JobNotFoundError(job_id)
    if not waits_for(job, request.name):
        waiting = f'waits for "{job.waiting_for}"' if job.status == JobStatus.WAITING else f"is {job.status.value}"
        raise TransitionRefusedError(f'Job "{job_id}" {waiting}; no one waits for signal "{request.name}"')
    delivered = job.model_copy(
        update={
            **NOT_WAITING,
            "status": JobStatus.RUNNING,
            "signal": Signal(name=request.name, payload=request.payload, delivered_at=request.now_ms),
            "sequence": job.sequence + 1,
            "updated_at": request.now_ms,
            "expires_at": job.expires_at_after(request.now_ms),
            "write_token": request.token,
        }
    )
    return Written(delivered)


def wait_expired(job: Job, sequence: int, now_ms: int) -> bool:
    """Whether the wait ``job`` entered at ``sequence`` is still on and past its deadline."""
    return (
        job.status == JobStatus.WAITING
        and job.sequence == sequence
        and job.wait_deadline is not None
        and now_ms >= job.wait_deadline
    )


def timeout_message(job: Job) -> str:
    """What a job whose wait timed out says."""
    return f'Timed out waiting for signal "{job.waiting_for}"; a resume waits for it again'


def expire_wait(existing: Job | None, request: WaitExpiry) -> Written | None:
    """Time out a wait past its deadline: continue at its timeout phase, or go to error. None: nothing to end."""
    repeated = _landed(existing, request.token)
    if repeated is not None:
        return repeated
    job = live(existing, request.now_ms)
    if job is None or not wait_expired(job, request.sequence, request.now_ms):
        return None
    common = {
        "signal": None,
        "sequence": job.sequence + 1,
        "updated_at": request.now_ms,
        "expires_at": job.expires_at_after(request.now_ms),
        "write_token": request.token,
    }
    if job.timeout_phase is not None and job.checkpoint is not None:
        checkpoint = Checkpoint(next_phase=job.timeout_phase, state=job.checkpoint.state, created_at=request.now_ms)
        update = {**common, **NOT_WAITING, "status": JobStatus.RUNNING, "checkpoint": checkpoint}
        return Written(job.model_copy(update=update))
    # The wait stays recorded: a resume waits for the signal again rather than running the phase without it.
    return Written(job.model_copy(update={**common, "status": JobStatus.ERROR, "error": timeout_message(job)}))


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
