"""A fair share per owner (cairn.features.owner_share): one owner's burst never takes more than its share.

Measured inside the phase code, on every kind of store. The fairness and ordering tests run on the test
kit's skipping clock, with Lambda's concurrent invocations modelled on one thread (:class:`Driver`): a
phase that is running delivers the advances falling due meanwhile, each run beside it, so which phases
run at once, and in what order, is decided by the queue and the clock, never by the machine's speed. A
dead worker's slot frees at its lease (the clock skipped there); a duplicate advance of a waiting job
runs nothing twice; a slot given back goes to the oldest waiting job at once (the skipping clock shows it
never idle); a lost wake-up is made up by the sweep; an owner's own limit overrides the default either way.
One test races real threads, for the locks alone: whatever the interleaving, the share holds.
"""

from __future__ import annotations

import heapq
import itertools
import math
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from cairn import (
    Cairn,
    Done,
    FileStorage,
    InlineScheduler,
    JobStatus,
    MemoryStorage,
    Next,
    PhaseContext,
    Pipeline,
    RetryPolicy,
)
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.core.engine.claimed_run import claim_run
from cairn.core.errors import StorageError
from cairn.core.storage_port import Storage
from cairn.features.owner_share import OwnerShares, ShareTaken, SlotRequest, take_share
from cairn.testing.serialised import one_call_at_a_time
from tests.aws import dynamodb_client, new_table
from tests.support import FakeClock

LEASE = 150.0
WORKERS = 8
"""How many advances the driver runs at once, as Lambda's concurrent invocations."""
MAX_DELIVERIES = 20_000
"""The driver's safety net: more deliveries than this is a job that never finishes."""
SHARE_WAIT = 1.0
"""How long a job past its share waits before it looks again (jittered up to twice as long), on the skipping clock."""
RACE_TIMEOUT = 120.0
"""The race test's safety net (seconds): not a ceiling it is expected to approach, only one that ends a hang."""
RACE_JOBS = 8
RACE_THREADS = 3


class Probe:
    """What ran, counted inside the phase code: phases running per owner (and the most at once), runs per phase.

    ``starts`` is the order in which phases began (no clock involved); ``beside`` what else was running,
    per owner, when each phase began; ``on_enter`` is called as each begins.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running: Counter[str] = Counter()
        self.most: Counter[str] = Counter()
        self.runs: Counter[tuple[str, str]] = Counter()
        self.starts: list[tuple[str, str]] = []
        self.beside: dict[tuple[str, str], Counter[str]] = {}
        self.on_enter: Callable[[str], None] | None = None

    def enter(self, owner: str, job_id: str, phase: str) -> None:
        with self._lock:
            self.running[owner] += 1
            self.most[owner] = max(self.most[owner], self.running[owner])
            self.runs[(job_id, phase)] += 1
            self.starts.append((job_id, phase))
            self.beside[(job_id, phase)] = Counter(self.running)
        if self.on_enter is not None:
            self.on_enter(owner)

    def leave(self, owner: str) -> None:
        with self._lock:
            self.running[owner] -= 1

    def last_start(self, owner: str) -> int:
        """Where the last phase of ``owner``'s jobs began, in the order of starts."""
        return max(index for index, (job_id, _) in enumerate(self.starts) if job_id.split("-")[0] == owner)


def pipeline_of(probe: Probe, inside: Callable[[], None]) -> Pipeline[Any]:
    """Two phases; each counts itself in ``probe`` under its job's owner (the job id's prefix) while ``inside`` runs."""
    pipeline: Pipeline[Any] = Pipeline("shared")

    def body(ctx: PhaseContext[Any]) -> None:
        owner = ctx.job_id.split("-")[0]
        probe.enter(owner, ctx.job_id, ctx.phase)
        try:
            inside()
        finally:
            probe.leave(owner)

    @pipeline.phase(lease_seconds=LEASE)
    def first(ctx: PhaseContext[Any]) -> Next:
        body(ctx)
        return Next("second", ctx.state)

    @pipeline.phase(lease_seconds=LEASE)
    def second(ctx: PhaseContext[Any]) -> Done:
        body(ctx)
        return Done({"job": ctx.job_id})

    return pipeline


