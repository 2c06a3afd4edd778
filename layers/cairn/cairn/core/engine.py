"""The checkpoint engine: start, resume and advance jobs, following the seed's rules.

``run_pipeline`` writes the starting checkpoint and schedules an advance; it
never runs a phase. ``advance_phase`` claims the job, runs the phase named by
the checkpoint's ``nextPhase`` and commits what it returned, in one
conditional write per step.
"""

from __future__ import annotations

import logging
import math
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel

from . import ttl
from .admission import MAX_SIGNAL_PAYLOAD_BYTES, json_value
from .context import JournalBuffer, PhaseContext
from .errors import (
    ClaimLostError,
    InvalidInputError,
    JobExistsError,
    JobNotFoundError,
    PhaseCrashedError,
    PipelineError,
    StateTooLargeError,
    StorageError,
    TransitionRefusedError,
    UnknownPhaseError,
    VersionConflict,
)
from .fan_out import (
    ItemRun,
    ItemStore,
    collected,
    map_entered,
    new_items,
    refuse_item_phase,
    runnable,
    schedule_items,
    validate_map,
)
from .ids import JOB_ID_PATTERN as JOB_ID_PATTERN
from .ids import validate_job_id as validate_job_id
from .lessons import lessons_in
from .models import (
    MAX_ERROR_CHARS,
    Checkpoint,
    EntryKind,
    FanOut,
    Job,
    JobStatus,
    LogEntry,
    LogLevel,
    MapItem,
    MapRecord,
    PhaseOutcome,
    PhaseRecord,
    RetryMode,
    clip_text,
)
from .outcomes import Done, Fail, Map, Next, Sleep, WaitFor
from .pipeline import Phase, Pipeline, to_json
from .restarts import check_retry
from .scheduler_port import ItemScheduler, Scheduler
from .storage_port import Storage
from .transitions import Claim, Commit, CrashReport, Fence, Journal, Save, SignalDelivery, StartJob, WaitExpiry
from .versions import code_version

logger = logging.getLogger("cairn")

_START_ATTEMPTS = 5
#: How often a write whose outcome is unknown (a lost response) is sent again before the error stands.
WRITE_RESOLVE_ATTEMPTS = 5
_T = TypeVar("_T")


def resolve_write(write: Callable[[], _T]) -> _T:
    """Make one storage write, sending it again while its outcome is unknown.

    A retryable StorageError (a timeout, a reset connection, throttling) may
    hide a write that landed. The request carries its write token, so sending
    the same request again either applies it once or finds it landed; it is
    never assumed to have failed.
    """
    for attempt in range(1, WRITE_RESOLVE_ATTEMPTS + 1):
        try:
            return write()
        except StorageError as exc:
            if not exc.retryable or attempt == WRITE_RESOLVE_ATTEMPTS:
                raise
            logger.warning("Write outcome unknown (%s); sending it again (attempt %d)", exc, attempt + 1)
    raise AssertionError("unreachable")


def parse_retry_mode(mode: RetryMode | str | None) -> RetryMode:
    """``mode`` as a RetryMode (None: 'resume'); anything but 'resume', 'full' or 'from' is a clear error."""
    if mode is None:
        return RetryMode.RESUME
    try:
        return RetryMode(mode)
    except ValueError as exc:
        raise InvalidInputError(f"Unknown retry mode {mode!r}; use 'resume', 'full' or 'from'") from exc


def resolve_start_phase(mode: RetryMode | str | None, checkpoint: Checkpoint | None, initial_phase: str) -> str:
    """The phase a (re)started job begins with: the checkpoint's on resume (or None), else ``initial_phase``."""
    if parse_retry_mode(mode) == RetryMode.RESUME and checkpoint is not None:
        return checkpoint.next_phase
    return initial_phase


def _ttl_seconds(pipeline: Pipeline[Any]) -> int:
    return ttl.seconds_of(pipeline.ttl)


def _expires_at(pipeline: Pipeline[Any], now_ms: int) -> int:
    return ttl.expires_at(now_ms, _ttl_seconds(pipeline))


def usable_checkpoint(job: Job | None, pipeline: Pipeline[Any], now_ms: int) -> Checkpoint | None:
    """The checkpoint a resume would continue from: the job's while the job is live.

    One clock for every read path (:mod:`cairn.core.ttl`): a job lives until its TTL after its last
    write, and its checkpoint with it, however long ago the checkpoint itself was saved.
    """
    if job is None or job.is_expired(now_ms):
        return None
    return job.checkpoint


