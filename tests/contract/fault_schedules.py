"""Fault schedules: run a job through process deaths and lost responses, and check it ends as a crash-free run.

A schedule lists faults at storage calls, numbered across the whole run (every
process counts on from where the last one died): a process death just before
or just after the call, or a lost response (the write lands, the caller sees
a retryable error and the engine sends the same request again). A schedule on
DynamoDB may also lose the responses of chosen AWS calls (botocore level).

Each "process" is a :class:`FaultyStorage` with the schedule's remaining faults
and a fresh :class:`InlineScheduler` on the fake clock; a :class:`SimulatedCrash`
ends it and its queue dies with it. After a death the job is recovered by a
user's ``run_pipeline(..., retry_mode="resume")`` or by the sweep (after the
dead worker's lease and any retry backoff have run out, an advance of the
job's ``nextPhase`` at its current sequence; on DynamoDB found by the real
``stalled_jobs`` query), as the schedule says.

Messages are delivered at least once: a schedule may deliver every message
twice, and at each sweep the messages sent before the death are delivered
again. A message whose sequence is not the job's current one must do nothing;
the self-looping phase is where only the sequence can tell.
"""

from __future__ import annotations

import itertools
import os
import random
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from hypothesis import strategies as st

from cairn import Done, InlineScheduler, Job, JobStatus, Next, PhaseContext, Pipeline, RetryPolicy, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.core.engine import WRITE_RESOLVE_ATTEMPTS, advance_phase
from cairn.core.storage_port import Storage
from cairn.testing.faults import WRITES, Fault, FaultKind, FaultyStorage, LosingResponses, SimulatedCrash
from cairn.testing.serialised import one_call_at_a_time
from tests.aws import new_table
from tests.support import FakeClock, counters, job_of, record_figure

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Recovery = Literal["resume", "sweep"]
Effect = tuple[str, str]
Transition = tuple[str, str, str | None]

#: ``make proof`` sets this: the hypothesis examples and the sampled multi-fault schedules are multiplied by it.
SCALE = max(1, int(os.environ.get("CAIRN_PROOF_SCALE", "1")))

ITEMS = ("ash", "birch", "cedar")
LOOPS = ("one", "two", "three")
WEIGHTS = {"ash": 3, "birch": 5, "cedar": 7}
LEASE_SECONDS = 60.0
BACKOFF_SECONDS = 30.0
#: The sweep's idle threshold: shorter than the lease and the backoff, so a sweep in between must skip the job.
IDLE_SECONDS = 10.0
#: A lost response is resolved by sending the write again, at most WRITE_RESOLVE_ATTEMPTS times in all.
MAX_LOSSES_IN_A_ROW = WRITE_RESOLVE_ATTEMPTS - 1
CRASHES: tuple[FaultKind, ...] = ("crash-before", "crash-after")
KINDS: tuple[FaultKind, ...] = (*CRASHES, "lost-response")
RECOVERIES: tuple[Recovery, ...] = ("resume", "sweep")
INITIAL_STATE: dict[str, Any] = {"items": list(ITEMS), "collected": [], "weight": 0, "looped": [], "tripped": False}
AWS_WRITES = frozenset({"put_item", "update_item", "batch_write_item", "delete_item"})

#: Schedules run (and passed) per storage, the faults they injected and the seconds they took: printed by
#: tests/conftest.py at the end of the session.
SCHEDULES_RUN: Counter[str] = Counter()
FAULTS_INJECTED: Counter[str] = Counter()
SECONDS: dict[str, float] = defaultdict(float)

_job_numbers = itertools.count()


class UpstreamNotReady(Exception):
    """The one transient failure of the ``check`` phase."""


