"""Crash reports: a dead invocation's claim taken over, and the phase's retry policy applied to its death."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..errors import ClaimLostError, PhaseCrashedError
from ..failures import describe
from ..models import Failure, Job
from ..pipeline import Pipeline
from ..scheduler_port import Scheduler
from ..storage_port import Storage
from ..transitions import CrashReport
from .advancing import handle_exception
from .claimed_run import ClaimedRun, claim_run, commit_unknown_phase
from .writes import logger


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
    failure: Failure | None = None,
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
    crashes), else the job is set to ``error``. The attempt's record keeps ``failure``, what the
    report said of the death (Lambda's ``errorType`` and ``stackTrace``), when it said it.
    """
    if dead_worker is None and sequence is None:
        logger.warning("Job %s: a crash report naming no claim was ignored", job_id)
        return None
    report = CrashReport(worker=dead_worker, sequence=sequence)
    run = claim_run(job_id, pipeline, storage, phase=phase, worker=report.takeover_worker, crash=report)
    if run is None:
        return None
    if not pipeline.has_phase(run.phase_name):
        return commit_unknown_phase(run)
    crashed = pipeline.get_phase(run.phase_name)
    died = PhaseCrashedError(crashed.name, error)
    try:
        return handle_exception(run, crashed, died, scheduler, entry=_death_notice(run, died), failure=failure)
    except ClaimLostError:
        return None


def _death_notice(run: ClaimedRun, died: PhaseCrashedError) -> str:
    """The log line of a crash: which phase and attempt the worker died in, after how long, and when."""
    now = run.storage.clock()
    seconds = max(0, now - run.started_at) / 1000
    when = datetime.fromtimestamp(now / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return (
        f'Worker died during phase "{run.phase_name}" (attempt {run.job.attempt}) after {seconds:.1f} s, '
        f"reported at {when}: {describe(died)}"
    )