def run_pipeline(
    job_id: str,
    pipeline: Pipeline[Any],
    *,
    storage: Storage,
    scheduler: Scheduler,
    initial_state: Any = None,
    retry_mode: RetryMode | str = RetryMode.RESUME,
    initial_phase: str | None = None,
    create_only: bool = False,
    actor: str | None = None,
    refuse_complete: bool = False,
) -> Job:
    """Start a job, or retry one, and schedule its first advance.

    Without ``initial_state`` a retry starts from the state the job was
    started with (its ``input``).

    ``resume`` continues from the saved ``nextPhase`` with the saved state (and
    starts fresh when there is no checkpoint); ``full`` discards the checkpoint
    and the old log and starts from ``initial_phase`` (default: the first
    phase) with ``initial_state``; ``from`` reruns the job at ``initial_phase`` (required) with
    ``initial_state``, or else the state the job had when it last entered that phase, keeping its
    log (which records who, ``actor``, reran what from where). Any worker still mid-phase is fenced off.
    With ``create_only`` an existing job is never touched: JobExistsError. With ``refuse_complete`` (a
    caller's retry: the front door's) a resume of a complete job is refused, TransitionRefusedError, and
    nothing is written (:mod:`cairn.core.restarts`); without it the seed's rule holds and it starts fresh.
    Bad input raises before anything is written.
    """
    validate_job_id(job_id)
    mode = parse_retry_mode(retry_mode)
    first_phase = pipeline.initial_phase  # refuses an empty pipeline
    if initial_phase is not None and not pipeline.has_phase(initial_phase):
        raise PipelineError(f'Unknown phase "{initial_phase}" (known phases: {", ".join(pipeline.phase_names)})')
    if mode == RetryMode.FROM and initial_phase is None:
        raise InvalidInputError('A rerun (mode "from") names the phase to rerun from')
    given_state = pipeline.dump_state(initial_state) if initial_state is not None else None
    if mode == RetryMode.FROM:
        assert initial_phase is not None
        return _rerun_from(job_id, pipeline, initial_phase, given_state, storage, scheduler, actor)

    for _ in range(_START_ATTEMPTS):
        now = storage.clock()
        existing = storage.get_job(job_id)
        if create_only and existing is not None:
            raise JobExistsError(job_id, existing)
        if refuse_complete and existing is not None and not existing.is_expired(now):
            check_retry(existing, mode)
        if mode == RetryMode.RESUME and existing is not None and existing.status == JobStatus.WAITING:
            raise TransitionRefusedError(
                f'Job "{job_id}" is waiting for signal "{existing.waiting_for}": send it, cancel the job, '
                'or start it over with mode="full"'
            )
        saved = usable_checkpoint(existing, pipeline, now) if mode == RetryMode.RESUME else None
        start_phase = resolve_start_phase(mode, saved, initial_phase or first_phase)
        fresh_state = given_state
        if fresh_state is None:  # not given: the job's own input, else the pipeline's empty state
            fresh_state = _empty_state(pipeline, existing.input if existing is not None else None)
        state = saved.state if saved is not None else fresh_state
        checkpoint = Checkpoint(next_phase=start_phase, state=state, created_at=now)
        first = existing is None or existing.is_expired(now)
        note = LogEntry(message=_start_note(mode, first, start_phase), timestamp=now, phase=start_phase)
        wait = _wait_again(existing, saved, now)
        request = StartJob(
            job_id=job_id,
            pipeline=pipeline.name,
            checkpoint=checkpoint,
            now_ms=now,
            expires_at=_expires_at(pipeline, now),
            seen=existing,
            ttl_seconds=_ttl_seconds(pipeline),
            input=existing.input if saved is not None and existing is not None else fresh_state,
            reset_history=mode == RetryMode.FULL,
            journal=Journal(log=(note,)),
            resumed=saved is not None,
            # a resume of a sleeping job (paused, cancelled) sleeps what is left of its sleep
            not_before=existing.not_before if saved is not None and existing is not None else None,
            **wait,
        )
        try:
            job = resolve_write(partial(storage.start_job, request))
        except VersionConflict:
            continue
        if job.status == JobStatus.WAITING:
            if job.wait_deadline is not None:  # the wait's timeout, as when the wait began
                delay = max(0.0, (job.wait_deadline - now) / 1000)
                scheduler.schedule_advance(job_id, phase=start_phase, sequence=job.sequence, delay=delay)
        else:
            delay = max(0.0, (job.not_before - now) / 1000) if job.not_before is not None else 0.0
            scheduler.schedule_advance(job_id, phase=start_phase, sequence=job.sequence, delay=delay)
        return job
    raise StorageError(f'Job "{job_id}" kept changing while it was being started; try again', retryable=True)


def _start_note(mode: RetryMode, first: bool, phase: str) -> str:
    """The first log line of a (re)start: what happened, at which phase."""
    if first:
        return f'Job started at phase "{phase}"'
    if mode == RetryMode.FULL:
        return f'Job started over at phase "{phase}"'
    return f'Job retried ({mode.value}) at phase "{phase}"'


def _empty_state(pipeline: Pipeline[Any], state: Any) -> Any:
    """``state`` as JSON; no state at all is an empty object to a state model, so its errors name each field."""
    if state is None and pipeline.state_model is not None and issubclass(pipeline.state_model, BaseModel):
        state = {}
    return pipeline.dump_state(state)


