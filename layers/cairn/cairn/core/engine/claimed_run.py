"""A claimed run of one phase: the claim that gives one worker the job, and the writes made under it.

Every save and the commit that ends the run are fenced by the claim: a worker that lost it (a crash
report took over, a retry fenced it off) can write nothing more.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from ..context import JournalBuffer
from ..errors import UnknownPhaseError
from ..ids import validate_job_id
from ..models import (
    MAX_ERROR_CHARS,
    Checkpoint,
    EntryKind,
    Failure,
    FanOut,
    Job,
    LogEntry,
    LogLevel,
    PhaseOutcome,
    PhaseRecord,
    PhaseRun,
    clip_text,
)
from ..outcomes import WaitFor
from ..pipeline import FunctionSettings, Pipeline
from ..redaction import for_run
from ..run_features import CommitFacts, RunFeature, RunHooks, open_hooks, summed_usage
from ..steps import carried
from ..storage_port import Storage
from ..transitions import Claim, Commit, CrashReport, Fence, Journal, Save, merge_usage
from ..versions import code_version
from .writes import job_expires_at, logger, resolve_write


class ClaimedRun:
    """One claimed run of one phase: the writes it may make, all fenced by its claim.

    ``hooks`` are the run-level features' (:mod:`cairn.core.run_features`): each write asks them what it adds.
    """

    def __init__(
        self,
        job: Job,
        pipeline: Pipeline[Any],
        storage: Storage,
        worker: str,
        started_at: int,
        hooks: Sequence[RunHooks] = (),
    ) -> None:
        assert job.checkpoint is not None
        self.job = job
        self.pipeline = pipeline
        self.storage = storage
        assert job.claim_sequence is not None
        self.fence = Fence(worker, job.claim_sequence)
        self.started_at = started_at
        self.checkpoint = job.checkpoint
        self.phase_name = job.checkpoint.next_phase
        self.hooks = tuple(hooks)
        #: Texts the run stores (log lines, annotations, its error and failure) are redacted with this.
        self.redaction = for_run(pipeline.redaction, job.input, job.checkpoint.state)
        self.journal = JournalBuffer(self.redaction)
        #: What the phase reads as ``ctx.results`` (set by a hook: a map's items' results, for its ``then``).
        self.results: list[Any] | None = None
        #: What the run's saves metered so far: with its commit's, the run's usage on its phase record.
        self.metered: dict[str, float] = {}
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

    def fail(self, message: str, *, failure: Failure | None = None, kind: PhaseOutcome = "error") -> Job:
        """End the run in ``error``: ``message`` logged as an error entry and kept as the job's error."""
        self.entry(message, level="error", kind="error")
        return self.commit(kind, error=message, failure=failure)

    @property
    def holder(self) -> str:
        """Who holds the claim: ``<worker>#<claim sequence>``."""
        return f"{self.fence.worker}#{self.fence.claim_sequence}"

    def _before_write(self) -> None:
        for each in self.hooks:
            each.before_write(self)

    def _journal_with(self, parts: Iterable[Mapping[str, float]]) -> Journal:
        """What the next write hands over: the journal, with the usage the features add to this write.

        The buffer itself is left as it is: a write refused before it is sent adds nothing twice.
        """
        journal = self.journal.peek()
        added = summed_usage(list(parts))
        return Journal(log=journal.log, usage=merge_usage(journal.usage, added)) if added else journal

    def save(self, state: Any, lease_seconds: float) -> None:
        """Save ``state`` mid-phase (``ctx.save_state``), keeping the run of the phase's steps (:mod:`..steps`)."""
        checkpoint = self.pipeline.checkpoint(self.phase_name, state, self.storage.clock())
        self._save(carried(self.job.checkpoint, checkpoint), lease_seconds)

    def save_phase_run(self, kept: PhaseRun, lease_seconds: float) -> None:
        """Save the last checkpoint again with what the run of the phase keeps (its steps, its id: :mod:`..steps`)."""
        assert self.job.checkpoint is not None
        update = {"created_at": self.storage.clock(), "phase_run": kept}
        self._save(self.job.checkpoint.model_copy(update=update), lease_seconds)

    def _save(self, checkpoint: Checkpoint, lease_seconds: float) -> None:
        self._before_write()
        now = checkpoint.created_at
        request = Save(
            seen=self.job,
            checkpoint=checkpoint,
            now_ms=now,
            lease_expires_at=now + int(lease_seconds * 1000),
            expires_at=job_expires_at(self.pipeline, now),
            journal=self._journal_with(each.save_usage(self, checkpoint) for each in self.hooks),
        )
        self.job = resolve_write(lambda: self.storage.save(self.job.job_id, self.fence, request))
        self.metered = merge_usage(self.metered, request.journal.usage)
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
        failure: Failure | None = None,
        share_wait: str | None = None,
    ) -> Job:
        """End the run with ``kind``, with what the run's features add to it."""
        self._before_write()
        now = self.storage.clock()
        error = clip_text(self.redaction.text(error), MAX_ERROR_CHARS) if error is not None else None
        phase = self.pipeline.get_phase(self.phase_name) if self.pipeline.has_phase(self.phase_name) else None
        memory = (phase.function if phase is not None else FunctionSettings()).memory
        facts = CommitFacts(kind, checkpoint, self.started_at, now, memory, fan_out, share_wait)
        journal = self._journal_with(each.commit_usage(self, facts) for each in self.hooks)
        metered = merge_usage(self.metered, journal.usage)
        record = PhaseRecord(
            phase=self.phase_name,
            attempt=self.job.attempt,
            started_at=self.started_at,
            ended_at=now,
            outcome=kind,
            next_phase=checkpoint.next_phase if checkpoint else None,
            error=error,
            code_version=code_version(phase.run) if phase is not None else None,
            failure=self.redaction.failure(failure),
            usage={meter: value for meter, value in metered.items() if self._kept_on_record(meter)},
        )
        not_before = now + int(delay * 1000) if kind in ("retry", "sleep") or (kind == "release" and delay) else None
        deadline = now + int(wait.timeout * 1000) if wait is not None and wait.timeout is not None else None
        request = Commit(
            seen=self.job,
            kind=kind,
            now_ms=now,
            # a job lives its TTL past the moment it wakes or its wait times out, never expiring asleep
            expires_at=job_expires_at(self.pipeline, max(now, not_before or now, deadline or now)),
            record=record,
            journal=journal,
            checkpoint=checkpoint,
            result=result,
            error=error,
            not_before=not_before,
            waiting_for=wait.signal if wait is not None else None,
            wait_deadline=deadline,
            timeout_phase=wait.timeout_phase if wait is not None else None,
            fan_out=fan_out,
            share_wait=share_wait,
        )
        self.job = resolve_write(lambda: self.storage.commit(self.job.job_id, self.fence, request))
        self.journal.clear()
        self._written()
        return self.job

    def _kept_on_record(self, meter: str) -> bool:
        return any(each.keeps_on_record(meter) for each in self.hooks)