def build_pipeline(effects: list[Effect]) -> Pipeline[Any]:
    """Four phases; every effect (appended to ``effects``) is followed by the write that checkpoints it.

    ``collect`` handles the items one at a time with a save after each;
    ``loop`` handles one item per invocation and returns ``Next("loop")`` until
    none is left; ``check`` fails once (retried after a backoff); ``finish``
    returns the result. So a death redoes at most one effect.
    """
    pipeline: Pipeline[Any] = Pipeline("fault-schedules")

    @pipeline.phase(timeout=int(LEASE_SECONDS), lease_seconds=LEASE_SECONDS)
    def collect(ctx: PhaseContext[Any]) -> Next:
        state = dict(ctx.state)
        for item in state["items"]:
            if item in state["collected"]:
                continue
            effects.append(("collect", item))
            ctx.add_usage(items=1)
            state = {**state, "collected": [*state["collected"], item], "weight": state["weight"] + WEIGHTS[item]}
            ctx.save_state(state)
        return Next("loop", {**state, "queue": list(LOOPS)})

    @pipeline.phase(timeout=int(LEASE_SECONDS), lease_seconds=LEASE_SECONDS)
    def loop(ctx: PhaseContext[Any]) -> Next:
        state = ctx.state
        item, rest = state["queue"][0], state["queue"][1:]
        effects.append(("loop", item))
        ctx.add_usage(loops=1)
        return Next("loop" if rest else "check", {**state, "queue": rest, "looped": [*state["looped"], item]})

    @pipeline.phase(
        retry=RetryPolicy(max_attempts=2, backoff=BACKOFF_SECONDS, jitter=False),
        timeout=int(LEASE_SECONDS),
        lease_seconds=LEASE_SECONDS,
    )
    def check(ctx: PhaseContext[Any]) -> Next:
        ctx.add_usage(checks=1)
        if not ctx.state["tripped"]:
            effects.append(("check", "fail"))
            ctx.save_state({**ctx.state, "tripped": True})
            raise UpstreamNotReady("upstream not ready yet")
        effects.append(("check", "pass"))
        return Next("finish", {**ctx.state, "checksum": f"{len(ctx.state['looped'])}:{ctx.state['weight']}"})

    @pipeline.phase(timeout=int(LEASE_SECONDS), lease_seconds=LEASE_SECONDS)
    def finish(ctx: PhaseContext[Any]) -> Done:
        state = ctx.state
        effects.append(("finish", state["checksum"]))
        ctx.add_usage(finishes=1)
        return Done({"items": state["collected"], "looped": state["looped"], "checksum": state["checksum"]})

    return pipeline


# -- schedules -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Schedule:
    """Faults at storage calls (numbered across the run), AWS calls whose responses are lost, and recoveries.

    The recovery after the n-th death is ``recoveries[n % len(recoveries)]``. With ``duplicates`` every
    message is delivered twice (at-least-once delivery): the copy, right after the original, must do nothing.
    """

    faults: tuple[Fault, ...] = ()
    recoveries: tuple[Recovery, ...] = ("resume",)
    lost_calls: frozenset[int] = frozenset()
    duplicates: bool = False

    def describe(self) -> str:
        faults = ", ".join(f"#{fault.operation} {fault.kind}" for fault in self.faults) or "none"
        text = f"faults [{faults}], recoveries {list(self.recoveries)}"
        if self.duplicates:
            text += ", every message delivered twice"
        if self.lost_calls:
            text += f", lost AWS responses at calls {sorted(self.lost_calls)}"
        return text


def normalised(faults: Iterable[Fault]) -> tuple[Fault, ...]:
    """One fault per call (the first given wins), in order, never MAX_LOSSES_IN_A_ROW + 1 lost responses in a row.

    Consecutive lost responses land on one logical write (each resend is the
    next call), and the engine gives up after WRITE_RESOLVE_ATTEMPTS of them.
    """
    by_call: dict[int, FaultKind] = {}
    for fault in faults:
        by_call.setdefault(fault.operation, fault.kind)
    kept: list[Fault] = []
    in_a_row = 0
    for operation in sorted(by_call):
        kind = by_call[operation]
        if kind == "lost-response":
            follows = bool(kept) and kept[-1].operation == operation - 1 and kept[-1].kind == "lost-response"
            in_a_row = in_a_row + 1 if follows else 1
            if in_a_row > MAX_LOSSES_IN_A_ROW:
                in_a_row = 0
                continue
        kept.append(Fault(operation, kind))
    return tuple(kept)


