"""Helpers shared by the test suites: a fake clock, schedulers bound to a pipeline, and small readers of a job."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from cairn import Done, InlineScheduler, Job, Next, PhaseContext, Pipeline, RetryPolicy, advance_phase, run_pipeline
from cairn.adapters import LogEntry
from cairn.core.storage_port import Storage
from cairn.features.prices import is_metered
from cairn.features.transition_guard import TRANSITIONS
from cairn.testing.clock import SkippingClock
from cairn.testing.faults import SimulatedCrash


class FakeClock(SkippingClock):
    """The test kit's clock that moves only when told to, from a fixed start (so figures repeat)."""

    def __init__(self, start_ms: int = 1_800_000_000_000) -> None:
        super().__init__(start_ms)


def make_scheduler(pipeline: Pipeline[Any], storage: Storage, clock: FakeClock | None = None) -> InlineScheduler:
    """An InlineScheduler bound to advance ``pipeline`` jobs in ``storage`` (on ``clock`` when given)."""
    scheduler = InlineScheduler(now=clock.monotonic, sleep=clock.sleep) if clock else InlineScheduler()
    scheduler.bind(
        lambda job_id, **advance: advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, **advance)
    )
    return scheduler


@dataclass(frozen=True)
class Scheduled:
    """One call to ``schedule_advance``."""

    job_id: str
    phase: str
    delay: float
    sequence: int | None = field(default=None, compare=False)


class RecordingScheduler(InlineScheduler):
    """An InlineScheduler on a fake clock that also records every advance it was asked to schedule."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(now=clock.monotonic, sleep=clock.sleep)
        self.scheduled: list[Scheduled] = []

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        super().schedule_advance(job_id, phase=phase, sequence=sequence, delay=delay)
        self.scheduled.append(Scheduled(job_id, phase, delay, sequence))


def recording_scheduler(pipeline: Pipeline[Any], storage: Storage, clock: FakeClock) -> RecordingScheduler:
    """A RecordingScheduler bound to advance ``pipeline`` jobs in ``storage``."""
    scheduler = RecordingScheduler(clock)
    scheduler.bind(
        lambda job_id, **advance: advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, **advance)
    )
    return scheduler


def job_of(storage: Storage, job_id: str) -> Job:
    """The stored job; fails the test when it is missing."""
    job = storage.get_job(job_id)
    assert job is not None, f"job {job_id} not found"
    return job


def counters(usage: Mapping[str, float]) -> dict[str, float]:
    """A job's usage less what cairn meters for its cost (Lambda, DynamoDB, tokens by model): its own counters.

    The metered figures depend on timing (a run's GB-seconds) and are tested on their own (tests/contract/test_cost.py).
    """
    return {key: value for key, value in usage.items() if not is_metered(key)}


def usage_without_transitions(usage: Mapping[str, float]) -> dict[str, float]:
    """A job's own counters (:func:`counters`) less its count of transitions: to compare two ways of running a job.

    Their counts of transitions really differ (a map counts one per item), so a test that compares the
    rest of their usage asserts each count on its own.
    """
    return {key: value for key, value in counters(usage).items() if key != TRANSITIONS}


def log_messages(entries: list[LogEntry], *, kind: str | None = None) -> list[str]:
    """The messages of a job's log entries, optionally only those of one kind."""
    return [entry.message for entry in entries if kind is None or entry.kind == kind]


CRASH_JOB = "job-1"


def crashing_pipeline(*, attempts: int, crash: list[bool]) -> Pipeline[Any]:
    """``load`` then ``work``, which dies (a SimulatedCrash) while ``crash[0]`` is true."""
    pipeline: Pipeline[Any] = Pipeline("crashy")

    @pipeline.phase
    def load(ctx: PhaseContext[Any]) -> Next:
        return Next("work", {"n": 1})

    @pipeline.phase(retry=RetryPolicy(max_attempts=attempts, backoff=10, jitter=False), lease_seconds=900)
    def work(ctx: PhaseContext[Any]) -> Done:
        if crash[0]:
            raise SimulatedCrash("the process died")
        return Done({"n": ctx.state["n"], "attempt": ctx.attempt})

    return pipeline


def start_and_crash(pipeline: Pipeline[Any], storage: Storage, clock: FakeClock) -> None:
    """Start the job, run ``load``, and let the worker of ``work`` (request-1) die holding its claim."""
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(CRASH_JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)
    try:
        advance_phase(CRASH_JOB, pipeline, storage=storage, scheduler=scheduler, phase="work", worker="request-1")
    except SimulatedCrash:
        return
    raise AssertionError("the worker of work did not die")


def fetch_extract_pipeline(
    ran: list[str], *, ttl: timedelta = timedelta(hours=1), fail_extract: list[bool]
) -> Pipeline[Any]:
    """fetch then extract, each noted in ``ran``; extract raises while ``fail_extract[0]`` is true."""
    pipeline: Pipeline[Any] = Pipeline("intake", ttl=ttl)

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        ran.append(f"fetch {ctx.state}")
        return Next("extract", {**ctx.state, "fetched": True})

    @pipeline.phase
    def extract(ctx: PhaseContext[Any]) -> Done:
        ran.append(f"extract {ctx.state}")
        if fail_extract[0]:
            raise RuntimeError("extractor down")
        return Done(ctx.state)

    return pipeline


def record_figure(name: str, **counts: int) -> None:
    """Add ``counts`` to ``<CAIRN_RELIABILITY_REPORT_DIR>/<name>.json``, for the reliability report (if set)."""
    directory = os.environ.get("CAIRN_RELIABILITY_REPORT_DIR")
    if not directory:
        return
    path = Path(directory) / f"{name}.json"
    figures: dict[str, int] = json.loads(path.read_text()) if path.exists() else {}
    for key, value in counts.items():
        figures[key] = figures.get(key, 0) + value
    path.write_text(json.dumps(figures))


def two_phase_pipeline(name: str = "two") -> Pipeline[Any]:
    """``first`` (logs a line) then ``second`` (done with the state it got)."""
    pipeline: Pipeline[Any] = Pipeline(name)

    @pipeline.phase
    def first(ctx: PhaseContext[Any]) -> Next:
        ctx.log("first ran")
        return Next("second", ctx.state)

    @pipeline.phase
    def second(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    return pipeline