class Driver:
    """Lambda's concurrent invocations on one thread and a skipping clock: who runs beside whom is decided by logic.

    Scheduled advances are queued by the moment (on ``clock``) they fall due. :meth:`run` delivers them in
    that order (first in, first out among equals), skipping the clock to each. A phase calls
    :meth:`inside` while it runs: for those seconds the driver delivers what falls due, each advance run
    *beside* the phase (nested in it, up to :data:`WORKERS` at once: one started beside another ends
    first), and only then does the phase end. So a burst's second job claims, takes a slot and runs while
    the first is still inside its phase, the third finds the share full, and so on. What runs beside what
    is decided by the queue and the clock (and by the jitter the library adds to a wait's delay, which
    orders only the waiting jobs' later looks), never by threads or the machine's speed; the tests assert
    only what every such order must show.
    """

    def __init__(self, clock: FakeClock, workers: int = WORKERS) -> None:
        self.clock = clock
        self.workers = workers
        self.in_flight = 0
        self.delivered = 0
        self._queue: list[tuple[int, int, Callable[[], object]]] = []
        self._order = itertools.count()

    def submit(self, delay: float, call: Callable[[], object]) -> None:
        heapq.heappush(self._queue, (self.clock() + math.ceil(delay * 1000), next(self._order), call))

    def scheduler(self) -> DriverScheduler:
        return DriverScheduler(self)

    def _deliver(self, until_ms: int) -> None:
        """Run the advances due by ``until_ms``, each at its moment, while fewer than ``workers`` are running."""
        while self._queue and self._queue[0][0] <= until_ms and self.in_flight < self.workers:
            due, _, call = heapq.heappop(self._queue)
            self.clock.advance_to(due)
            self.delivered += 1
            assert self.delivered <= MAX_DELIVERIES, f"{self.delivered} advances delivered: a job never finishes"
            self.in_flight += 1
            try:
                call()
            finally:
                self.in_flight -= 1

    def inside(self, seconds: float) -> None:
        """A phase running for ``seconds``: what falls due meanwhile runs beside it; then the phase ends."""
        until = self.clock() + math.ceil(seconds * 1000)
        self._deliver(until)
        self.clock.advance_to(until)

    def run(self) -> None:
        """Deliver every queued advance (and what they schedule), skipping the clock to each, until none is left."""
        assert self.in_flight == 0
        while self._queue:
            self._deliver(self._queue[0][0])


class DriverScheduler:
    """A scheduler whose advances the driver delivers, through ``app``'s ``advance``."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.app: Cairn | None = None

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        app = self.app
        assert app is not None
        self.driver.submit(delay, lambda: app.advance(job_id, phase=phase, sequence=sequence))


OwnerStores = Callable[[str], Storage]


@pytest.fixture(params=["memory", "file", "dynamodb"])
def owner_stores(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[OwnerStores]:
    """Stores of several owners that share their owners' shares (as owners of one table do), on ``clock``."""
    kind = str(request.param)
    if kind == "dynamodb":
        with mock_aws():
            client = one_call_at_a_time(dynamodb_client())
            base = DynamoDBStorage(new_table(client), client=client, clock=clock)
            yield base.for_owner
        return
    first: dict[str, MemoryStorage | FileStorage] = {}

    def local(owner: str) -> Storage:
        store = MemoryStorage(clock=clock) if kind == "memory" else FileStorage(tmp_path / owner, clock=clock)
        shared = first.setdefault("store", store)  # every owner's own store (or folder); the shares kept in the first
        store.use_share_table(shared.share_table, owner=owner)
        return store

    yield local


def shares(store: Storage, *, default: int, wait: float) -> OwnerShares:
    assert isinstance(store, OwnerShares)
    store.owner_concurrency = default
    store.share_wait_seconds = wait
    return store


def driven_apps(
    owner_stores: OwnerStores, driver: Driver, pipeline: Pipeline[Any], limits: dict[str, int | None], *, default: int
) -> dict[str, Cairn]:
    """One Cairn per owner, advanced by ``driver``; an owner's own limit kept where one is given."""
    apps: dict[str, Cairn] = {}
    for owner, limit in limits.items():
        store = owner_stores(owner)
        kept = shares(store, default=default, wait=SHARE_WAIT)
        if limit is not None:
            kept.set_owner_limit(owner, limit)
        assert kept.limit_for(owner) == (default if limit is None else limit)
        scheduler = driver.scheduler()
        apps[owner] = scheduler.app = Cairn(pipeline, storage=store, scheduler=scheduler)
    return apps


