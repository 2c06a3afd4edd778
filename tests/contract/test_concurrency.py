"""At most one worker advances a job at a time, and a worker that lost its claim can never commit.

Two threads reach ``claim`` at the same instant; a stale worker wakes up after
its lease ran out and another worker finished its phase; four processes race
for the same job on one directory. In every case the phase's effect happens
once and the job records exactly one commit.
"""

from __future__ import annotations

import functools
import multiprocessing
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from cairn import (
    Done,
    FileStorage,
    Job,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    advance_phase,
    run_pipeline,
)
from cairn.core.storage_port import Storage
from cairn.core.transitions import Claim
from cairn.storage.delegating import DelegatingStorage
from tests.contract import _worker
from tests.contract.conftest import StorageFactory
from tests.support import FakeClock, job_of

TIMEOUT = 30.0
LEASE_SECONDS = 30.0


class SimultaneousClaims(DelegatingStorage):
    """Holds every caller of ``claim`` until all parties have arrived, then lets them claim at once.

    ``wait_for_claims`` lets a phase body hold on until every party's claim has
    returned, so a winner cannot finish before the loser even tried.
    """

    def __init__(self, inner: Storage, parties: int) -> None:
        super().__init__(inner)
        self.parties = parties
        self.barrier = threading.Barrier(parties, timeout=TIMEOUT)
        self._returned = 0
        self._condition = threading.Condition()

    def claim(self, request: Claim) -> Job | None:
        self.barrier.wait()
        try:
            return self.inner.claim(request)
        finally:
            with self._condition:
                self._returned += 1
                self._condition.notify_all()

    def wait_for_claims(self) -> None:
        """Block until every party's claim of the current round has returned."""
        with self._condition:
            assert self._condition.wait_for(lambda: self._returned >= self.parties, TIMEOUT)

    def next_round(self) -> None:
        with self._condition:
            self._returned = 0


