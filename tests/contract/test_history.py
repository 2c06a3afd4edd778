"""What each store keeps of a job's history across its writes: log entries and usage go with the checkpoint
that saved them, a resume keeps them, a full retry clears the log, and a crash loses only what no write saved."""

from __future__ import annotations

from typing import Any

import pytest

from cairn import (
    Done,
    PhaseContext,
    Pipeline,
    run_pipeline,
)
from cairn.core.storage_port import Storage
from cairn.testing.faults import SimulatedCrash
from tests.support import FakeClock, counters, job_of, log_messages, make_scheduler

JOB = "job-1"


def test_entries_written_before_save_state_are_stored_with_it(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    during: list[list[str]] = []

    @pipeline.phase
    def work(ctx: PhaseContext[Any]) -> Done:
        ctx.log("item 1 processed")
        ctx.add_usage(items=1)
        ctx.save_state({"done": 1})
        stored = job_of(storage, JOB)
        during.append(log_messages(stored.log))
        during.append([str(stored.usage.get("items"))])
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    assert "item 1 processed" in during[0]
    assert during[1] == ["1"]
    final = job_of(storage, JOB)
    assert log_messages(final.log).count("item 1 processed") == 1
    assert counters(final.usage) == {"items": 1, "transitions": 1}


def test_a_full_retry_clears_the_old_log_and_a_resume_keeps_it(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    run_number = [0]

    @pipeline.phase
    def work(ctx: PhaseContext[Any]) -> Done:
        run_number[0] += 1
        ctx.log(f"run {run_number[0]}")
        raise RuntimeError(f"failure {run_number[0]}")

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, retry_mode="resume")
    scheduler.drain()
    resumed = log_messages(job_of(storage, JOB).log)
    assert "run 1" in resumed
    assert "run 2" in resumed

    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={}, retry_mode="full")
    restarted = job_of(storage, JOB)
    assert not [m for m in log_messages(restarted.log) if m.startswith("run ") or "failure" in m]
    assert restarted.phases == []
    scheduler.drain()
    assert [m for m in log_messages(job_of(storage, JOB).log) if m.startswith("run ")] == ["run 3"]


def test_usage_survives_a_resume(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    fail = [True]

    @pipeline.phase
    def work(ctx: PhaseContext[Any]) -> Done:
        ctx.add_usage(tokens=10)
        if fail[0]:
            raise RuntimeError("down")
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()
    fail[0] = False
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler)
    scheduler.drain()

    assert counters(job_of(storage, JOB).usage) == {"tokens": 20, "transitions": 1}  # the error counts none, the done 1


def test_usage_since_the_last_checkpoint_is_lost_in_a_crash(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    runs = [0]

    @pipeline.phase
    def work(ctx: PhaseContext[Any]) -> Done:
        runs[0] += 1
        ctx.add_usage(tokens=1)
        ctx.save_state({"step": 1})
        ctx.add_usage(tokens=100)
        if runs[0] == 1:
            raise SimulatedCrash("killed")
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    with pytest.raises(SimulatedCrash):
        scheduler.drain()
    assert counters(job_of(storage, JOB).usage) == {"tokens": 1}

    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler)
    scheduler.drain()

    assert counters(job_of(storage, JOB).usage) == {"tokens": 102, "transitions": 1}