def single_fault_schedules(operations: list[str], *, duplicates: bool = False) -> Iterator[Schedule]:
    """Every call of the crash-free run (``operations``): a death before and after it with each recovery; at every
    write, one lost response and MAX_LOSSES_IN_A_ROW lost responses in a row."""
    for index, name in enumerate(operations):
        for kind in CRASHES:
            for recovery in RECOVERIES:
                yield Schedule((Fault(index, kind),), (recovery,), duplicates=duplicates)
        if name in WRITES:
            yield Schedule((Fault(index, "lost-response"),), duplicates=duplicates)
            burst = range(index, index + MAX_LOSSES_IN_A_ROW)
            yield Schedule(tuple(Fault(call, "lost-response") for call in burst), duplicates=duplicates)


def pair_schedules(calls: int) -> list[Schedule]:
    """Every pair of faults at calls below ``calls``, each kind, and for two deaths each order of recoveries;
    every other one with each message delivered twice."""
    pairs: list[Schedule] = []
    for first, second in itertools.combinations(range(calls), 2):
        for kind_1, kind_2 in itertools.product(KINDS, KINDS):
            faults = (Fault(first, kind_1), Fault(second, kind_2))
            deaths = sum(kind in CRASHES for kind in (kind_1, kind_2))
            for recoveries in itertools.product(RECOVERIES, repeat=deaths):
                pairs.append(Schedule(faults, recoveries or ("resume",), duplicates=len(pairs) % 2 == 1))
    return pairs


def sampled(schedules: list[Schedule], count: int, seed: int) -> list[Schedule]:
    """A fixed (seeded) sample of ``count`` schedules, in their original order; all of them if fewer."""
    if count >= len(schedules):
        return schedules
    chosen = sorted(random.Random(seed).sample(range(len(schedules)), count))
    return [schedules[index] for index in chosen]


@st.composite
def schedules(
    draw: st.DrawFn, calls: int, aws_calls: int = 0, max_faults: int = 10, kinds: tuple[FaultKind, ...] = KINDS
) -> Schedule:
    """Any number of faults of ``kinds`` at calls below ``calls`` (bursts of lost responses included), any
    recoveries, and (with ``aws_calls``) any set of AWS calls below it whose responses are lost.

    Lost responses at both levels on one logical write would add up past the engine's resends: a schedule
    with AWS-level losses takes only deaths from ``kinds``.
    """
    faults: list[Fault] = []
    for _ in range(draw(st.integers(0, max_faults))):
        operation = draw(st.integers(0, calls - 1))
        kind = draw(st.sampled_from(kinds))
        repeat = draw(st.integers(1, MAX_LOSSES_IN_A_ROW)) if kind == "lost-response" else 1
        faults.extend(Fault(operation + offset, kind) for offset in range(repeat))
    recoveries = tuple(draw(st.lists(st.sampled_from(RECOVERIES), min_size=1, max_size=4)))
    lost_calls = frozenset(draw(st.sets(st.integers(0, aws_calls - 1), max_size=12))) if aws_calls else frozenset()
    return Schedule(normalised(faults), recoveries, lost_calls, duplicates=draw(st.booleans()))


# -- backends --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """An advance message: the phase it names and the sequence it was sent at."""

    phase: str | None
    sequence: int


class Backend:
    """One storage under test: the supervisor's fault-free view, the storage processes write through, the sweep."""

    def __init__(self, name: str, store: Storage, clock: FakeClock) -> None:
        self.name = name
        self.store = store
        self.clock = clock

    def worker(self, schedule: Schedule) -> tuple[Storage, BotocoreLosses | None]:
        """The storage the job's processes use (each wraps it in a FaultyStorage)."""
        return self.store, None

    def finished(self) -> None:
        """Called after each schedule."""

    def stalled(self, job_id: str) -> list[Message]:
        """What the sweep finds for ``job_id``: a running job without a live claim, idle, its backoff over."""
        now = self.clock()
        job = self.store.get_job(job_id)
        if job is None or job.status != JobStatus.RUNNING or job.has_live_claim(now):
            return []
        if job.updated_at >= now - int(IDLE_SECONDS * 1000) or (job.not_before or 0) > now:
            return []
        return [Message(job.checkpoint.next_phase if job.checkpoint else None, job.sequence)]