def test_one_owners_burst_takes_its_share_while_another_owner_runs_at_once(
    owner_stores: OwnerStores, clock: FakeClock
) -> None:
    probe = Probe()
    driver = Driver(clock)
    pipeline = pipeline_of(probe, lambda: driver.inside(0.01))
    apps = driven_apps(owner_stores, driver, pipeline, {"a": None, "b": None}, default=2)

    started: list[str] = []

    def start_b_once_a_is_full(owner: str) -> None:
        # owner b's one job is started once owner a's burst is queued and has its share running
        if owner == "a" and probe.running["a"] == 2 and not started:
            started.append(apps["b"].start(pipeline, "b-0").job_id)

    probe.on_enter = start_b_once_a_is_full
    for index in range(50):
        apps["a"].start(pipeline, f"a-{index}")
    driver.run()
    assert started == ["b-0"]
    assert probe.most["a"] == 2  # its share, used in full and never passed
    jobs = {job.job_id: job for app in apps.values() for job in app.list()}
    assert len(jobs) == 51
    assert {job.status for job in jobs.values()} == {JobStatus.COMPLETE}
    assert all(job.share_wait is None for job in jobs.values())
    assert set(probe.runs.values()) == {1}  # each phase of each job ran exactly once
    assert len(probe.runs) == 102
    # owner b's job did not wait for owner a's backlog: both its phases ran beside a's full share ...
    assert probe.beside[("b-0", "first")]["a"] == 2
    assert probe.beside[("b-0", "second")]["a"] == 2
    # ... and were over before a's last phase began
    assert probe.starts.index(("b-0", "second")) < probe.last_start("a")
    waited = [job for job in jobs.values() if any(record.outcome == "release" for record in job.phases)]
    assert waited == []  # a wait for the share adds no history
    assert driver.delivered > 102  # a's backlog did wait for its share: some advances ran no phase


def test_an_owners_own_limit_overrides_the_default_either_way(owner_stores: OwnerStores, clock: FakeClock) -> None:
    probe = Probe()
    driver = Driver(clock)
    pipeline = pipeline_of(probe, lambda: driver.inside(0.3))
    apps = driven_apps(owner_stores, driver, pipeline, {"low": 1, "high": 4}, default=2)
    for index in range(8):
        apps["low"].start(pipeline, f"low-{index}")
        apps["high"].start(pipeline, f"high-{index}")
    driver.run()
    assert probe.most["low"] == 1  # lowered below the default
    assert probe.most["high"] == 4  # raised above it, used in full and never passed
    assert {job.status for app in apps.values() for job in app.list()} == {JobStatus.COMPLETE}
    assert set(probe.runs.values()) == {1}
    assert len(probe.runs) == 32
    low = apps["low"].storage
    assert isinstance(low, OwnerShares)
    low.set_owner_limit("low", None)  # the override dropped: the default applies again
    assert low.limit_for("low") == 2


