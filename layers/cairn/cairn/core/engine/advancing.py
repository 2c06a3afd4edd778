"""Advancing a job: claim it, run the phase its checkpoint names, commit what the phase returned.

``advance_phase`` claims the job, runs the phase named by the checkpoint's ``nextPhase`` and commits
its outcome, in one conditional write per step; what follows (the next phase, a retry, a sleep, a
wait, a map's items) is scheduled once that write has landed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..context import PhaseContext
from ..errors import ClaimLostError, InvalidInputError, PhaseCrashedError, StateTooLargeError
from ..failures import describe, failure_of, repr_of
from ..models import Failure, Job, JobStatus
from ..outcomes import Done, Fail, Next, Sleep, WaitFor
from ..pipeline import Phase, Pipeline, to_json
from ..run_features import RunFeature, first_stop, item_runner
from ..scheduler_port import Scheduler
from ..steps import book_for_run
from ..storage_port import Storage
from .claimed_run import ClaimedRun, claim_run, commit_unknown_phase
from .waits import end_wait_if_due, enter_sleep, enter_wait
from .writes import logger


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
    features: Iterable[RunFeature] | None = None,
) -> Job | None:
    """Run the phase the checkpoint names, commit its outcome and schedule what follows.

    With ``fan_out`` and ``item`` the advance runs one item of the job's map instead (see
    :mod:`cairn.maps`); it returns the job when the item ran (as the item found it, without its
    history, its state and input left out where the store keeps them apart), else None.

    ``phase`` and ``sequence`` come from the message that asked for the
    advance: it runs only if the job is still at that ``sequence`` (and its
    checkpoint names ``phase``). Returns the job after the commit, or None when
    there was nothing to do: the job is not running (paused, finished,
    unknown), the message is stale or a duplicate (the job has moved past its
    sequence), another worker holds the job, or this worker lost its claim
    before committing. ``features``: the run-level features around the run (default: the registered
    ones, :mod:`cairn.core.run_features`).
    """
    if item is not None or fan_out is not None:
        if item is None or fan_out is None or phase is None:
            raise InvalidInputError("An item advance names its phase, its map (fan_out) and its item")
        run_item = item_runner()  # maps plug in (cairn.maps)
        return run_item(
            job_id,
            pipeline,
            storage,
            scheduler,
            phase=phase,
            fan_out=fan_out,
            item=item,
            worker=worker,
            features=features,
        )
    run = claim_run(job_id, pipeline, storage, phase=phase, sequence=sequence, worker=worker, features=features)
    if run is None:
        return end_wait_if_due(job_id, pipeline, storage, scheduler, sequence) if sequence is not None else None
    try:
        waited = first_stop(hooks.admit(run, scheduler) for hooks in run.hooks)
        return waited if waited is not None else run_claimed(run, scheduler)
    except ClaimLostError:
        logger.warning("Job %s: claim lost during phase %s; nothing committed", job_id, run.phase_name)
        return None
    finally:
        for hooks in run.hooks:
            hooks.close(run)


def run_claimed(run: ClaimedRun, scheduler: Scheduler) -> Job:
    """Run the claimed phase (or take up its map's items) and commit what it returned.

    The run's features may stop the job before its phase runs (:meth:`~cairn.core.run_features.RunHooks.before_phase`).
    """
    pipeline = run.pipeline
    if not pipeline.has_phase(run.phase_name):
        return commit_unknown_phase(run)

    stopped = first_stop(hooks.before_phase(run, scheduler) for hooks in run.hooks)
    if stopped is not None:
        return stopped
    phase = pipeline.get_phase(run.phase_name)
    try:
        state = pipeline.load_state(run.checkpoint.state, run.checkpoint.state_version)
    except InvalidInputError as exc:
        return run.fail(str(exc))
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
        results=run.results,
        recaller=lambda limit: run.storage.recall(run.pipeline.name, limit),
        steps=book_for_run(
            run.storage, run.pipeline.name, run.job, lambda kept: run.save_phase_run(kept, phase.lease_seconds)
        ),
    )
    if run.job.signal is not None and run.job.attempt == 1:
        run.entry(f'Received signal "{run.job.signal.name}"', kind="observation")
    try:
        outcome = phase.run(ctx)
    except ClaimLostError:
        raise
    except Exception as exc:  # the phase failed; BaseException (process death) passes through
        return handle_exception(run, phase, exc, scheduler)
    return handle_outcome(run, phase, outcome, scheduler)


def handle_exception(
    run: ClaimedRun,
    phase: Phase,
    exc: Exception,
    scheduler: Scheduler,
    *,
    entry: str | None = None,
    failure: Failure | None = None,
) -> Job:
    """Apply the phase's retry policy to a failed attempt (``exc``); ``entry`` is its log line, if not the usual.

    The attempt's record keeps ``failure`` (by default, the type and traceback of ``exc``).

    A retried failure is expected: one warning line, no traceback. The failure that ends the job is
    logged with its traceback (a dead worker has none to show).
    """
    attempt = run.job.attempt
    message = describe(exc)
    failure = failure or failure_of(exc)
    line = entry or f'Phase "{phase.name}" threw: {message}'
    run.entry(line, level="error", kind="error")
    crashed = isinstance(exc, PhaseCrashedError)  # a dead worker is retried whatever ``retry_on`` names
    if phase.retry.should_retry(exc, attempt) or (crashed and attempt < phase.retry.max_attempts):
        delay = phase.retry.delay_for(attempt)
        retrying = f'Retrying phase "{phase.name}" (attempt {attempt + 1} of {phase.retry.max_attempts})'
        retrying += f" in {delay:.1f}s"
        run.entry(retrying, level="warning")
        logger.warning("Job %s: %s; %s", run.job.job_id, line, retrying)
        job = run.commit("retry", error=message, delay=delay, failure=failure)
        if job.status == JobStatus.RUNNING:
            scheduler.schedule_advance(job.job_id, phase=run.phase_name, sequence=job.sequence, delay=delay)
        return job
    logger.error("Job %s: %s", run.job.job_id, line, exc_info=None if crashed else exc)
    return run.commit("error", error=message, failure=failure)


def handle_outcome(run: ClaimedRun, phase: Phase, outcome: object, scheduler: Scheduler) -> Job:
    """Commit what the phase returned (Next, Done, Fail, Sleep, WaitFor; a Map through its plug-in); else an error."""
    if isinstance(outcome, Fail):
        run.entry(f'Phase "{phase.name}" failed: {outcome.error}', level="error", kind="error")
        return run.commit("error", error=outcome.error)
    try:
        if isinstance(outcome, Next):
            checkpoint = run.pipeline.checkpoint(outcome.next_phase, outcome.state, run.storage.clock())
            job = run.commit("next", checkpoint=checkpoint)
            if job.status == JobStatus.RUNNING:
                scheduler.schedule_advance(job.job_id, phase=outcome.next_phase, sequence=job.sequence)
            return job
        if isinstance(outcome, Done):
            return run.commit("done", result=to_json(outcome.result, what="The result"))
        if isinstance(outcome, Sleep):
            return enter_sleep(run, outcome, scheduler)
        if isinstance(outcome, WaitFor):
            return enter_wait(run, outcome, scheduler)
        handled = first_stop(hooks.outcome(run, outcome, scheduler) for hooks in run.hooks)
        if handled is not None:
            return handled
    except (InvalidInputError, StateTooLargeError) as exc:
        return run.fail(f'Phase "{phase.name}" returned output that cannot be stored: {exc}')
    return run.fail(
        f'Phase "{phase.name}" returned {repr_of(outcome)}; expected Next, Done, Fail, Sleep, WaitFor or Map'
    )