def _rerun_from(
    job_id: str,
    pipeline: Pipeline[Any],
    phase: str,
    given_state: Any,
    storage: Storage,
    scheduler: Scheduler,
    actor: str | None,
) -> Job:
    """Continue ``job_id`` at ``phase`` with ``given_state``, or the state it had when it last entered ``phase``."""
    for _ in range(_START_ATTEMPTS):
        now = storage.clock()
        existing = storage.get_job(job_id)
        if existing is None:
            raise JobNotFoundError(job_id)
        maps = storage.get_maps(job_id)
        refuse_item_phase(existing, phase, maps, pipeline.resolve_name)  # a phase run only as a map's items
        follows_map = any(pipeline.resolve_name(record.then) == pipeline.resolve_name(phase) for record in maps)
        kept = storage.entered(job_id, phase) if given_state is None or follows_map else None
        state, source = given_state, "the state given"
        if state is None:
            if kept is None:
                raise InvalidInputError(
                    f'Job "{job_id}" has no state kept from entering phase "{phase}" (it never reached it, or '
                    "that part of its history has expired); rerun with the state to use"
                )
            state, source = kept.state, f"the state it entered with at {kept.created_at}"
        # a map's then phase gets its items' results again (their records are kept)
        taken_up = map_entered(phase, maps, kept, pipeline.resolve_name) if follows_map else None
        if taken_up is not None:
            source += f" and the results of its map's {taken_up.fan_out.count} items"
        who = f" by {actor}" if actor else ""
        note = LogEntry(
            message=f'Job rerun from phase "{phase}"{who} (was {existing.status.value}), with {source}',
            timestamp=now,
            phase=phase,
            kind="decision",
        )
        request = StartJob(
            job_id=job_id,
            pipeline=pipeline.name,
            checkpoint=Checkpoint(next_phase=phase, state=state, created_at=now),
            now_ms=now,
            expires_at=_expires_at(pipeline, now),
            seen=existing,
            ttl_seconds=_ttl_seconds(pipeline),
            input=existing.input,
            journal=Journal(log=(note,)),
            fan_out=taken_up.fan_out if taken_up is not None else None,
        )
        try:
            job = resolve_write(partial(storage.start_job, request))
        except VersionConflict:
            continue
        scheduler.schedule_advance(job_id, phase=phase, sequence=job.sequence)
        return job
    raise StorageError(f'Job "{job_id}" kept changing while it was being rerun; try again', retryable=True)


def _wait_again(existing: Job | None, saved: Checkpoint | None, now: int) -> dict[str, Any]:
    """The wait a resume re-enters: the checkpoint it continues from was written by a wait never signalled.

    A wait that timed out into error, or a job cancelled while waiting, resumes waiting for the same
    signal (with a timeout as long as the first), never running the next phase without it.
    """
    if existing is None or saved is None or existing.waiting_for is None:
        return {}
    deadline = None
    if existing.wait_deadline is not None:
        deadline = now + max(0, existing.wait_deadline - saved.created_at)
    return {"waiting_for": existing.waiting_for, "wait_deadline": deadline, "timeout_phase": existing.timeout_phase}


def pause_job(job_id: str, *, storage: Storage) -> Job:
    """Pause a running job: the phase in flight finishes; nothing after it starts."""
    return storage.pause(validate_job_id(job_id))


def cancel_job(job_id: str, *, storage: Storage) -> Job:
    """Cancel a job. A worker mid-phase can no longer commit; the checkpoint stays until it expires."""
    return storage.cancel(validate_job_id(job_id))


