"""A fair share per owner (cairn.core.owner_share): one owner's burst never takes more than its share.

Measured inside the phase code, with real threads advancing the jobs, on every kind of store; a dead
worker's slot frees at its lease; a duplicate advance of a waiting job runs nothing twice; an owner's
own limit overrides the default either way.
"""

from __future__ import annotations

import heapq
import itertools
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
from cairn.core.owner_share import OwnerShares, ShareTaken, SlotRequest, take_share
from cairn.core.storage_port import Storage
from cairn.testing.serialised import one_call_at_a_time
from tests.aws import dynamodb_client, new_table
from tests.support import FakeClock

TIMEOUT = 120.0
LEASE = 150.0


class Probe:
    """What ran, counted inside the phase code: phases running per owner (and the most at once), runs per phase."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running: Counter[str] = Counter()
        self.most: Counter[str] = Counter()
        self.runs: Counter[tuple[str, str]] = Counter()
        self.starts: dict[str, list[float]] = {}

    def enter(self, owner: str, job_id: str, phase: str) -> None:
        with self._lock:
            self.running[owner] += 1
            self.most[owner] = max(self.most[owner], self.running[owner])
            self.runs[(job_id, phase)] += 1
            self.starts.setdefault(owner, []).append(time.monotonic())

    def leave(self, owner: str) -> None:
        with self._lock:
            self.running[owner] -= 1


def pipeline_of(probe: Probe, *, pause: float = 0.01) -> Pipeline[Any]:
    """Two phases; each counts itself in ``probe`` under its job's owner (the job id's prefix) and sleeps a little."""
    pipeline: Pipeline[Any] = Pipeline("shared")

    def body(ctx: PhaseContext[Any]) -> None:
        owner = ctx.job_id.split("-")[0]
        probe.enter(owner, ctx.job_id, ctx.phase)
        try:
            time.sleep(pause)
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


class Workers:
    """A pool of threads running scheduled advances when they fall due, as Lambda's concurrent invocations do."""

    def __init__(self, count: int) -> None:
        self._queue: list[tuple[float, int, Callable[[], object]]] = []
        self._order = itertools.count()
        self._condition = threading.Condition()
        self._busy = 0
        self._stopped = False
        self.errors: list[BaseException] = []
        self._threads = [threading.Thread(target=self._work, daemon=True) for _ in range(count)]
        for thread in self._threads:
            thread.start()

    def submit(self, delay: float, call: Callable[[], object]) -> None:
        with self._condition:
            heapq.heappush(self._queue, (time.monotonic() + delay, next(self._order), call))
            self._condition.notify()

    def _work(self) -> None:
        while True:
            with self._condition:
                while not self._stopped and (not self._queue or self._queue[0][0] > time.monotonic()):
                    wait = self._queue[0][0] - time.monotonic() if self._queue else None
                    self._condition.wait(wait)
                if self._stopped:
                    return
                _, _, call = heapq.heappop(self._queue)
                self._busy += 1
            try:
                call()
            except BaseException as exc:
                self.errors.append(exc)
            finally:
                with self._condition:
                    self._busy -= 1
                    self._condition.notify_all()

    def wait_idle(self, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        with self._condition:
            while self._queue or self._busy:
                assert time.monotonic() < deadline, f"still busy: {len(self._queue)} queued, {self._busy} running"
                self._condition.wait(0.05)

    def stop(self) -> None:
        with self._condition:
            self._stopped = True
            self._condition.notify_all()


class PoolScheduler:
    """A scheduler whose advances run on the pool, through ``app``'s ``advance``."""

    def __init__(self, workers: Workers) -> None:
        self.workers = workers
        self.app: Cairn | None = None

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        app = self.app
        assert app is not None
        self.workers.submit(delay, lambda: app.advance(job_id, phase=phase, sequence=sequence))


@pytest.fixture(params=["memory", "file", "dynamodb"])
def owner_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[str], Storage]]:
    """Stores of several owners that share their owners' shares (as owners of one table do), on the real clock."""
    kind = str(request.param)
    if kind == "dynamodb":
        with mock_aws():
            client = one_call_at_a_time(dynamodb_client())
            base = DynamoDBStorage(new_table(client), client=client)
            yield base.for_owner
        return
    first: dict[str, Storage] = {}

    def local(owner: str) -> Storage:
        store: MemoryStorage | FileStorage = MemoryStorage() if kind == "memory" else FileStorage(tmp_path / owner)
        shared = first.setdefault("store", store)
        assert isinstance(shared, MemoryStorage | FileStorage)
        if kind == "file":  # every owner's folder; the shares kept in the first one's
            store.use_share_table(shared.share_table, owner=owner)
        else:
            store.use_share_table(shared.share_table, owner=owner)
        return store

    yield local


def shares(store: Storage, *, default: int, wait: float) -> OwnerShares:
    assert isinstance(store, OwnerShares)
    store.owner_concurrency = default
    store.share_wait_seconds = wait
    return store