class DynamoDBBackend(Backend):
    """DynamoDB on moto; the sweep is the real ``stalled_jobs`` query.

    moto sorts a whole table on every query, so the jobs move to a fresh table
    every ``TABLE_ROTATION`` schedules to keep each call's cost flat.
    """

    TABLE_ROTATION = 25
    store: DynamoDBStorage

    def __init__(self, name: str, clock: FakeClock, client: DynamoDBClient) -> None:
        super().__init__(name, DynamoDBStorage(new_table(client), client=client, clock=clock), clock)
        self.admin = client
        self._schedules = 0

    def finished(self) -> None:
        self._schedules += 1
        if self._schedules % self.TABLE_ROTATION == 0:
            old = self.store.table_name
            self.store = DynamoDBStorage(new_table(self.admin), client=self.admin, clock=self.clock)
            self.admin.delete_table(TableName=old)

    def stalled(self, job_id: str) -> list[Message]:
        found = self.store.stalled_jobs(idle_seconds=IDLE_SECONDS, limit=1000)
        return [Message(job.next_phase, job.sequence) for job in found if job.job_id == job_id]


class BotocoreLosses:
    """Decides which AWS calls lose their response: writes numbered in ``numbers``, but never more than
    MAX_LOSSES_IN_A_ROW attempts of one logical write in a row (the engine gives up after that)."""

    def __init__(self, numbers: frozenset[int]) -> None:
        self.numbers = numbers
        self.calls: list[str] = []
        self.lost = 0
        self._in_a_row = 0
        self._final = False

    def noted(self, name: str, kwargs: dict[str, Any]) -> None:
        """A call is about to be made; an update or a conditional put ends one attempt of a logical write."""
        self.calls.append(name)
        self._final = name == "update_item" or (name == "put_item" and "ConditionExpression" in kwargs)

    def __call__(self, name: str, number: int) -> bool:
        """Whether the answer of call ``number`` is lost. An answer the engine gets that ends an attempt (a
        response, or a refusal such as a failed condition) ends the run of lost attempts; a refusal whose answer
        is lost is one more lost attempt of the same logical write."""
        lose = name in AWS_WRITES and number in self.numbers and self._in_a_row < MAX_LOSSES_IN_A_ROW
        if lose:
            self._in_a_row += 1
            self.lost += 1
        elif self._final:
            self._in_a_row = 0
        return lose


class _Noting:
    """A boto3 client proxy that tells a :class:`BotocoreLosses` about every call."""

    def __init__(self, client: Any, losses: BotocoreLosses) -> None:
        self._client = client
        self._losses = losses

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if name.startswith("_") or not callable(attribute) or name in ("get_waiter", "get_paginator", "can_paginate"):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            self._losses.noted(name, kwargs)
            return attribute(*args, **kwargs)

        return call


class BotocoreBackend(DynamoDBBackend):
    """DynamoDB on moto, with processes whose client (botocore retries off) loses the responses of chosen calls."""

    def __init__(self, name: str, clock: FakeClock, client: DynamoDBClient, losing: DynamoDBClient) -> None:
        super().__init__(name, clock, client)
        self.client = losing

    def worker(self, schedule: Schedule) -> tuple[Storage, BotocoreLosses | None]:
        losses = BotocoreLosses(schedule.lost_calls)
        losing = one_call_at_a_time(LosingResponses(_Noting(self.client, losses), losses))
        storage = DynamoDBStorage(self.store.table_name, client=cast("DynamoDBClient", losing), clock=self.clock)
        return storage, losses


