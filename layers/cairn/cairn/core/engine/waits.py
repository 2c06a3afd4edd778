"""Sleeps and waits: entering them, the signal that ends a wait, and the timeout that ends it instead."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from ..admission import MAX_SIGNAL_PAYLOAD_BYTES, json_value
from ..errors import InvalidInputError
from ..ids import validate_job_id
from ..models import Checkpoint, Job, JobStatus
from ..outcomes import Sleep, WaitFor
from ..pipeline import Pipeline
from ..scheduler_port import Scheduler
from ..signals import validate_signal_name
from ..storage_port import Storage
from ..transitions import SignalDelivery, WaitExpiry
from .claimed_run import ClaimedRun
from .writes import job_ttl_seconds, logger, resolve_write


def end_wait_if_due(
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
        waiting = storage.get_current_job(job_id)
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


def signal_job(
    job_id: str,
    pipeline: Pipeline[Any],
    name: str,
    payload: Any,
    *,
    storage: Storage,
    scheduler: Scheduler,
    by: str | None = None,
) -> Job:
    """Deliver signal ``name`` to a job waiting for it and schedule its next phase, which reads ``payload``.

    The job's log records the delivery and who sent it, ``by``, when given.

    Exactly one delivery wins: the write is conditioned on the job still waiting for ``name``, so a
    second delivery (a race, a duplicate) is refused with TransitionRefusedError, as is a signal no
    one waits for; neither is stored anywhere.
    """
    validate_job_id(job_id)
    validate_signal_name(name)
    encoded = json_value(pipeline.admit_signal(name, payload), "Signal payload", max_bytes=MAX_SIGNAL_PAYLOAD_BYTES)
    request = SignalDelivery(name=name, payload=encoded, now_ms=storage.clock(), actor=by)
    job = resolve_write(partial(storage.deliver_signal, job_id, request))
    if job.pipeline != pipeline.name:
        raise InvalidInputError(f'Job "{job_id}" belongs to pipeline "{job.pipeline}", not "{pipeline.name}"')
    if job.status == JobStatus.RUNNING and job.checkpoint is not None:
        scheduler.schedule_advance(job_id, phase=job.checkpoint.next_phase, sequence=job.sequence)
    return job


def _checkpoint_for(run: ClaimedRun, next_phase: str, state: Any) -> Checkpoint:
    state = run.pipeline.dump_state(state)
    version = run.pipeline.version_stamp
    return Checkpoint(next_phase=next_phase, state=state, created_at=run.storage.clock(), state_version=version)


def _seconds(value: Any, what: str, *, at_most: float) -> float:
    """``value`` as seconds: a finite number from 0 to ``at_most``; else InvalidInputError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"{what} must be a number of seconds, got {value!r}")
    if not 0 <= value <= at_most:
        raise InvalidInputError(f"{what} must be from 0 to {at_most:g} seconds (the job's TTL), got {value:g}")
    return float(value)


def enter_sleep(run: ClaimedRun, outcome: Sleep, scheduler: Scheduler) -> Job:
    """Commit the checkpoint with its wake-up time; the next phase runs once the delay is over."""
    seconds = _seconds(outcome.seconds, "Sleep(seconds)", at_most=job_ttl_seconds(run.pipeline))
    run.entry(f'Sleeping {seconds:g}s before phase "{outcome.next_phase}"')
    job = run.commit("sleep", checkpoint=_checkpoint_for(run, outcome.next_phase, outcome.state), delay=seconds)
    if job.status == JobStatus.RUNNING:
        scheduler.schedule_advance(job.job_id, phase=outcome.next_phase, sequence=job.sequence, delay=seconds)
    return job


def enter_wait(run: ClaimedRun, outcome: WaitFor, scheduler: Scheduler) -> Job:
    """Commit the checkpoint and wait for the signal; its timeout is an advance scheduled for the deadline."""
    validate_signal_name(outcome.signal)
    if outcome.timeout is not None:
        _seconds(outcome.timeout, "WaitFor(timeout)", at_most=job_ttl_seconds(run.pipeline))
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
