"""Starting a job, and retrying one: the checkpoint a (re)start continues from and the first advance.

``run_pipeline`` writes the starting checkpoint and schedules an advance; it never runs a phase.
A rerun from a named phase (mode ``from``) is :mod:`.rerunning`.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from pydantic import BaseModel

from ..errors import (
    InvalidInputError,
    JobExistsError,
    PipelineError,
    StorageError,
    TransitionRefusedError,
    VersionConflict,
)
from ..ids import validate_job_id
from ..models import Checkpoint, Job, JobStatus, RetryMode
from ..pipeline import Pipeline
from ..restarts import check_retry
from ..scheduler_port import Scheduler
from ..steps import carried
from ..storage_port import Storage
from ..transitions import Journal, StartJob, action_entry
from .rerunning import rerun_from
from .writes import START_ATTEMPTS, job_expires_at, job_ttl_seconds, resolve_write


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
    log (which records who, ``actor``, reran what from where; a start or retry names ``actor`` too).
    Any worker still mid-phase is fenced off.
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
        return rerun_from(job_id, pipeline, initial_phase, given_state, storage, scheduler, actor)

    for _ in range(START_ATTEMPTS):
        now = storage.clock()
        existing = storage.get_current_job(job_id)
        if create_only and existing is not None:
            shown = storage.get_job_view(job_id)  # the job as its view shows it: its newest history too
            raise JobExistsError(job_id, shown.job if shown is not None else existing)
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
        if fresh_state is None and saved is None:  # not given: the job's own input, else the pipeline's empty state
            fresh_state = _empty_state(pipeline, existing.input if existing is not None else None)
        state = saved.state if saved is not None else fresh_state
        version = saved.state_version if saved is not None else pipeline.version_stamp
        checkpoint = Checkpoint(next_phase=start_phase, state=state, created_at=now, state_version=version)
        checkpoint = carried(saved, checkpoint)  # a resume continues the same run of the phase, with its steps
        first = existing is None or existing.is_expired(now)
        note = action_entry(_start_note(mode, first, start_phase), actor, now, start_phase)
        wait = _wait_again(existing, saved, now)
        request = StartJob(
            job_id=job_id,
            pipeline=pipeline.name,
            checkpoint=checkpoint,
            now_ms=now,
            expires_at=job_expires_at(pipeline, now),
            seen=existing,
            ttl_seconds=job_ttl_seconds(pipeline),
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
    """What a (re)start did, at which phase: its log line, to which who asked is added (``action_entry``)."""
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