# -- the driver ------------------------------------------------------------------------------


class Deliveries(InlineScheduler):
    """A process's scheduler on the fake clock: notes every message sent (in ``sent``) and, with ``duplicates``,
    delivers each one twice in a row. A second delivery must do nothing: the first moved the job on."""

    def __init__(self, clock: FakeClock, pipeline: Pipeline[Any], storage: Storage, *, duplicates: bool) -> None:
        super().__init__(now=clock.monotonic, sleep=clock.sleep)
        self.duplicates = duplicates
        self.sent: list[Message] = []
        delivered: Counter[Message] = Counter()

        def deliver(job_id: str, *, phase: str, sequence: int | None, **extra: Any) -> None:
            message = Message(phase, sequence or 0)
            again = delivered[message] > 0
            delivered[message] += 1
            job = advance_phase(
                job_id, pipeline, storage=storage, scheduler=self, phase=phase, sequence=sequence, **extra
            )
            assert job is None or not again, f"the second delivery of {message} ran the phase again"

        self.bind(deliver)

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        assert sequence is not None, f"an advance of {phase!r} was scheduled without a sequence"
        self.sent.append(Message(phase, sequence))
        for _ in range(2 if self.duplicates else 1):
            super().schedule_advance(job_id, phase=phase, sequence=sequence, delay=delay)


@dataclass
class Run:
    """What happened while a job was driven to completion through a schedule (``job``: as it ended)."""

    effects: list[Effect]
    job: Job | None = None
    processes: int = 0
    crashes: int = 0
    lost: int = 0
    sweeps: int = 0
    operations: list[str] = field(default_factory=list)
    sent: list[Message] = field(default_factory=list)
    aws_calls: list[str] = field(default_factory=list)


def drive(backend: Backend, schedule: Schedule) -> Run:
    """Run a fresh job through ``schedule``, one process after another, until it is complete."""
    clock = backend.clock
    store = backend.store
    job_id = f"faults-{backend.name}-{next(_job_numbers)}"
    effects: list[Effect] = []
    pipeline = build_pipeline(effects)
    worker, losses = backend.worker(schedule)
    deaths = sum(fault.kind in CRASHES for fault in schedule.faults)
    run = Run(effects)
    for _ in range(deaths + 1):
        job = store.get_job(job_id)
        if job is not None and job.status == JobStatus.COMPLETE:
            break
        offset = len(run.operations)
        remaining = [Fault(f.operation - offset, f.kind) for f in schedule.faults if f.operation >= offset]
        process = FaultyStorage(worker, remaining)
        scheduler = Deliveries(clock, pipeline, process, duplicates=schedule.duplicates)
        run.processes += 1
        try:
            if job is None or _recovery(schedule, run.crashes - 1) == "resume":
                run_pipeline(
                    job_id,
                    pipeline,
                    storage=process,
                    scheduler=scheduler,
                    initial_state=INITIAL_STATE,
                    retry_mode="resume",
                )
            else:
                _sweep(backend, pipeline, job, scheduler, run.sent)
                run.sweeps += 1
            scheduler.drain()
        except SimulatedCrash:
            run.crashes += 1
            continue  # the dead process's queue dies with it
        finally:
            run.operations.extend(process.operations)
            run.lost += process.lost_responses
            run.sent.extend(scheduler.sent)
        done = job_of(store, job_id)
        assert done.status == JobStatus.COMPLETE, (
            f"the process ended without a death, its queue empty, but the job is {done.status.value} "
            f"at {done.checkpoint.next_phase if done.checkpoint else None!r} (error: {done.error})"
        )
        break
    run.job = job_of(store, job_id)
    assert run.job.status == JobStatus.COMPLETE, (
        f"job not complete after {run.processes} process(es) and {run.crashes} death(s): "
        f"status {run.job.status.value}, error {run.job.error}"
    )
    if losses is not None:
        run.lost += losses.lost
        run.aws_calls = losses.calls
    return run


def _recovery(schedule: Schedule, death: int) -> Recovery:
    return schedule.recoveries[death % len(schedule.recoveries)]


