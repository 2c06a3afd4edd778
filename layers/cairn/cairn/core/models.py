"""The data cairn stores: checkpoints, jobs, log entries and phase records.

On the wire (API, DynamoDB, files) the seed's camelCase names are used:
``nextPhase``, ``state``, ``createdAt``. In Python the names are snake_case.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr
from pydantic.alias_generators import to_camel

from . import ttl
from .admission import Admitted


class WireModel(BaseModel):
    """Base for stored models: camelCase on the wire, snake_case in Python."""

    # defer_build: each model's validator is built on its first use, not at import (a cold start uses few of them).
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, defer_build=True)

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict stored or sent for this model."""
        return self.model_dump(mode="json", by_alias=True)


MAX_MESSAGE_CHARS = 16_000
MAX_ERROR_CHARS = 4_000


def clip_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (a stored item has a size limit; a log line should not reach it).

    A lone surrogate (from an exception's message, say) becomes "?": every store can write the text back.
    """
    text = text.encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 14] + " …[truncated]"


def _clip(limit: int) -> AfterValidator:
    return AfterValidator(lambda text: clip_text(text, limit))


Message = Annotated[str, _clip(MAX_MESSAGE_CHARS)]
ErrorText = Annotated[str, _clip(MAX_ERROR_CHARS)]


class JobStatus(StrEnum):
    """Where a job stands."""

    IDLE = "idle"
    RUNNING = "running"
    WAITING = "waiting"
    PAUSED = "paused"
    COMPLETE = "complete"
    ERROR = "error"
    CANCELLED = "cancelled"


class RetryMode(StrEnum):
    """How ``run_pipeline`` treats an existing checkpoint."""

    RESUME = "resume"
    FULL = "full"
    FROM = "from"


class PhaseRun(WireModel):
    """What a checkpoint saved mid-phase keeps of the run of its phase (:mod:`cairn.core.steps`).

    ``key`` is the run's own random id, saved the first time the phase asks for an idempotency key, so that every
    retry and resume of this run of the phase derives the same keys; ``steps`` are the results of the
    ``ctx.step`` calls made so far, by name.
    """

    key: str | None = None
    steps: dict[str, Any] = Field(default_factory=dict)


class Checkpoint(WireModel):
    """The seed's checkpoint: the phase to run next, the state it gets, and when it was written."""

    next_phase: str
    state: Any = None
    created_at: int = Field(description="Unix time in milliseconds")
    state_version: int | None = Field(
        default=None,
        exclude_if=lambda version: version is None,  # version 1 is not written: stored as before versions
        description="The pipeline's state_version the state was saved with (absent: 1; see cairn.core.migrations)",
    )
    phase_run: PhaseRun | None = Field(
        default=None,
        exclude_if=lambda run: run is None,  # only a phase that keeps a step or a key writes it: stored as before
        description="Saved mid-phase: the id of this run of the phase (its idempotency keys derive from it) and the "
        "results of its steps (absent: none yet)",
    )
    _admitted: Admitted | None = PrivateAttr(default=None)

    @classmethod
    def of_admitted(
        cls, next_phase: str, admitted: Admitted, created_at: int, state_version: int | None = None
    ) -> Checkpoint:
        """A checkpoint of an admitted state, which keeps the JSON text the state was admitted as."""
        checkpoint = cls(
            next_phase=next_phase, state=admitted.value, created_at=created_at, state_version=state_version
        )
        checkpoint._admitted = admitted
        return checkpoint

    def __eq__(self, other: object) -> bool:
        """Equal when the seed's fields are: phase, state, time and version (the admitted JSON text it may keep and
        the run of the phase it continues, ``phase_run``, are not part of its value)."""
        if not isinstance(other, Checkpoint):
            return NotImplemented
        mine = (self.next_phase, self.created_at, self.state, self.state_version)
        return mine == (other.next_phase, other.created_at, other.state, other.state_version)

    __hash__ = WireModel.__hash__

    @property
    def state_json(self) -> str | None:
        """The compact JSON the state was admitted as (None: not admitted, or the state was replaced since)."""
        admitted = self._admitted
        return admitted.text if admitted is not None and admitted.value is self.state else None


EntryKind = Literal["log", "observation", "decision", "insight", "error", "action"]
LogLevel = Literal["debug", "info", "warning", "error"]


class LogEntry(WireModel):
    """One line of a job's log, or one annotation (observation, decision, insight, error)."""

    message: Message
    level: LogLevel = "info"
    phase: str | None = None
    timestamp: int
    kind: EntryKind = "log"
    reason: Message | None = None
    actor: str | None = Field(
        default=None,
        exclude_if=lambda actor: actor is None,  # most entries name no one: stored as they were before
        description='Who asked for an operator action (kind "action"): the API caller, when known',
    )


class Lesson(WireModel):
    """An insight a job recorded (``ctx.insight``), kept in its pipeline's memory for later jobs (``ctx.recall``)."""

    text: Message
    job_id: str
    phase: str | None = None
    recorded_at: int
    """When the insight was recorded (Unix ms)."""


PhaseOutcome = Literal["next", "done", "error", "retry", "unknown-phase", "sleep", "wait", "map", "release"]


MAX_TYPE_CHARS = 200


class Failure(WireModel):
    """Why an attempt failed: the exception's type and a bounded traceback (:mod:`cairn.core.failures`)."""

    type: Annotated[str, _clip(MAX_TYPE_CHARS)] = Field(
        description="The exception's class: its name for a builtin, module.Name otherwise"
    )
    traceback: Annotated[str, _clip(8_000)] = Field(
        default="",
        description="The exception and its causes, the frames of the user's code (most recent call last), then "
        "cairn's and libraries' frames in brief; no local or environment variable",
    )


class PhaseRecord(WireModel):
    """One finished run of a phase: when it started and ended, and how it ended."""

    phase: str
    attempt: int
    started_at: int
    ended_at: int
    outcome: PhaseOutcome
    next_phase: str | None = None
    error: ErrorText | None = None
    code_version: str | None = Field(default=None, description="The code that ran it: a deployed version or a hash")
    failure: Failure | None = Field(
        default=None,
        exclude_if=lambda failure: failure is None,
        description="For an attempt that raised or whose worker died: the exception's type and traceback",
    )
    usage: dict[str, float] = Field(
        default_factory=dict,
        exclude_if=lambda usage: not usage,
        description="What this run metered (its share of the job's usage): what its cost is computed from",
    )


class Signal(WireModel):
    """A signal delivered to a waiting job: its name, its JSON payload and when it arrived."""

    name: str
    payload: Any = None
    delivered_at: int


class FanOut(WireModel):
    """A map in progress: ``count`` items, each run by ``phase``, at most ``max_concurrency`` at a time.

    While it is on the job, the checkpoint's ``nextPhase`` is the phase that runs once every item
    has finished; ``id`` names the item records, which sit under the job (one checkpoint stream).
    """

    id: str
    phase: str
    count: int
    max_concurrency: int


MapItemStatus = Literal["pending", "done", "failed"]


class MapItem(WireModel):
    """One item of a map: its input, its own small checkpoint (attempt, claim, backoff) and its result.

    ``version`` grows with every write: each write is conditioned on the version it read.
    """

    index: int
    input: Any = None
    status: MapItemStatus = "pending"
    attempt: int = 1
    lease_owner: str | None = None
    lease_expires_at: int | None = None
    not_before: int | None = None
    result: Any = None
    error: ErrorText | None = None
    failure: Failure | None = Field(
        default=None,
        exclude_if=lambda failure: failure is None,
        description="The last failed attempt's exception: its type and traceback",
    )
    usage: dict[str, float] = Field(default_factory=dict)
    log: list[LogEntry] = Field(default_factory=list)
    version: int = 0
    write_token: str | None = None
    updated_at: int = 0
    claimed_at: int | None = Field(
        default=None,
        exclude_if=lambda claimed: claimed is None,
        description="Unix ms: when the attempt in flight, or the last one, began (its claim); with updated_at, "
        "how long a finished item's last attempt ran",
    )


class MapRecord(WireModel):
    """A map's own record, beside its items: what it runs, between which phases, and how far it got.

    ``done`` counts the items finished: the write that finishes an item adds one in the same atomic
    step, so each item counts exactly once and "is the map finished?" is one small read. Two marks, each
    the token of the one writer that set it: ``handed_off``, the finish that scheduled ``then``; ``joined``,
    the run of ``then`` whose write added the items' usage and log to the job's (a retry or a rerun of
    ``then`` gets the items' results again, not their usage and log).
    """

    fan_out: FanOut
    started_by: str = Field(description="The phase that returned the Map")
    then: str = Field(description="The phase that runs once every item is done, with their results")
    created_at: int = Field(description="Unix ms: when the map began (the createdAt of the checkpoint at then)")
    sequence: int = Field(default=0, description="The job's sequence when the map began: orders the job's maps")
    done: int = 0
    handed_off: str | None = None
    joined: str | None = None


MapMark = Literal["handed_off", "joined"]
"""A mark a map's record takes once (:meth:`cairn.core.storage_port.Storage.mark_map`)."""


class Job(WireModel):
    """A job as stored: status, checkpoint, claim, and what it has produced so far."""

    job_id: str
    pipeline: str
    status: JobStatus = JobStatus.IDLE
    checkpoint: Checkpoint | None = None
    error: ErrorText | None = None
    error_type: Annotated[str, _clip(MAX_TYPE_CHARS)] | None = Field(
        default=None,
        exclude_if=lambda kind: kind is None,
        description="For a job in error: the type of the exception that ended it (None: it raised none, e.g. Fail)",
    )
    error_phase: str | None = Field(
        default=None, exclude_if=lambda phase: phase is None, description="For a job in error: the phase that failed"
    )
    attempt: int = 1
    result: Any = None
    input: Any = Field(default=None, description="The initial state the job was (re)started with")
    usage: dict[str, int | float] = Field(default_factory=dict)
    phases: list[PhaseRecord] = Field(default_factory=list)
    log: list[LogEntry] = Field(default_factory=list)
    created_at: int
    updated_at: int
    expires_at: int = Field(description="Unix time in seconds after which the job is treated as gone")
    ttl_seconds: int = 86400
    sequence: int = Field(default=0, description="Advanced by every state-changing write; messages carry it")
    run: int = Field(default=1, description="Which run of the job this is; a full retry starts a new one")
    lease_owner: str | None = Field(default=None, description="The worker holding the claim (a request id)")
    lease_expires_at: int | None = Field(default=None, description="Unix time in milliseconds")
    claim_sequence: int | None = Field(default=None, description="The sequence the current claim was made at")
    claimed_at: int | None = Field(
        default=None,
        description="Unix ms: when the phase run in flight began (its claim; a crash report's takeover keeps it)",
    )
    not_before: int | None = Field(
        default=None, description="Unix ms: a retry waits out its backoff, or a sleep its delay, until then"
    )
    waiting_for: str | None = Field(
        default=None,
        description="The signal the checkpoint waits for: while waiting, and after a timeout or a cancel "
        "(a resume waits again); cleared when the signal is delivered",
    )
    wait_deadline: int | None = Field(default=None, description="Unix ms: the wait times out then (None: never)")
    timeout_phase: str | None = Field(default=None, description="Where a wait that times out continues (None: error)")
    signal: Signal | None = Field(default=None, description="The signal delivered to the wait the job left last")
    fan_out: FanOut | None = Field(default=None, description="The map whose items run before the next phase")
    write_token: str | None = Field(default=None, description="The token of the last write, to recognise a retry")
    history_head: str | None = Field(default=None, description="The token of the last write that added history")
    pending_log: list[LogEntry] = Field(
        default_factory=list,
        exclude_if=lambda pending: not pending,
        description="Operator actions (pause, cancel, a signal) not yet in the history: the next start, or the "
        "commit of a claim that saw them, moves them into its history item; a job's log shows them last",
    )
    input_token: str | None = Field(default=None, description="The token of the write that set the input")
    history_renew_by: int | None = Field(
        default=None,
        description="Item stores: Unix seconds after which a write first renews what the job keeps beside it",
    )
    share_wait: str | None = Field(
        default=None,
        exclude_if=lambda reason: reason is None,
        description="Why a running job waits: its owner's share is taken (e.g. \"waiting for its owner's share: "
        '2 of 2 phases running"); set when it gives its claim back for that, cleared by its next commit',
    )

    def is_expired(self, now_ms: int) -> bool:
        """True once the job's TTL has passed, whether or not the store has deleted it."""
        return ttl.is_past(self.expires_at, now_ms)

    def expires_at_after(self, now_ms: int) -> int:
        """The TTL attribute (epoch seconds) for a write at ``now_ms``."""
        return ttl.expires_at(now_ms, self.ttl_seconds)

    def has_live_claim(self, now_ms: int) -> bool:
        """True while a worker holds an unexpired claim on the job."""
        return self.lease_owner is not None and (self.lease_expires_at or 0) > now_ms


class HistoryItem(WireModel):
    """What one write added to a job's history, linked to the history before it.

    A store writes the item before the job itself; the job's ``history_head``
    names the newest item that belongs to it and each item its predecessor, so
    an item whose write never landed (a refused commit, a crash in between) is
    never part of the job's history.
    """

    token: str
    prev: str | None = None
    log: list[LogEntry] = Field(default_factory=list)
    record: PhaseRecord | None = None
    entry: Checkpoint | None = Field(
        default=None, description="The checkpoint the write set, kept so that a rerun can start from that phase"
    )


class JobSummary(WireModel):
    """A job as listings show it: no state, no result, no log.

    A listing reads what changes only with the job's status (an index that a phase transition never
    writes), so it gives ``updated_at`` as the last status change and leaves out ``attempt`` and
    ``next_phase``, which change between status changes; the job's own view has them all.
    """

    job_id: str
    pipeline: str
    status: JobStatus
    attempt: int | None = Field(
        default=None, description="The attempt of the phase in flight; a listing leaves it out (a retry changes it)"
    )
    error: str | None = None
    error_type: str | None = Field(
        default=None,
        exclude_if=lambda kind: kind is None,
        description="For a job in error: the exception's type (absent: it raised none, or a listing that did not "
        "read its job item)",
    )
    error_phase: str | None = Field(
        default=None,
        exclude_if=lambda phase: phase is None,
        description="For a job in error: the phase that failed (absent as error_type is)",
    )
    next_phase: str | None = Field(
        default=None, description="The phase to run next; a listing leaves it out (every phase transition moves it)"
    )
    created_at: int
    updated_at: int = Field(
        description="Unix ms: in a listing, the job's last status change (for a job not written since listings "
        "kept it, its last write); in a job's summary, its last write"
    )
    expires_at: int = Field(
        description="Unix s: in a listing, at least this (the expiry its last status change set; a running job's "
        "later writes push it on); in a job's summary, its expiry"
    )
    corrupt: bool = Field(
        default=False, description="The stored job cannot be read; ``error`` says why (``unreadable: ...``)"
    )
    stalled: bool | None = Field(
        default=None,
        exclude_if=lambda stalled: stalled is None,
        description="In a listing: true for a running job that is stalled (no worker holds it, or its map's items "
        "are done and the next phase never started; GET /jobs/{jobId} says since when and why), false for "
        "another running job; absent for other statuses",
    )
    cost_usd: float | None = Field(
        default=None,
        exclude_if=lambda cost: cost is None,
        description="What the job has cost so far (USD), in a listing: newest first, from its usage counters as "
        "they are now; dearest first (?sort=cost), its cost when its status last changed (what the order is by). "
        "Absent: not known (a job whose status has not changed since costs were listed, in the cost order)",
    )

    @classmethod
    def of(cls, job: Job) -> JobSummary:
        """The summary of a full job."""
        return cls(
            job_id=job.job_id,
            pipeline=job.pipeline,
            status=job.status,
            attempt=job.attempt,
            error=job.error,
            error_type=job.error_type,
            error_phase=job.error_phase,
            next_phase=job.checkpoint.next_phase if job.checkpoint else None,
            created_at=job.created_at,
            updated_at=job.updated_at,
            expires_at=job.expires_at,
        )


class JobPage(WireModel):
    """One page of a listing; ``cursor`` fetches the next page (None on the last)."""

    jobs: list[JobSummary]
    cursor: str | None = None


class JobCounts(WireModel):
    """How many of an owner's live jobs have each status: exact, or (``exact`` False) a lower bound of each."""

    counts: dict[JobStatus, int] = Field(description="Every status, with the live jobs counted in it (0 for none)")
    total: int = Field(description="Every job counted (the sum of ``counts`` and ``unreadable``)")
    exact: bool = Field(
        description='True: every count is exact. False: each is a lower bound ("at least"): the store counted '
        "up to a bound of the newest jobs, or could not confirm whether some had expired"
    )
    unreadable: int = Field(default=0, description="Jobs whose stored status cannot be read (not in ``counts``)")
    stalled: int | None = Field(
        default=None,
        exclude_if=lambda stalled: stalled is None,
        description="How many running jobs are stalled (a part of counts.running): each running job read up to a "
        "bound; past it a lower bound and exact is false",
    )
    maintained: bool = Field(
        default=False,
        description="True: counted from the counts the table's stream keeps (one read, not a re-count of the jobs); "
        "a job then counts until DynamoDB's TTL deletes it, usually within a few days after it expires",
    )

    @classmethod
    def of(cls, statuses: Mapping[JobStatus, int], *, exact: bool, unreadable: int = 0) -> JobCounts:
        """The counts of ``statuses``, every status given (those absent as 0)."""
        counts = {status: int(statuses.get(status, 0)) for status in JobStatus}
        return cls(counts=counts, total=sum(counts.values()) + unreadable, exact=exact, unreadable=unreadable)