def test_one_owners_burst_takes_its_share_while_another_owner_runs_at_once(
    owner_stores: Callable[[str], Storage],
) -> None:
    probe = Probe()
    pipeline = pipeline_of(probe)
    workers = Workers(8)
    apps: dict[str, Cairn] = {}
    try:
        for owner in ("a", "b"):
            store = owner_stores(owner)
            shares(store, default=2, wait=0.05)
            scheduler = PoolScheduler(workers)
            apps[owner] = scheduler.app = Cairn(pipeline, storage=store, scheduler=scheduler)
        for index in range(50):
            apps["a"].start(pipeline, f"a-{index}")
        time.sleep(0.05)  # owner a's backlog is queued and running
        apps["b"].start(pipeline, "b-0")
        workers.wait_idle()
    finally:
        workers.stop()
    assert workers.errors == []
    assert probe.most["a"] == 2  # its share, used in full and never passed
    jobs = {**{job.job_id: job for job in apps["a"].list()}, **{job.job_id: job for job in apps["b"].list()}}
    assert len(jobs) == 51
    assert {job.status for job in jobs.values()} == {JobStatus.COMPLETE}
    assert all(job.share_wait is None for job in jobs.values())
    assert set(probe.runs.values()) == {1}  # each phase of each job ran exactly once
    assert len(probe.runs) == 102
    # owner b's job did not wait for owner a's backlog: its first phase began before a's last one did
    assert probe.starts["b"][0] < probe.starts["a"][-1]
    waited = [job for job in apps["a"].list() if any(record.outcome == "release" for record in job.phases)]
    assert waited == []  # a wait for the share adds no history


def test_an_owners_own_limit_overrides_the_default_either_way(owner_stores: Callable[[str], Storage]) -> None:
    probe = Probe()
    pipeline = pipeline_of(probe, pause=0.3)
    workers = Workers(8)
    apps: dict[str, Cairn] = {}
    try:
        for owner, limit in (("low", 1), ("high", 4)):
            store = owner_stores(owner)
            kept = shares(store, default=2, wait=0.03)
            kept.set_owner_limit(owner, limit)
            assert kept.limit_for(owner) == limit
            scheduler = PoolScheduler(workers)
            apps[owner] = scheduler.app = Cairn(pipeline, storage=store, scheduler=scheduler)
        for index in range(8):
            apps["low"].start(pipeline, f"low-{index}")
            apps["high"].start(pipeline, f"high-{index}")
        workers.wait_idle()
    finally:
        workers.stop()
    assert workers.errors == []
    assert probe.most["low"] == 1
    assert 2 < probe.most["high"] <= 4
    assert {job.status for app in apps.values() for job in app.list()} == {JobStatus.COMPLETE}
    low = apps["low"].storage
    assert isinstance(low, OwnerShares)
    low.set_owner_limit("low", None)  # the override dropped: the default applies again
    assert low.limit_for("low") == 2


def one_phase(probe: Probe) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("one")

    @pipeline.phase(lease_seconds=LEASE, retry=RetryPolicy(max_attempts=2))
    def only(ctx: PhaseContext[Any]) -> Done:
        probe.enter("local", ctx.job_id, ctx.phase)
        probe.leave("local")
        return Done(None)

    return pipeline


def test_a_dead_workers_slot_frees_at_its_lease_and_nothing_is_stuck() -> None:
    clock = FakeClock()
    store = MemoryStorage(clock=clock)
    shares(store, default=1, wait=2.0)
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
    jobs.advance("alive", phase="only", sequence=jobs.get("alive").sequence)
    waiting = jobs.get("alive")
    assert waiting.status == JobStatus.RUNNING
    assert waiting.share_wait == "waiting for its owner's share: 1 of 1 phases running"
    started = clock()
    jobs.run_until_idle()  # "alive" looks again now and then, and runs once the dead worker's slot has expired
    assert jobs.get("alive").status == JobStatus.COMPLETE
    assert jobs.recover() == ["dead"]  # the dead worker's job, as the sweep finds it
    jobs.run_until_idle()
    assert {job.job_id: job.status for job in jobs.list()} == {"dead": JobStatus.COMPLETE, "alive": JobStatus.COMPLETE}
    assert clock() - started >= LEASE * 1000  # "alive" waited for the dead worker's slot to expire
    assert probe.runs == Counter({("alive", "only"): 1, ("dead", "only"): 1})
    assert store.running_slots("local", clock()) == 0


def test_a_duplicate_advance_of_a_waiting_job_runs_nothing_twice() -> None:
    clock = FakeClock()
    store = MemoryStorage(clock=clock)
    shares(store, default=1, wait=2.0)
    probe = Probe()
    pipeline = one_phase(probe)
    jobs = Cairn(pipeline, storage=store)
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


@pytest.mark.parametrize("kind", ["memory", "dynamodb"])
def test_a_waiting_job_whose_wake_up_is_lost_is_revived_by_the_sweep(kind: str) -> None:
    clock = FakeClock()
    with mock_aws():
        if kind == "memory":
            store: Storage = MemoryStorage(clock=clock)
        else:
            client = one_call_at_a_time(dynamodb_client())
            store = DynamoDBStorage(new_table(client), client=client, clock=clock)
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