def _sweep(
    backend: Backend, pipeline: Pipeline[Any], job: Job, scheduler: InlineScheduler, sent: list[Message]
) -> None:
    """The sweep after a death: it leaves the job alone while the dead worker's claim or the retry's backoff
    holds, then finds it and schedules an advance of its ``nextPhase`` at its current sequence.

    Messages sent before the death may still arrive then: each one at an older sequence that names the
    current phase (only its sequence tells it is stale) is delivered again, and must do nothing.
    """
    clock, store = backend.clock, backend.store
    assert job.status == JobStatus.RUNNING, f"job stopped with {job.status.value}: {job.error}"
    assert job.checkpoint is not None
    clock.advance(IDLE_SECONDS + 1)
    waiting = job.has_live_claim(clock()) or (job.not_before or 0) > clock()
    found = backend.stalled(job.job_id)
    assert bool(found) != waiting, (
        f"the sweep {'found' if found else 'missed'} a job whose lease ends at {job.lease_expires_at} and backoff "
        f"at {job.not_before} (now {clock()})"
    )
    if job.has_live_claim(clock()):
        # The dead worker's claim still holds: a message at the current sequence must do nothing.
        blocked = advance_phase(
            job.job_id,
            pipeline,
            storage=store,
            scheduler=InlineScheduler(),
            phase=job.checkpoint.next_phase,
            sequence=job.sequence,
        )
        assert blocked is None, "a second worker ran a phase while the dead worker's claim was live"
    if waiting:
        clock.advance(max(LEASE_SECONDS, BACKOFF_SECONDS) + 1)
        found = backend.stalled(job.job_id)
    assert found, f"job left running at {job.checkpoint.next_phase!r} with nothing scheduled: the sweep missed it"
    assert found == [Message(job.checkpoint.next_phase, job.sequence)], f"the sweep found {found} for {job}"
    for stale in dict.fromkeys(sent):
        if stale.phase == job.checkpoint.next_phase and stale.sequence != job.sequence:
            late = advance_phase(
                job.job_id,
                pipeline,
                storage=store,
                scheduler=InlineScheduler(),
                phase=stale.phase,
                sequence=stale.sequence,
            )
            assert late is None, f"a stale message {stale} ran a phase of the job at sequence {job.sequence}"
    scheduler.schedule_advance(job.job_id, phase=found[0].phase or "", sequence=found[0].sequence)


# -- the checks ------------------------------------------------------------------------------


def transitions_of(job: Job) -> list[Transition]:
    """The committed phase transitions (outcomes other than a retry), in order."""
    return [(record.phase, record.outcome, record.next_phase) for record in job.phases if record.outcome != "retry"]


def records_of(job: Job) -> list[tuple[str, int, str, str | None]]:
    """Every phase record, retries included."""
    return [(record.phase, record.attempt, record.outcome, record.next_phase) for record in job.phases]


@dataclass(frozen=True)
class Baseline:
    """The crash-free run."""

    result: Any
    usage: dict[str, int | float]
    transitions: list[Transition]
    records: list[tuple[str, int, str, str | None]]
    log: list[str]
    effects: list[Effect]
    operations: list[str]
    aws_calls: list[str]


def crash_free(backend: Backend, *, duplicates: bool = False) -> Baseline:
    run = drive(backend, Schedule(duplicates=duplicates))
    job = run.job
    assert job is not None
    assert run.processes == 1
    assert run.crashes == 0
    assert run.lost == 0
    assert [record.outcome for record in job.phases].count("retry") == 1
    return Baseline(
        result=job.result,
        usage=counters(job.usage),
        transitions=transitions_of(job),
        records=records_of(job),
        log=[entry.message for entry in job.log],
        effects=list(run.effects),
        operations=list(run.operations),
        aws_calls=list(run.aws_calls),
    )


