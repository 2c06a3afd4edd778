"""The front door: pipelines, storage and scheduler bound once, for applications, the API, the CLI and tests.

``Cairn`` wraps the seed's functions (``run_pipeline``, ``advance_phase``)
without changing their rules: it adds what a caller should not have to
write out each time (the wiring, a generated job id, create-only starts,
refusing a retry that would silently drop what it was given).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any, Literal

from .core.engine import (
    advance_phase,
    cancel_job,
    parse_retry_mode,
    pause_job,
    record_crash,
    run_pipeline,
    signal_job,
    usable_checkpoint,
    validate_job_id,
)
from .core.errors import (
    EnteredStateNotFoundError,
    InvalidInputError,
    JobNotFoundError,
    MapItemNotFoundError,
    UnknownPhaseError,
)
from .core.history_pages import RecentJob
from .core.models import Checkpoint, Job, JobStatus, MapItem, MapRecord, RetryMode
from .core.pipeline import Pipeline
from .core.registry import PipelineRegistry
from .core.run_features import RunFeature
from .core.scheduler_port import Scheduler
from .core.storage_port import ResultLink, StateLink, Storage
from .core.transitions.history import waits_to_enter
from .features import priced_features
from .features.cost import JobCost, job_cost
from .features.owner_share import check_share
from .features.prices import PriceSource, PriceTable, load_prices
from .scheduling import recovery
from .scheduling.inline import InlineScheduler

NOT_RUN_YET = "it has not run that phase yet (it waits to enter it)"
DEAD_PROCESS = "the process running it stopped before the phase ended (its claim expired)"
"""The error a recovered crash records: no report came, only the expired claim tells of it."""


class Cairn:
    """Runs the jobs of ``pipelines`` in ``storage``, advanced by ``scheduler``.

    Without a scheduler an :class:`InlineScheduler` is made and bound to this
    object (as is an unbound one given, e.g. with a clock that skips time):
    ``run_until_idle()`` then runs every queued advance in-process.
    Without a storage jobs live in memory.

    A job a dead process left ``running`` is picked up again by ``recover()``, which
    ``run_until_idle()`` calls first, once its claim has expired.

    ``prices`` overrides the shipped price table (a JSON file's path, or its content: see
    :mod:`cairn.features.prices`), over ``CAIRN_PRICES``: what ``cost()`` shows and budgets are checked at.
    """

    def __init__(
        self,
        pipelines: Pipeline[Any] | Iterable[Pipeline[Any]] | PipelineRegistry,
        *,
        storage: Storage | None = None,
        scheduler: Scheduler | None = None,
        prices: PriceSource | PriceTable | None = None,
    ) -> None:
        if isinstance(pipelines, PipelineRegistry):
            self.pipelines = pipelines
        elif isinstance(pipelines, Pipeline):
            self.pipelines = PipelineRegistry([pipelines])
        else:
            self.pipelines = PipelineRegistry(pipelines)
        if storage is None:
            from .storage.memory import MemoryStorage  # lazy: a deployment brings its store; tests keep jobs in memory

            storage = MemoryStorage()
        check_share(storage)  # a fair share the store cannot keep, or a bad setting, is refused here
        self.storage: Storage = storage
        if scheduler is None:
            scheduler = InlineScheduler()
        # An inline scheduler nobody has bound yet is this object's to run; one bound elsewhere is not.
        self._inline: InlineScheduler | None = None
        if isinstance(scheduler, InlineScheduler) and not scheduler.bound:
            self._inline = scheduler
            self._inline.bind(self.advance, triage=self._triage)
        self.scheduler: Scheduler = scheduler
        #: The prices jobs' costs are shown and budgets checked at (:mod:`cairn.features.prices`).
        self.prices = prices if isinstance(prices, PriceTable) else load_prices(overrides=prices)
        #: The run-level features of this Cairn's runs; None: the registered ones, the budget at :attr:`prices`.
        self.features: tuple[RunFeature, ...] | None = None

    def _triage(self, job_id: str, sequence: int | None) -> Literal["run", "hold", "drop"]:
        """What ``run_until_idle`` does with an advance not due yet: hold a wait's timeout, drop a stale one."""
        route = self.storage.get_route(job_id)
        if route is None or (sequence is not None and route.sequence != sequence):
            return "drop"
        return "hold" if route.status == JobStatus.WAITING else "run"

    def pipeline(self, name: str | Pipeline[Any]) -> Pipeline[Any]:
        """The bound pipeline called ``name`` (or ``name`` itself, if it is one of them)."""
        wanted = name.name if isinstance(name, Pipeline) else name
        found = self.pipelines.get(wanted)
        if isinstance(name, Pipeline) and found is not name:
            raise InvalidInputError(f'Pipeline "{wanted}" is not the one this Cairn was given')
        return found

    def start(
        self, pipeline: str | Pipeline[Any], job_id: str | None = None, *, state: Any = None, by: str | None = None
    ) -> Job:
        """Start a new job (a generated id when none is given); an existing id raises JobExistsError.

        The log's first line names who started it, ``by``, when given (the API gives its caller).
        """
        chosen = self.pipeline(pipeline)
        return run_pipeline(
            validate_job_id(job_id) if job_id is not None else uuid.uuid4().hex,
            chosen,
            storage=self.storage,
            scheduler=self.scheduler,
            initial_state=state,
            create_only=True,
            actor=by,
        )

    def retry(
        self,
        job_id: str,
        *,
        mode: RetryMode | str = RetryMode.RESUME,
        state: Any = None,
        phase: str | None = None,
        by: str | None = None,
    ) -> Job:
        """Retry a job: ``resume`` from its checkpoint, start it over (``full``), or rerun it ``from`` a phase.

        A resume of a complete job is refused (TransitionRefusedError: it is already complete; start it
        over with ``mode="full"``) and changes nothing (:mod:`cairn.core.restarts`). A job past its TTL is gone,
        checkpoint and all. A ``state`` that a resume would ignore (there is a checkpoint) is refused with
        InvalidInputError.

        ``mode="from"`` continues the job at ``phase`` with ``state``, or else with the state it had
        when it last entered ``phase``. The log's line for the retry names who asked, ``by``, when given.
        """
        job = self.storage.get_current_job(validate_job_id(job_id))
        if job is None:
            raise JobNotFoundError(job_id)
        chosen = self.pipelines.get(job.pipeline)
        wanted = parse_retry_mode(mode)
        if wanted == RetryMode.FROM:
            if phase is None:
                raise InvalidInputError('A rerun (mode "from") names the phase to rerun from')
        elif phase is not None:
            raise InvalidInputError(f'A phase is only given to rerun from it (mode "from"), not with mode "{wanted}"')
        elif wanted == RetryMode.RESUME and state is not None:
            saved = usable_checkpoint(job, chosen, self.storage.clock())
            if saved is not None:
                raise InvalidInputError(
                    f'Job "{job_id}" resumes from its checkpoint at "{saved.next_phase}", which would '
                    'ignore the state given; retry with mode="full" to start over with it'
                )
        return run_pipeline(
            job_id,
            chosen,
            storage=self.storage,
            scheduler=self.scheduler,
            initial_state=state,
            retry_mode=wanted,
            initial_phase=phase,
            refuse_complete=wanted != RetryMode.FROM,
            actor=by,
        )

    def advance(
        self,
        job_id: str,
        *,
        phase: str | None = None,
        sequence: int | None = None,
        worker: str | None = None,
        fan_out: str | None = None,
        item: int | None = None,
    ) -> Job | None:
        """One advance of a job (what a scheduled message does; ``worker`` names the claim, e.g. a request id).

        With ``fan_out`` and ``item``: one item of the job's map. See :func:`cairn.advance_phase`.
        """
        names = self.pipelines.names
        if len(names) == 1:  # the claim refuses a job of another pipeline: no read needed
            chosen = self.pipelines.get(names[0])
        else:
            route = self.storage.get_route(validate_job_id(job_id))
            if route is None:
                return None
            chosen = self.pipelines.get(route.pipeline)
        return advance_phase(
            job_id,
            chosen,
            storage=self.storage,
            scheduler=self.scheduler,
            phase=phase,
            sequence=sequence,
            worker=worker,
            fan_out=fan_out,
            item=item,
            features=self.features if self.features is not None else priced_features(self.prices),
        )

    def pause(self, job_id: str, *, by: str | None = None) -> Job:
        """Pause a running job at its next phase boundary; the log names who asked, ``by``, when given."""
        return pause_job(job_id, storage=self.storage, by=by)

    def cancel(self, job_id: str, *, by: str | None = None) -> Job:
        """Cancel a job; a worker mid-phase can no longer commit. The log names who asked, ``by``, when given."""
        return cancel_job(job_id, storage=self.storage, by=by)

    def signal(self, job_id: str, name: str, payload: Any = None, *, by: str | None = None) -> Job:
        """Deliver signal ``name`` (JSON ``payload``) to a job waiting for it; its next phase reads ``ctx.signal``.

        A signal no one waits for (another name, a job not waiting, a second delivery) raises
        TransitionRefusedError and is stored nowhere. The log names who sent it, ``by``, when given.
        """
        job = self.get(job_id)
        pipeline = self.pipelines.get(job.pipeline)
        return signal_job(job_id, pipeline, name, payload, storage=self.storage, scheduler=self.scheduler, by=by)

    def recover(self, *, idle_seconds: float = recovery.DEFAULT_IDLE_SECONDS) -> list[str]:
        """Advance again the jobs a dead worker left ``running``; the ids of those recovered.

        A job is recovered by the rule the sweep applies on AWS (:mod:`cairn.scheduling.recovery`): its claim
        has expired (a live claim may belong to another worker: it is left alone), no backoff or
        sleep is left to wait out, and it has had no write for ``idle_seconds``. A job of a pipeline
        this object does not run, or with an advance already queued on its inline scheduler, is
        left alone too. The advance carries the job's sequence, so a duplicate does nothing.
        """
        now = self.storage.clock()
        queued = self._inline.queued_jobs() if self._inline is not None else set()
        names = set(self.pipelines.names)
        recovered: list[str] = []
        for job in self.storage.list_jobs(status=JobStatus.RUNNING):
            if job.job_id in queued or job.pipeline not in names:
                continue
            if not recovery.job_is_stalled(job, now, idle_seconds=idle_seconds):
                continue
            next_phase = job.checkpoint.next_phase if job.checkpoint is not None else None
            if job.lease_owner is not None and next_phase is not None:
                # The worker died holding its claim: its attempt is recorded and counted as it happened.
                crashed = record_crash(
                    job.job_id,
                    self.pipelines.get(job.pipeline),
                    storage=self.storage,
                    scheduler=self.scheduler,
                    phase=next_phase,
                    error=DEAD_PROCESS,
                    dead_worker=job.lease_owner,
                )
                if crashed is not None:
                    recovered.append(job.job_id)
            elif recovery.revive(self.scheduler, job.job_id, next_phase, job.sequence):
                recovered.append(job.job_id)
        return recovered

    def get(self, job_id: str) -> Job:
        """The job; JobNotFoundError when it is unknown or expired."""
        job = self.storage.get_job(validate_job_id(job_id))
        if job is None:
            raise JobNotFoundError(job_id)
        return job

    def entered(self, job_id: str, phase: str, *, before: int | None = None) -> Checkpoint:
        """The checkpoint that last entered ``phase`` (the state the phase started with), from the kept history.

        ``phase`` may be an alias of a renamed phase: entries under either name are found. An unknown
        job is JobNotFoundError; a phase its pipeline lacks, or one it has not entered since it last
        started over, EnteredStateNotFoundError (a JobNotFoundError saying which). Reads the job's
        newest write and its history back to that entry, never the whole job. With ``before`` (Unix ms),
        the newest entry written at or before then (an earlier run's, to compare two runs). A phase the job
        only waits to enter (its checkpoint names it and no run of it has begun) is not entered yet: the same
        EnteredStateNotFoundError, saying so.
        """
        view, names = self._entry_names(job_id, phase)
        for name in names:
            storage = self.storage
            found = storage.entered(job_id, name) if before is None else storage.entered(job_id, name, before=before)
            if found is not None:
                if waits_to_enter(view.job, found):
                    raise EnteredStateNotFoundError(job_id, phase, NOT_RUN_YET)
                return found
        raise EnteredStateNotFoundError(job_id, phase)

    def entered_link(
        self, job_id: str, entry: Checkpoint, *, before: int | None = None, expires_in: int = 300
    ) -> StateLink | None:
        """A short-lived link to the state of ``entry`` (what :meth:`entered` found) when the store keeps it as an
        object of its own, else None: a state too large for one reply is handed over so."""
        found = self.storage.entered_link(job_id, entry.next_phase, before=before, expires_in=expires_in)
        if found is None or found.checkpoint.created_at != entry.created_at:  # a newer entry since: not that one
            return None
        return found

    def checkpoint_link(self, job: Job, *, expires_in: int = 300) -> StateLink | None:
        """A short-lived link to the state of ``job``'s checkpoint (as a read of the job found it) when the store keeps
        it as an object of its own, else None (also when a write has changed the job since)."""
        found = self.storage.checkpoint_link(validate_job_id(job.job_id), expires_in=expires_in)
        if found is None or job.checkpoint is None or found.checkpoint.created_at != job.checkpoint.created_at:
            return None
        if found.sequence is not None and found.sequence != job.sequence:  # written since, maybe in the same ms
            return None
        return found

    def result_link(self, job: Job, *, expires_in: int = 300) -> ResultLink | None:
        """A short-lived link to ``job``'s result (as a read of the job found it) when the store keeps it as an object
        of its own, else None (also when a write has changed the job since)."""
        found = self.storage.result_link(validate_job_id(job.job_id), expires_in=expires_in)
        if found is None or found.sequence != job.sequence:
            return None
        return found

    def _entry_names(self, job_id: str, phase: str) -> tuple[RecentJob, list[str]]:
        """The job (its newest write) and the names ``phase``'s entries may be kept under (its current and old)."""
        view = self.storage.get_job_view(validate_job_id(job_id), history=1)
        if view is None:
            raise JobNotFoundError(job_id)
        if view.job.pipeline not in self.pipelines.names:
            return view, [phase]
        pipeline = self.pipelines.get(view.job.pipeline)
        try:
            current = pipeline.get_phase(phase).name
        except UnknownPhaseError as exc:
            raise EnteredStateNotFoundError(job_id, phase, str(exc)) from None
        return view, [current, *(old for old, new in pipeline.aliases.items() if new == current)]

    def maps(self, job_id: str) -> list[tuple[MapRecord, list[MapItem]]]:
        """Every map the job has run, oldest first, with its item records (each read: an operator's view)."""
        if self.storage.get_route(validate_job_id(job_id)) is None:
            raise JobNotFoundError(job_id)
        return [(record, self.storage.get_items(job_id, record.fan_out.id)) for record in self.storage.get_maps(job_id)]

    def map_item(self, job_id: str, map_id: str, index: int) -> MapItem:
        """Item ``index`` of the job's map ``map_id``; MapItemNotFoundError (a JobNotFoundError) says what's missing."""
        if self.storage.get_route(validate_job_id(job_id)) is None:
            raise JobNotFoundError(job_id)
        record = next((found for found in self.storage.get_maps(job_id) if found.fan_out.id == map_id), None)
        if record is None:
            raise MapItemNotFoundError(job_id, f'Job "{job_id}" has no map "{map_id}"')
        item = self.storage.get_item(job_id, map_id, index) if 0 <= index < record.fan_out.count else None
        if item is None:
            message = f'Map "{map_id}" of job "{job_id}" has no item {index} (it has {record.fan_out.count})'
            raise MapItemNotFoundError(job_id, message)
        return item

    def cost(self, job_id: str) -> JobCost:
        """What the job has cost so far at this Cairn's prices: in all, per meter and per phase run (recent history)."""
        view = self.storage.get_job_view(validate_job_id(job_id))
        if view is None:
            raise JobNotFoundError(job_id)
        return job_cost(view.job, self.prices)

    def list(self, *, status: JobStatus | str | None = None) -> list[Job]:
        """The jobs in storage, newest first, optionally only those with ``status``."""
        return self.storage.list_jobs(status=JobStatus(status) if status is not None else None)

    def run_until_idle(self, *, max_steps: int | None = None) -> int:
        """Run queued advances in-process until none is left to run (the inline scheduler only); how many ran.

        First the jobs a dead process left running are recovered (:meth:`recover`). Delays (sleeps,
        retry backoffs, in seconds) are waited out (on the scheduler's clock, which a test can make
        skip time); a waiting job's timeout is not: the job waits for its signal (``signal``) while
        the other jobs run on, and the timeout runs on a later call once the clock has passed it.
        """
        if self._inline is None:
            raise InvalidInputError("run_until_idle() runs the inline scheduler; this Cairn was given another one")
        self.recover()
        return self._inline.drain(max_steps=max_steps)