def lease_for(pipeline: Pipeline[Any], phase: str | None) -> float:
    """How long a claim for ``phase`` lasts; for an unknown phase, the longest of the pipeline's leases."""
    if phase is not None and pipeline.has_phase(phase):
        return pipeline.get_phase(phase).lease_seconds
    return max(pipeline.get_phase(name).lease_seconds for name in pipeline.phase_names)


def claim_run(
    job_id: str,
    pipeline: Pipeline[Any],
    storage: Storage,
    *,
    phase: str | None,
    worker: str | None,
    sequence: int | None = None,
    crash: CrashReport | None = None,
    features: Iterable[RunFeature] | None = None,
) -> ClaimedRun | None:
    """Claim the job for one run of ``phase`` (or take over the claim ``crash`` names); None: not claimable.

    ``features``: the run-level features the run has (default: the registered ones).
    """
    validate_job_id(job_id)
    _ = pipeline.initial_phase  # an empty pipeline is refused here
    worker = worker or uuid.uuid4().hex
    lease = lease_for(pipeline, phase)
    hooks = open_hooks(pipeline, features)  # a feature's bad setting is refused before anything is written
    now = storage.clock()
    request = Claim(
        job_id=job_id,
        pipeline=pipeline.name,
        phase=phase,
        worker=worker,
        now_ms=now,
        lease_expires_at=now + int(lease * 1000),
        expires_at=job_expires_at(pipeline, now),
        sequence=sequence,
        crash=crash,
    )
    claimed = resolve_write(partial(storage.claim, request))
    if claimed is None:
        logger.debug("No advance for job %s (phase %s): not claimable", job_id, phase)
        return None
    return ClaimedRun(claimed, pipeline, storage, worker, claimed.claimed_at or now, hooks)


def commit_unknown_phase(run: ClaimedRun) -> Job:
    """The checkpoint names a phase the pipeline does not have: ``error``, naming it and the known ones."""
    message = str(UnknownPhaseError(run.phase_name, run.pipeline.phase_names))
    return run.fail(message, kind="unknown-phase")