class _PhaseRun:
    """One claimed run of one phase: the writes it may make, all fenced by its claim."""

    def __init__(self, job: Job, pipeline: Pipeline[Any], storage: Storage, worker: str, started_at: int) -> None:
        assert job.checkpoint is not None
        self.job = job
        self.pipeline = pipeline
        self.storage = storage
        assert job.claim_sequence is not None
        self.fence = Fence(worker, job.claim_sequence)
        self.started_at = started_at
        self.checkpoint = job.checkpoint
        self.phase_name = job.checkpoint.next_phase
        self.journal = JournalBuffer()
        self.map_items: list[MapItem] | None = None
        #: Called once the run's next write (a save or the commit) has landed: it carried the map's usage.
        self.after_write: Callable[[], None] | None = None

    def _written(self) -> None:
        """A save or the commit has landed: what was waiting for it (the map's usage joined) is told, once."""
        after, self.after_write = self.after_write, None
        if after is not None:
            after()

    def entry(self, message: str, *, level: LogLevel = "info", kind: EntryKind = "log") -> None:
        self.journal.add_entry(
            LogEntry(message=message, level=level, kind=kind, phase=self.phase_name, timestamp=self.storage.clock())
        )

    def remember_lessons(self) -> None:
        """Keep the insights recorded since the last write in the pipeline's memory (before that write)."""
        found = lessons_in(self.journal.peek().log, self.job.job_id)
        if found:
            expires = ttl.expires_at(self.storage.clock(), ttl.seconds_of(self.pipeline.memory_ttl))
            self.storage.remember(self.pipeline.name, found, expires_at=expires)

    def save(self, state: Any, lease_seconds: float) -> None:
        self.remember_lessons()
        now = self.storage.clock()
        request = Save(
            seen=self.job,
            checkpoint=Checkpoint(next_phase=self.phase_name, state=self.pipeline.dump_state(state), created_at=now),
            now_ms=now,
            lease_expires_at=now + int(lease_seconds * 1000),
            expires_at=_expires_at(self.pipeline, now),
            journal=self.journal.peek(),
        )
        self.job = resolve_write(lambda: self.storage.save(self.job.job_id, self.fence, request))
        self.journal.clear()
        self._written()

    def commit(
        self,
        kind: PhaseOutcome,
        *,
        checkpoint: Checkpoint | None = None,
        result: Any = None,
        error: str | None = None,
        delay: float = 0.0,
        wait: WaitFor | None = None,
        fan_out: FanOut | None = None,
    ) -> Job:
        self.remember_lessons()
        now = self.storage.clock()
        error = clip_text(error, MAX_ERROR_CHARS) if error is not None else None
        phase = self.pipeline.get_phase(self.phase_name) if self.pipeline.has_phase(self.phase_name) else None
        record = PhaseRecord(
            phase=self.phase_name,
            attempt=self.job.attempt,
            started_at=self.started_at,
            ended_at=now,
            outcome=kind,
            next_phase=checkpoint.next_phase if checkpoint else None,
            error=error,
            code_version=code_version(phase.run) if phase is not None else None,
        )
        not_before = now + int(delay * 1000) if kind in ("retry", "sleep") else None
        deadline = now + int(wait.timeout * 1000) if wait is not None and wait.timeout is not None else None
        request = Commit(
            seen=self.job,
            kind=kind,
            now_ms=now,
            # a job lives its TTL past the moment it wakes or its wait times out, never expiring asleep
            expires_at=_expires_at(self.pipeline, max(now, not_before or now, deadline or now)),
            record=record,
            journal=self.journal.peek(),
            checkpoint=checkpoint,
            result=result,
            error=error,
            not_before=not_before,
            waiting_for=wait.signal if wait is not None else None,
            wait_deadline=deadline,
            timeout_phase=wait.timeout_phase if wait is not None else None,
            fan_out=fan_out,
        )
        self.job = resolve_write(lambda: self.storage.commit(self.job.job_id, self.fence, request))
        self.journal.clear()
        self._written()
        return self.job


def _lease_for(pipeline: Pipeline[Any], phase: str | None) -> float:
    if phase is not None and pipeline.has_phase(phase):
        return pipeline.get_phase(phase).lease_seconds
    return max(pipeline.get_phase(name).lease_seconds for name in pipeline.phase_names)


def advance_phase(
    job_id: str,
    pipeline: Pipeline[Any],
    *,
    storage: Storage,
    scheduler: Scheduler,
    phase: str | None = None,
    sequence: int | None = None,
    worker: str | None = None,
    fan_out: str | None = None,
    item: int | None = None,
) -> Job | None:
    """Run the phase the checkpoint names, commit its outcome and schedule what follows.

    With ``fan_out`` and ``item`` the advance runs one item of the job's map instead (see
    :mod:`cairn.core.fan_out`); it returns the job when the item ran, else None.

    ``phase`` and ``sequence`` come from the message that asked for the
    advance: it runs only if the job is still at that ``sequence`` (and its
    checkpoint names ``phase``). Returns the job after the commit, or None when
    there was nothing to do: the job is not running (paused, finished,
    unknown), the message is stale or a duplicate (the job has moved past its
    sequence), another worker holds the job, or this worker lost its claim
    before committing.
    """
    if item is not None or fan_out is not None:
        if item is None or fan_out is None or phase is None:
            raise InvalidInputError("An item advance names its phase, its map (fan_out) and its item")
        return _advance_item(
            job_id, pipeline, storage, scheduler, phase=phase, fan_out=fan_out, item=item, worker=worker
        )
    run = _claim(job_id, pipeline, storage, phase=phase, sequence=sequence, worker=worker)
    if run is None:
        return _end_wait_if_due(job_id, pipeline, storage, scheduler, sequence) if sequence is not None else None
    try:
        return _run_claimed(run, scheduler)
    except ClaimLostError:
        logger.warning("Job %s: claim lost during phase %s; nothing committed", job_id, run.phase_name)
        return None


def _item_store(storage: Storage, pipeline: Pipeline[Any], job_id: str, fan_out: str) -> ItemStore:
    expires = ttl.side_expires_at(storage.clock(), _ttl_seconds(pipeline))
    return ItemStore(storage, job_id, fan_out, expires_at=expires)