class Spans:
    """When each phase ran (start and end, on the clock), in the order phases began."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.runs: list[tuple[str, str, int, int]] = []

    def pipeline(self, driver: Driver, seconds: float) -> Pipeline[Any]:
        pipeline: Pipeline[Any] = Pipeline("spans")

        def body(ctx: PhaseContext[Any]) -> None:
            started = self.clock()
            driver.inside(seconds)
            self.runs.append((ctx.job_id, ctx.phase, started, self.clock()))

        @pipeline.phase(lease_seconds=LEASE)
        def first(ctx: PhaseContext[Any]) -> Next:
            body(ctx)
            return Next("second", ctx.state)

        @pipeline.phase(lease_seconds=LEASE)
        def second(ctx: PhaseContext[Any]) -> Done:
            body(ctx)
            return Done(None)

        return pipeline


def test_a_slot_given_back_goes_to_the_oldest_waiting_job_at_once(owner_stores: OwnerStores, clock: FakeClock) -> None:
    """With a share of 1, jobs started at once run one phase after another with no gap, oldest first.

    The jobs' own looks come a minute apart (far later than any phase ends): only the wake-up of a slot
    given back can start the next one, and the skipping clock shows the slot never idle while a job waits.
    """
    store = owner_stores("queue")
    shares(store, default=1, wait=60.0)
    driver = Driver(clock)
    spans = Spans(clock)
    pipeline = spans.pipeline(driver, 0.2)
    scheduler = driver.scheduler()
    app = scheduler.app = Cairn(pipeline, storage=store, scheduler=scheduler)
    jobs = [f"queue-{index}" for index in range(4)]
    for job_id in jobs:
        app.start(pipeline, job_id)
    driver.run()
    assert {job.status for job in app.list()} == {JobStatus.COMPLETE}
    assert [(job_id, phase) for job_id, phase, _, _ in spans.runs] == [
        (job_id, phase) for job_id in jobs for phase in ("first", "second")
    ]  # one at a time, the oldest waiting job first
    for (_, _, _, ended), (_, _, started, _) in itertools.pairwise(spans.runs):
        assert started == ended  # the slot given back was taken at once
    assert spans.runs[-1][3] - spans.runs[0][2] == 8 * 200


def one_phase(probe: Probe) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("one")

    @pipeline.phase(lease_seconds=LEASE, retry=RetryPolicy(max_attempts=2))
    def only(ctx: PhaseContext[Any]) -> Done:
        probe.enter("solo", ctx.job_id, ctx.phase)
        probe.leave("solo")
        return Done(None)

    return pipeline


def test_a_dead_workers_slot_frees_at_its_lease_and_nothing_is_stuck(
    owner_stores: OwnerStores, clock: FakeClock
) -> None:
    store = owner_stores("solo")
    kept = shares(store, default=1, wait=2.0)
    probe = Probe()
    pipeline = one_phase(probe)
    jobs = Cairn(pipeline, storage=store, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    jobs.start(pipeline, "dead")
    jobs.start(pipeline, "alive")
    # a worker claims "dead", takes the owner's one slot, and dies before its phase runs
    run = claim_run("dead", pipeline, store, phase="only", worker="doomed")
    assert run is not None
    held = take_share(run)
    assert held is not None
    assert not isinstance(held, ShareTaken)
    lease_ends = run.job.lease_expires_at
    assert lease_ends == clock() + LEASE * 1000
    jobs.advance("alive", phase="only", sequence=jobs.get("alive").sequence)
    waiting = jobs.get("alive")
    assert waiting.status == JobStatus.RUNNING
    assert waiting.share_wait == "waiting for its owner's share: 1 of 1 phases running"
    # a moment before the dead worker's lease ends its slot still counts: "alive" looks again and waits on
    clock.advance_to(lease_ends - 1)
    assert kept.running_slots(kept.share_owner, clock()) == 1
    jobs.advance("alive", phase="only", sequence=jobs.get("alive").sequence)
    assert jobs.get("alive").share_wait == "waiting for its owner's share: 1 of 1 phases running"
    assert probe.runs == Counter()
    # at the lease's end the slot is free, with nothing to clean up: "alive" runs when it next looks
    clock.advance_to(lease_ends)
    assert kept.running_slots(kept.share_owner, clock()) == 0
    jobs.advance("alive", phase="only", sequence=jobs.get("alive").sequence)
    assert jobs.get("alive").status == JobStatus.COMPLETE
    jobs.run_until_idle()  # the messages left queued, every one now stale, run out and do nothing
    assert jobs.get("dead").status == JobStatus.RUNNING
    assert jobs.recover() == ["dead"]  # the dead worker's job, as the sweep finds it
    jobs.run_until_idle()
    assert {job.job_id: job.status for job in jobs.list()} == {"dead": JobStatus.COMPLETE, "alive": JobStatus.COMPLETE}
    assert probe.runs == Counter({("alive", "only"): 1, ("dead", "only"): 1})
    assert kept.running_slots(kept.share_owner, clock()) == 0


def test_a_duplicate_advance_of_a_waiting_job_runs_nothing_twice(owner_stores: OwnerStores, clock: FakeClock) -> None:
    store = owner_stores("solo")
    shares(store, default=1, wait=2.0)
    probe = Probe()
    pipeline = one_phase(probe)
    jobs = Cairn(pipeline, storage=store, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    jobs.start(pipeline, "busy")
    jobs.start(pipeline, "waits")
    busy = claim_run("busy", pipeline, store, phase="only", worker="w1")
    assert busy is not None
    slot = take_share(busy)
    assert slot is not None
    assert not isinstance(slot, ShareTaken)
    first = jobs.get("waits").sequence
    jobs.advance("waits", phase="only", sequence=first)
    waiting = jobs.get("waits")
    assert waiting.share_wait is not None
    # the same message delivered again finds the job moved on: nothing is written, nothing runs
    assert jobs.advance("waits", phase="only", sequence=first) is None
    assert jobs.get("waits").sequence == waiting.sequence
    slot.give_back()
    # now the share is free: the message the wait scheduled runs the phase once; its duplicate does nothing
    assert jobs.advance("waits", phase="only", sequence=waiting.sequence) is not None
    assert jobs.advance("waits", phase="only", sequence=waiting.sequence) is None
    assert probe.runs == Counter({("waits", "only"): 1})
    done = jobs.get("waits")
    assert done.status == JobStatus.COMPLETE
    assert done.share_wait is None


class Dropped:
    """A scheduler whose messages are lost."""

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        """Lose the message."""


def test_a_waiting_job_whose_wake_up_is_lost_is_revived_by_the_sweep(
    owner_stores: OwnerStores, clock: FakeClock
) -> None:
    store = owner_stores("solo")
    kept = shares(store, default=1, wait=2.0)
    probe = Probe()
    pipeline = one_phase(probe)
    lossy = Cairn(pipeline, storage=store, scheduler=Dropped())
    lossy.start(pipeline, "busy")
    lossy.start(pipeline, "waits")
    busy = claim_run("busy", pipeline, store, phase="only", worker="w1")
    assert busy is not None
    slot = take_share(busy)
    assert slot is not None
    assert not isinstance(slot, ShareTaken)
    lossy.advance("waits", phase="only", sequence=lossy.get("waits").sequence)
    assert lossy.get("waits").share_wait is not None  # it waits; the message that would wake it is lost
    slot.give_back()
    assert kept.running_slots(kept.share_owner, clock()) == 0
    sweeper = Cairn(pipeline, storage=store, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    clock.advance(1.0)
    assert "waits" not in sweeper.recover()  # not yet: it has only just looked
    clock.advance(600.0)
    assert "waits" in sweeper.recover()  # running, no claim, left alone: revived as any such job
    sweeper.run_until_idle()
    assert sweeper.get("waits").status == JobStatus.COMPLETE
    assert probe.runs[("waits", "only")] == 1


class UnreadableShares(MemoryStorage):
    """A memory store whose share cannot be read (a store error on every take)."""

    def take_slot(self, request: SlotRequest) -> ShareTaken | None:
        raise StorageError("the share is unavailable", retryable=True)


def test_a_share_that_cannot_be_read_gives_the_claim_back_and_the_job_looks_again() -> None:
    clock = FakeClock()
    store = UnreadableShares(clock=clock)
    shares(store, default=1, wait=2.0)
    probe = Probe()
    pipeline = one_phase(probe)
    jobs = Cairn(pipeline, storage=store, scheduler=Dropped())
    jobs.start(pipeline, "waits")
    jobs.advance("waits", phase="only", sequence=jobs.get("waits").sequence)
    job = jobs.get("waits")
    assert job.status == JobStatus.RUNNING
    assert job.lease_owner is None  # the claim was given back, not left to expire as a crashed attempt
    assert job.share_wait == "waiting for its owner's share: it could not be read just now"
    assert job.attempt == 1
    assert probe.runs == Counter()


class Messages:
    """A scheduler that queues advances for racing threads at once: a waiting job looks again immediately."""

    def __init__(self) -> None:
        self.queue: queue.Queue[tuple[str, str, int | None] | None] = queue.Queue()

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        self.queue.put((job_id, phase, sequence))


def test_racing_threads_never_pass_the_share_and_every_job_completes(
    owner_stores: OwnerStores, clock: FakeClock
) -> None:
    """The one real-thread race, for the locks alone: threads take and give back slots as they come.

    A waiting job looks again at once (its delay is ignored: the most contention for the share) and the
    clock stands still (no slot expires): only the stores' atomic takes keep the share, whoever wins.
    Nothing about instants or durations is asserted; the timeout only ends a hang.
    """
    store = owner_stores("race")
    shares(store, default=2, wait=0.05)
    probe = Probe()
    pipeline = pipeline_of(probe, lambda: time.sleep(0.001))  # a moment in the phase, for the others to race in
    messages = Messages()
    app = Cairn(pipeline, storage=store, scheduler=messages)
    for index in range(RACE_JOBS):
        app.start(pipeline, f"race-{index}")
    errors: list[BaseException] = []

    def work() -> None:
        while (message := messages.queue.get()) is not None:
            job_id, phase, sequence = message
            try:
                app.advance(job_id, phase=phase, sequence=sequence)
            except BaseException as exc:
                errors.append(exc)
            finally:
                messages.queue.task_done()
        messages.queue.task_done()

    threads = [threading.Thread(target=work, daemon=True) for _ in range(RACE_THREADS)]
    for thread in threads:
        thread.start()
    drained = threading.Thread(target=messages.queue.join, daemon=True)
    drained.start()
    drained.join(RACE_TIMEOUT)
    for _ in threads:
        messages.queue.put(None)
    assert not drained.is_alive(), f"the racing threads still had {messages.queue.qsize()} advances queued (a hang)"
    for thread in threads:
        thread.join(RACE_TIMEOUT)
    assert errors == []
    assert 1 <= probe.most["race"] <= 2  # never past the share, whoever won each race
    assert {job.status for job in app.list()} == {JobStatus.COMPLETE}
    assert len(app.list()) == RACE_JOBS
    assert set(probe.runs.values()) == {1}  # each phase of each job ran exactly once
    assert len(probe.runs) == 2 * RACE_JOBS
    kept = app.storage
    assert isinstance(kept, OwnerShares)
    assert kept.running_slots(kept.share_owner, clock()) == 0