class RecordingScheduler:
    """Remembers what it was asked to schedule (safe to share between threads)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        with self._lock:
            self.requests.append((job_id, phase))


def in_threads(*calls: Callable[[], Job | None]) -> list[Job | None]:
    """Run each call in its own thread; their results in order. Any exception fails the test."""
    results: list[Job | None] = [None] * len(calls)
    errors: list[BaseException] = []

    def run(index: int, call: Callable[[], Job | None]) -> None:
        try:
            results[index] = call()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(index, call)) for index, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "a worker thread hung"
    assert not errors, f"a worker raised: {errors!r}"
    return results


def counting_pipeline(executions: list[str], before_effect: Callable[[], None]) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("counting")
    lock = threading.Lock()

    @pipeline.phase(timeout=int(LEASE_SECONDS), lease_seconds=LEASE_SECONDS)
    def work(ctx: PhaseContext[Any]) -> Next:
        before_effect()
        with lock:
            executions.append(ctx.job_id)
        ctx.log("work ran")
        return Next("finish", {"runs": ctx.state["runs"] + 1})

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    return pipeline


def test_two_workers_claiming_at_once_run_the_phase_once(storage_factory: StorageFactory, clock: FakeClock) -> None:
    store = storage_factory(clock)
    racing = SimultaneousClaims(store, parties=2)
    for round_number in range(5):
        job_id = f"race-{round_number}"
        executions: list[str] = []
        racing.next_round()
        pipeline = counting_pipeline(executions, before_effect=racing.wait_for_claims)
        run_pipeline(job_id, pipeline, storage=store, scheduler=RecordingScheduler(), initial_state={"runs": 0})
        scheduler = RecordingScheduler()

        advance = functools.partial(advance_phase, job_id, pipeline, storage=racing, scheduler=scheduler, phase="work")
        results = in_threads(advance, advance)

        assert executions == [job_id], "the phase body must run exactly once"
        winners = [result for result in results if result is not None]
        assert len(winners) == 1, f"exactly one advance should commit, got {results!r}"
        job = job_of(store, job_id)
        assert winners[0].sequence == job.sequence
        assert job.status == JobStatus.RUNNING
        assert job.checkpoint is not None
        assert job.checkpoint.next_phase == "finish"
        assert job.checkpoint.state == {"runs": 1}
        assert [(record.phase, record.outcome, record.next_phase) for record in job.phases] == [
            ("work", "next", "finish")
        ]
        assert [entry.message for entry in job.log].count("work ran") == 1
        assert job.lease_owner is None
        assert scheduler.requests == [(job_id, "finish")]


@pytest.mark.parametrize("stale_write", ["commit", "save"])
def test_a_stale_worker_cannot_commit_after_another_took_over(
    storage_factory: StorageFactory, clock: FakeClock, stale_write: Literal["commit", "save"]
) -> None:
    store = storage_factory(clock)
    a_inside = threading.Event()
    release_a = threading.Event()
    entered: list[str] = []
    lock = threading.Lock()
    pipeline: Pipeline[Any] = Pipeline("stale")

    @pipeline.phase(timeout=int(LEASE_SECONDS), lease_seconds=LEASE_SECONDS)
    def work(ctx: PhaseContext[Any]) -> Next:
        with lock:
            entered.append("A" if not entered else "B")
            me = entered[-1]
        if me == "A":
            ctx.log("A started")
            a_inside.set()
            assert release_a.wait(TIMEOUT)
            if stale_write == "save":
                ctx.save_state({"by": "A", "partial": True})
            return Next("finish", {"by": "A"})
        ctx.log("B ran")
        return Next("finish", {"by": "B"})

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    job_id = "stale-worker"
    run_pipeline(job_id, pipeline, storage=store, scheduler=RecordingScheduler(), initial_state={"by": None})
    a_scheduler = RecordingScheduler()
    a_result: list[Job | None] = []

    def worker_a() -> None:
        a_result.append(advance_phase(job_id, pipeline, storage=store, scheduler=a_scheduler, phase="work"))

    thread_a = threading.Thread(target=worker_a)
    thread_a.start()
    try:
        assert a_inside.wait(TIMEOUT), "worker A never started the phase"
        # While A's lease holds, nobody else gets the job.
        assert advance_phase(job_id, pipeline, storage=store, scheduler=RecordingScheduler(), phase="work") is None
        assert entered == ["A"]

        clock.advance(LEASE_SECONDS + 1)
        b_scheduler = RecordingScheduler()
        b_result = advance_phase(job_id, pipeline, storage=store, scheduler=b_scheduler, phase="work")
        assert b_result is not None, "worker B should take over once A's lease ran out"
        assert entered == ["A", "B"]
        assert b_scheduler.requests == [(job_id, "finish")]
    finally:
        release_a.set()
        thread_a.join(TIMEOUT)
    assert not thread_a.is_alive()

    assert a_result == [None], "the stale worker's write must be refused"
    assert a_scheduler.requests == []
    job = job_of(store, job_id)
    assert job.checkpoint is not None
    assert job.checkpoint.next_phase == "finish"
    assert job.checkpoint.state == {"by": "B"}
    assert [(record.phase, record.outcome, record.next_phase) for record in job.phases] == [("work", "next", "finish")]
    messages = [entry.message for entry in job.log]
    assert "B ran" in messages
    assert "A started" not in messages
    assert job.lease_owner is None

    # The job goes on from B's commit alone.
    finished = advance_phase(job_id, pipeline, storage=store, scheduler=RecordingScheduler(), phase="finish")
    assert finished is not None
    assert finished.status == JobStatus.COMPLETE
    assert finished.result == {"by": "B"}


def test_processes_racing_on_one_directory_advance_the_job_once(tmp_path: Path) -> None:
    workers = 4
    directory = tmp_path / "jobs"
    effect_file = tmp_path / "effects.log"
    store = FileStorage(directory)
    job_id = "process-race"
    run_pipeline(
        job_id,
        _worker.PIPELINE,
        storage=store,
        scheduler=_worker.DiscardingScheduler(),
        initial_state={"effect_file": str(effect_file), "runs": 0},
    )

    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(workers)
    processes = [
        context.Process(target=_worker.advance_once, args=(str(directory), job_id, barrier)) for _ in range(workers)
    ]
    for process in processes:
        process.start()
    codes: dict[int, int] = {}
    for process in processes:
        process.join(60)
        if process.is_alive():
            process.kill()
            process.join()
        assert process.pid is not None
        assert process.exitcode is not None
        codes[process.pid] = process.exitcode

    assert sorted(codes.values()) == [_worker.ADVANCED] + [_worker.NOTHING_TO_DO] * (workers - 1), codes
    winner = next(pid for pid, code in codes.items() if code == _worker.ADVANCED)
    assert effect_file.read_text().splitlines() == [str(winner)], "the phase's effect must happen exactly once"
    job = job_of(store, job_id)
    assert job.checkpoint is not None
    assert job.checkpoint.next_phase == "finish"
    assert job.checkpoint.state == {"effect_file": str(effect_file), "runs": 1, "worker_pid": winner}
    assert [(record.phase, record.outcome, record.next_phase) for record in job.phases] == [("work", "next", "finish")]
    assert job.lease_owner is None