def _advance_item(
    job_id: str,
    pipeline: Pipeline[Any],
    storage: Storage,
    scheduler: Scheduler,
    *,
    phase: str,
    fan_out: str,
    item: int,
    worker: str | None,
) -> Job | None:
    """Run one item of the job's map, while the job runs that map; None when there is nothing to run."""
    validate_job_id(job_id)
    if not isinstance(scheduler, ItemScheduler):
        raise InvalidInputError("An item advance needs a scheduler that runs items (schedule_item)")
    route = storage.get_route(job_id)
    if route is None or route.status != JobStatus.RUNNING or route.fan_out is None or route.fan_out.id != fan_out:
        return None
    if route.next_phase is None or route.fan_out.phase != phase or not pipeline.has_phase(phase):
        return None
    next_phase = route.next_phase

    def fail_job(message: str) -> None:
        run = _claim(job_id, pipeline, storage, phase=next_phase, worker=None)
        if run is None:
            logger.warning("Job %s: %s; the job was busy, its next advance runs the item again", job_id, message)
            return
        run.entry(message, level="error", kind="error")
        run.commit("error", error=message)

    runner = ItemRun(
        pipeline=pipeline,
        store=_item_store(storage, pipeline, job_id, fan_out),
        fan_out=route.fan_out,
        next_phase=next_phase,
        scheduler=scheduler,
        clock=storage.clock,
        fail_job=fail_job,
    )
    if runner.run(item, worker or uuid.uuid4().hex) is None:
        return None
    return storage.get_job(job_id)


def _start_map(run: _PhaseRun, outcome: Map, scheduler: Scheduler) -> Job:
    """Write the map's item records, commit the checkpoint at ``then`` with the map, schedule the first items."""
    if not isinstance(scheduler, ItemScheduler):
        raise InvalidInputError(
            "a map needs a scheduler that runs items (the inline scheduler, the direct driver); "
            "the Step Functions driver does not run maps yet"
        )
    values = validate_map(outcome, run.pipeline)
    state = run.pipeline.dump_state(outcome.state) if outcome.state is not None else run.job.checkpoint.state  # type: ignore[union-attr]
    now = run.storage.clock()
    fan_out = FanOut(
        id=uuid.uuid4().hex,
        phase=run.pipeline.resolve_name(outcome.phase),
        count=len(values),
        max_concurrency=outcome.max_concurrency,
    )
    store = _item_store(run.storage, run.pipeline, run.job.job_id, fan_out.id)
    items = new_items(values, now)
    # the checkpoint at then is made at the same moment as the map's record: a rerun from then finds its map by it
    record = MapRecord(
        fan_out=fan_out, started_by=run.phase_name, then=outcome.then, created_at=now, sequence=run.job.sequence
    )
    store.create(items, record)
    run.entry(f'Map of {len(values)} items over phase "{fan_out.phase}", then "{outcome.then}"')
    checkpoint = Checkpoint(next_phase=outcome.then, state=state, created_at=now)
    job = run.commit("map", checkpoint=checkpoint, fan_out=fan_out)
    if job.status == JobStatus.RUNNING:
        schedule_items(scheduler, job.job_id, fan_out, runnable(items, fan_out, now), now)
    return job


def _items_unfinished(run: _PhaseRun, scheduler: Scheduler) -> Job | None:
    """The job after giving its claim back when its map still has items to run (scheduled again); else None.

    The one read of every item record the map needs: ``then``'s results, or what a recovery (the sweep,
    a resume) schedules again. A map whose records are gone (expired) puts the job in ``error``.
    """
    fan_out = run.job.fan_out
    if fan_out is None:
        return None
    store = _item_store(run.storage, run.pipeline, run.job.job_id, fan_out.id)
    items = store.all()
    if len(items) < fan_out.count:
        record = store.record()
        where = f' started by phase "{record.started_by}"' if record is not None else ""
        message = (
            f"{fan_out.count - len(items)} of the {fan_out.count} item records of the map over phase "
            f'"{fan_out.phase}"{where} are gone (expired): rerun from the phase that starts the map'
        )
        run.entry(message, level="error", kind="error")
        return run.commit("error", error=message)
    if all(item.status == "done" for item in items):
        run.map_items = items
        _join_map(run, store)
        return None
    job = run.commit("release")
    now = run.storage.clock()
    if job.status == JobStatus.RUNNING and isinstance(scheduler, ItemScheduler):
        schedule_items(scheduler, job.job_id, fan_out, runnable(items, fan_out, now), now)
        # The last item may have finished since the records were read, and its hand-off found the job
        # claimed by this run: then is scheduled again here, so that it never waits for the sweep.
        record = store.record()
        if record is not None and record.done >= fan_out.count:
            scheduler.schedule_advance(job.job_id, phase=run.phase_name, sequence=job.sequence)
    return job