def check(run: Run, baseline: Baseline) -> None:
    """The job ended as the crash-free run did, committed each unit of work once, and redid only what a death
    cost; with no death, it completed in one process and redid nothing at all."""
    job = run.job
    assert job is not None
    assert job.status == JobStatus.COMPLETE
    assert job.result == baseline.result
    assert (job.checkpoint, job.error, job.lease_owner, job.not_before) == (None, None, None, None)
    # Usage is journaled with the write that commits the work: counted once per committed unit of work.
    assert counters(job.usage) == baseline.usage, "usage differs from the crash-free run: some work was committed twice"
    assert transitions_of(job) == baseline.transitions, "the committed phase transitions differ"
    # The failing-once phase: a death may hide its retry record (its tripped state was saved), never add one.
    retries = [record for record in job.phases if record.outcome == "retry"]
    assert len(retries) <= 1
    assert all(record.phase == "check" for record in retries)
    # A retry waits out its backoff (the sweep too), unless a user restarts the job (run_pipeline) meanwhile.
    restarts = [entry.timestamp for entry in job.log if entry.message.startswith("Job started")]
    for retry in retries:
        later = job.phases[job.phases.index(retry) + 1 :]
        rerun = next((record for record in later if record.phase == "check"), None)
        assert rerun is not None, "the failed phase never ran again"
        waited = rerun.started_at - retry.ended_at >= BACKOFF_SECONDS * 1000
        assert waited or any(retry.ended_at <= at <= rerun.started_at for at in restarts), (
            f"the retry of check ran {rerun.started_at - retry.ended_at} ms after it failed, before its backoff ended"
        )
    # Effects: none lost, in order; each death redoes at most the one effect since the last checkpoint.
    assert list(dict.fromkeys(run.effects)) == baseline.effects, "an effect is missing or out of order"
    repeats = len(run.effects) - len(baseline.effects)
    assert repeats <= run.crashes, f"{repeats} repeated effect(s) after {run.crashes} death(s): {run.effects}"
    if run.crashes == 0:
        assert run.processes == 1, "lost responses alone must not need a second process"
        assert run.effects == baseline.effects, "a lost response made work run again"
        assert records_of(job) == baseline.records
        assert [entry.message for entry in job.log] == baseline.log, "a lost response duplicated history"


def run_schedule(backend: Backend, baseline: Baseline, schedule: Schedule) -> Run:
    """Drive one schedule, check it, and count it; a failure names the schedule."""
    started = time.perf_counter()
    try:
        run = drive(backend, schedule)
        check(run, baseline)
    except Exception as exc:
        raise AssertionError(f"[{backend.name}] schedule {schedule.describe()}: {exc}") from exc
    finally:
        backend.finished()
        SECONDS[backend.name] += time.perf_counter() - started
    SCHEDULES_RUN[backend.name] += 1
    FAULTS_INJECTED[backend.name] += run.crashes + run.lost
    return run


def summary() -> str:
    """``fault schedules run: file=..., dynamodb=..., ...`` (empty when none ran)."""
    runs = SCHEDULES_RUN
    if not runs:
        return ""
    order = ["file", "dynamodb", "dynamodb-botocore", "memory"]
    names = [name for name in order if name in runs] + sorted(set(runs) - set(order))
    parts = ", ".join(f"{name}={runs[name]} ({SECONDS[name]:.0f}s)" for name in names)
    durable = sum(count for name, count in runs.items() if name != "memory")
    faults = sum(FAULTS_INJECTED.values())
    return (
        f"fault schedules run: {parts} (DynamoDB and file: {durable}; total: {sum(runs.values())}; "
        f"faults injected: {faults}; scale {SCALE})"
    )


def record_figures() -> None:
    """The counts for the reliability report (:func:`tests.support.record_figure`), when any schedule ran."""
    if SCHEDULES_RUN:
        durable = sum(count for name, count in SCHEDULES_RUN.items() if name != "memory")
        record_figure(
            "fault_schedules",
            durable=durable,
            total=sum(SCHEDULES_RUN.values()),
            faults=sum(FAULTS_INJECTED.values()),
            scale=SCALE,
        )