def _join_map(run: _PhaseRun, store: ItemStore) -> None:
    """Add the items' usage and log to the job's, with the next write of this run of ``then``: once per map.

    A retry of ``then``, or a rerun from it, gets the items' results again, not their usage and log
    (the items did not run again). The map's record is marked once that write has landed.
    """
    assert run.map_items is not None
    record = store.record()
    if record is not None and record.joined is not None:
        return
    _, usage, entries = collected(run.map_items)
    run.journal.add_usage(usage)
    for entry in entries:
        run.journal.add_entry(entry)
    if record is not None:
        run.after_write = lambda: _mark_joined(store)


def _mark_joined(store: ItemStore) -> None:
    try:
        store.mark("joined")
    except StorageError as exc:  # the write it follows has landed: a rerun of then would add the usage again
        logger.warning("Job %s: could not mark map %s's usage joined: %s", store.job_id, store.fan_out, exc)


def _end_wait_if_due(
    job_id: str, pipeline: Pipeline[Any], storage: Storage, scheduler: Scheduler, sequence: int
) -> Job | None:
    """An advance that found nothing to claim may be a wait's timeout: end the wait when it is due."""
    route = storage.get_route(job_id)
    if route is None or route.status != JobStatus.WAITING or route.sequence != sequence:
        return None
    now = storage.clock()
    request = WaitExpiry(sequence=sequence, now_ms=now)
    job = resolve_write(partial(storage.expire_wait, job_id, request))
    if job is None:
        waiting = storage.get_job(job_id)
        deadline = waiting.wait_deadline if waiting is not None and waiting.sequence == sequence else None
        if waiting is not None and waiting.status == JobStatus.WAITING and deadline is not None and deadline > now:
            # the timeout came early (clock skew between hosts): send it again for when it is due
            delay = (deadline - now) / 1000
            scheduler.schedule_advance(job_id, phase=route.next_phase or "", sequence=sequence, delay=delay)
        return None
    logger.warning("Job %s: the wait at sequence %d timed out (%s)", job_id, sequence, job.status.value)
    if job.status == JobStatus.RUNNING and job.checkpoint is not None:
        scheduler.schedule_advance(job_id, phase=job.checkpoint.next_phase, sequence=job.sequence)
    return job


SIGNAL_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def validate_signal_name(name: str) -> str:
    """``name`` when it is a valid signal name (1-64 letters, digits, '.', '_', '-'); else InvalidInputError."""
    if not isinstance(name, str) or not SIGNAL_NAME_PATTERN.fullmatch(name):
        raise InvalidInputError(
            f"Invalid signal name {name!r}: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


def signal_job(
    job_id: str, pipeline: Pipeline[Any], name: str, payload: Any, *, storage: Storage, scheduler: Scheduler
) -> Job:
    """Deliver signal ``name`` to a job waiting for it and schedule its next phase, which reads ``payload``.

    Exactly one delivery wins: the write is conditioned on the job still waiting for ``name``, so a
    second delivery (a race, a duplicate) is refused with TransitionRefusedError, as is a signal no
    one waits for; neither is stored anywhere.
    """
    validate_job_id(job_id)
    validate_signal_name(name)
    encoded = json_value(payload, "Signal payload", max_bytes=MAX_SIGNAL_PAYLOAD_BYTES)
    request = SignalDelivery(name=name, payload=encoded, now_ms=storage.clock())
    job = resolve_write(partial(storage.deliver_signal, job_id, request))
    if job.pipeline != pipeline.name:
        raise InvalidInputError(f'Job "{job_id}" belongs to pipeline "{job.pipeline}", not "{pipeline.name}"')
    if job.status == JobStatus.RUNNING and job.checkpoint is not None:
        scheduler.schedule_advance(job_id, phase=job.checkpoint.next_phase, sequence=job.sequence)
    return job


def record_crash(
    job_id: str,
    pipeline: Pipeline[Any],
    *,
    storage: Storage,
    scheduler: Scheduler,
    phase: str,
    error: str,
    dead_worker: str | None = None,
    sequence: int | None = None,
) -> Job | None:
    """Record that the invocation running ``phase`` died (a timeout, out of memory) and apply the retry policy.

    The report names one claim: the one held by ``dead_worker`` (the dead
    invocation's request id), or, when that is unknown, the one made for the
    message at ``sequence``; an invocation that died before claiming is
    recognised by the job still being unclaimed at ``sequence``. Only that
    claim is taken over, and only while it is current: any other report
    (a duplicate, a late one, one about a worker that committed) is stale and
    returns None. The checkpoint is kept; the phase is retried after its
    backoff while it has attempts left (``retry_on`` filters exceptions, not
    crashes), else the job is set to ``error``.
    """
    if dead_worker is None and sequence is None:
        logger.warning("Job %s: a crash report naming no claim was ignored", job_id)
        return None
    report = CrashReport(worker=dead_worker, sequence=sequence)
    run = _claim(job_id, pipeline, storage, phase=phase, worker=report.takeover_worker, crash=report)
    if run is None:
        return None
    if not pipeline.has_phase(run.phase_name):
        return _commit_unknown_phase(run)
    crashed = pipeline.get_phase(run.phase_name)
    died = PhaseCrashedError(crashed.name, error)
    try:
        return _handle_exception(run, crashed, died, scheduler, entry=_death_notice(run, died))
    except ClaimLostError:
        return None


def _death_notice(run: _PhaseRun, died: PhaseCrashedError) -> str:
    """The log line of a crash: which phase and attempt the worker died in, after how long, and when."""
    now = run.storage.clock()
    seconds = max(0, now - run.started_at) / 1000
    when = datetime.fromtimestamp(now / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return (
        f'Worker died during phase "{run.phase_name}" (attempt {run.job.attempt}) after {seconds:.1f} s, '
        f"reported at {when}: {_describe(died)}"
    )


def _claim(
    job_id: str,
    pipeline: Pipeline[Any],
    storage: Storage,
    *,
    phase: str | None,
    worker: str | None,
    sequence: int | None = None,
    crash: CrashReport | None = None,
) -> _PhaseRun | None:
    validate_job_id(job_id)
    _ = pipeline.initial_phase  # an empty pipeline is refused here
    worker = worker or uuid.uuid4().hex
    lease = _lease_for(pipeline, phase)
    now = storage.clock()
    request = Claim(
        job_id=job_id,
        pipeline=pipeline.name,
        phase=phase,
        worker=worker,
        now_ms=now,
        lease_expires_at=now + int(lease * 1000),
        expires_at=_expires_at(pipeline, now),
        sequence=sequence,
        crash=crash,
    )
    claimed = resolve_write(partial(storage.claim, request))
    if claimed is None:
        logger.debug("No advance for job %s (phase %s): not claimable", job_id, phase)
        return None
    return _PhaseRun(claimed, pipeline, storage, worker, claimed.claimed_at or now)


def _commit_unknown_phase(run: _PhaseRun) -> Job:
    """The checkpoint names a phase the pipeline does not have: ``error``, naming it and the known ones."""
    message = str(UnknownPhaseError(run.phase_name, run.pipeline.phase_names))
    run.entry(message, level="error", kind="error")
    return run.commit("unknown-phase", error=message)


def _run_claimed(run: _PhaseRun, scheduler: Scheduler) -> Job:
    pipeline = run.pipeline
    if not pipeline.has_phase(run.phase_name):
        return _commit_unknown_phase(run)

    released = _items_unfinished(run, scheduler)
    if released is not None:
        return released
    results = [item.result for item in run.map_items] if run.map_items is not None else None
    phase = pipeline.get_phase(run.phase_name)
    try:
        state = pipeline.load_state(run.checkpoint.state)
    except InvalidInputError as exc:
        run.entry(str(exc), level="error", kind="error")
        return run.commit("error", error=str(exc))
    ctx: PhaseContext[Any] = PhaseContext(
        job_id=run.job.job_id,
        phase=phase.name,
        state=state,
        checkpoint=run.checkpoint,
        attempt=run.job.attempt,
        clock=run.storage.clock,
        saver=lambda state: run.save(state, phase.lease_seconds),
        journal=run.journal,
        signal=run.job.signal.payload if run.job.signal is not None else None,
        results=results,
        recaller=lambda limit: run.storage.recall(run.pipeline.name, limit),
    )
    if run.job.signal is not None and run.job.attempt == 1:
        run.entry(f'Received signal "{run.job.signal.name}"', kind="observation")
    try:
        outcome = phase.run(ctx)
    except ClaimLostError:
        raise
    except Exception as exc:  # the phase failed; BaseException (process death) passes through
        return _handle_exception(run, phase, exc, scheduler)
    return _handle_outcome(run, phase, outcome, scheduler)


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _handle_exception(
    run: _PhaseRun, phase: Phase, exc: Exception, scheduler: Scheduler, *, entry: str | None = None
) -> Job:
    """Apply the phase's retry policy to a failed attempt (``exc``); ``entry`` is its log line, if not the usual.

    A retried failure is expected: one warning line, no traceback. The failure that ends the job is
    logged with its traceback (a dead worker has none to show).
    """
    attempt = run.job.attempt
    message = _describe(exc)
    line = entry or f'Phase "{phase.name}" threw: {message}'
    run.entry(line, level="error", kind="error")
    crashed = isinstance(exc, PhaseCrashedError)  # a dead worker is retried whatever ``retry_on`` names
    if phase.retry.should_retry(exc, attempt) or (crashed and attempt < phase.retry.max_attempts):
        delay = phase.retry.delay_for(attempt)
        retrying = f'Retrying phase "{phase.name}" (attempt {attempt + 1} of {phase.retry.max_attempts})'
        retrying += f" in {delay:.1f}s"
        run.entry(retrying, level="warning")
        logger.warning("Job %s: %s; %s", run.job.job_id, line, retrying)
        job = run.commit("retry", error=message, delay=delay)
        if job.status == JobStatus.RUNNING:
            scheduler.schedule_advance(job.job_id, phase=run.phase_name, sequence=job.sequence, delay=delay)
        return job
    logger.error("Job %s: %s", run.job.job_id, line, exc_info=None if crashed else exc)
    return run.commit("error", error=message)


def _handle_outcome(run: _PhaseRun, phase: Phase, outcome: object, scheduler: Scheduler) -> Job:
    if isinstance(outcome, Fail):
        run.entry(f'Phase "{phase.name}" failed: {outcome.error}', level="error", kind="error")
        return run.commit("error", error=outcome.error)
    try:
        if isinstance(outcome, Next):
            checkpoint = Checkpoint(
                next_phase=outcome.next_phase,
                state=run.pipeline.dump_state(outcome.state),
                created_at=run.storage.clock(),
            )
            job = run.commit("next", checkpoint=checkpoint)
            if job.status == JobStatus.RUNNING:
                scheduler.schedule_advance(job.job_id, phase=outcome.next_phase, sequence=job.sequence)
            return job
        if isinstance(outcome, Done):
            return run.commit("done", result=to_json(outcome.result, what="The result"))
        if isinstance(outcome, Sleep):
            return _sleep(run, outcome, scheduler)
        if isinstance(outcome, WaitFor):
            return _wait(run, outcome, scheduler)
        if isinstance(outcome, Map):
            try:
                return _start_map(run, outcome, scheduler)
            except InvalidInputError as exc:
                message = f'Phase "{phase.name}" returned a map that cannot run: {exc}'
                run.entry(message, level="error", kind="error")
                return run.commit("error", error=message)
    except (InvalidInputError, StateTooLargeError) as exc:
        message = f'Phase "{phase.name}" returned output that cannot be stored: {exc}'
        run.entry(message, level="error", kind="error")
        return run.commit("error", error=message)
    message = f'Phase "{phase.name}" returned {outcome!r}; expected Next, Done, Fail, Sleep, WaitFor or Map'
    run.entry(message, level="error", kind="error")
    return run.commit("error", error=message)


def _checkpoint_for(run: _PhaseRun, next_phase: str, state: Any) -> Checkpoint:
    return Checkpoint(next_phase=next_phase, state=run.pipeline.dump_state(state), created_at=run.storage.clock())


def _seconds(value: Any, what: str, *, at_most: float) -> float:
    """``value`` as seconds: a finite number from 0 to ``at_most``; else InvalidInputError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"{what} must be a number of seconds, got {value!r}")
    if not 0 <= value <= at_most:
        raise InvalidInputError(f"{what} must be from 0 to {at_most:g} seconds (the job's TTL), got {value:g}")
    return float(value)


def _sleep(run: _PhaseRun, outcome: Sleep, scheduler: Scheduler) -> Job:
    """Commit the checkpoint with its wake-up time; the next phase runs once the delay is over."""
    seconds = _seconds(outcome.seconds, "Sleep(seconds)", at_most=_ttl_seconds(run.pipeline))
    run.entry(f'Sleeping {seconds:g}s before phase "{outcome.next_phase}"')
    job = run.commit("sleep", checkpoint=_checkpoint_for(run, outcome.next_phase, outcome.state), delay=seconds)
    if job.status == JobStatus.RUNNING:
        scheduler.schedule_advance(job.job_id, phase=outcome.next_phase, sequence=job.sequence, delay=seconds)
    return job


def _wait(run: _PhaseRun, outcome: WaitFor, scheduler: Scheduler) -> Job:
    """Commit the checkpoint and wait for the signal; its timeout is an advance scheduled for the deadline."""
    validate_signal_name(outcome.signal)
    if outcome.timeout is not None:
        _seconds(outcome.timeout, "WaitFor(timeout)", at_most=_ttl_seconds(run.pipeline))
    if outcome.timeout_phase is not None and not run.pipeline.has_phase(outcome.timeout_phase):
        raise InvalidInputError(f'WaitFor(timeout_phase="{outcome.timeout_phase}") names no phase of the pipeline')
    limit = f" for at most {outcome.timeout:g}s" if outcome.timeout is not None else ""
    run.entry(f'Waiting for signal "{outcome.signal}"{limit} before phase "{outcome.next_phase}"')
    checkpoint = _checkpoint_for(run, outcome.next_phase, outcome.state)
    job = run.commit("wait", checkpoint=checkpoint, wait=outcome)
    if job.status == JobStatus.WAITING and outcome.timeout is not None:
        scheduler.schedule_advance(
            job.job_id, phase=outcome.next_phase, sequence=job.sequence, delay=float(outcome.timeout)
        )
    return job
