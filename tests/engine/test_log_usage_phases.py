"""What the engine records of a job's history: log and annotations, usage counters and phase runs."""

from __future__ import annotations

from typing import Any

import pytest

from cairn import Done, InvalidInputError, JobStatus, Next, PhaseContext, Pipeline, RetryPolicy, run_pipeline
from cairn.adapters import LogEntry
from cairn.core.storage_port import Storage
from tests.support import FakeClock, counters, job_of, log_messages, make_scheduler

JOB = "job-1"


def _phase_entries(entries: list[LogEntry]) -> list[tuple[str, str, str, str | None, str | None]]:
    """(kind, level, message, phase, reason) of the entries a phase wrote (not the engine's own)."""
    return [
        (entry.kind, entry.level, entry.message, entry.phase, entry.reason)
        for entry in entries
        if not entry.message.startswith(("Job started", "Phase ", "Retrying"))
    ]


def test_log_and_annotations_are_stored_with_the_job(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    times: list[int] = []

    @pipeline.phase
    def review(ctx: PhaseContext[Any]) -> Done:
        ctx.log("reading page 1")
        times.append(clock())
        clock.advance(1)
        ctx.log("page 2 is blank", level="warning")
        times.append(clock())
        clock.advance(1)
        ctx.observe("the invoice total is in euros")
        times.append(clock())
        clock.advance(1)
        ctx.decide("convert to dollars", reason="the ledger is in dollars")
        times.append(clock())
        clock.advance(1)
        ctx.insight("supplier X always sends euros")
        times.append(clock())
        clock.advance(1)
        ctx.record_error("exchange-rate service timed out once")
        times.append(clock())
        ctx.log("debug detail", level="debug")
        times.append(clock())
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    entries = [entry for entry in job_of(storage, JOB).log if entry.phase == "review"]
    written = [entry for entry in entries if not entry.message.startswith("Job started")]
    assert _phase_entries(written) == [
        ("log", "info", "reading page 1", "review", None),
        ("log", "warning", "page 2 is blank", "review", None),
        ("observation", "info", "the invoice total is in euros", "review", None),
        ("decision", "info", "convert to dollars", "review", "the ledger is in dollars"),
        ("insight", "info", "supplier X always sends euros", "review", None),
        ("error", "error", "exchange-rate service timed out once", "review", None),
        ("log", "debug", "debug detail", "review", None),
    ]
    assert [entry.timestamp for entry in written] == times
    assert job_of(storage, JOB).status == JobStatus.COMPLETE, "record_error does not fail the phase"


def test_an_unknown_log_level_is_refused(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    raised: list[BaseException] = []

    @pipeline.phase
    def review(ctx: PhaseContext[Any]) -> Done:
        with pytest.raises(InvalidInputError) as info:
            ctx.log("loud", level="critical")  # type: ignore[arg-type]
        raised.append(info.value)
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    assert len(raised) == 1
    assert "loud" not in log_messages(job_of(storage, JOB).log)


def test_entries_are_attributed_to_their_phase_across_phases(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        ctx.log("fetched")
        return Next("extract", {})

    @pipeline.phase
    def extract(ctx: PhaseContext[Any]) -> Done:
        ctx.observe("two tables")
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    log = job_of(storage, JOB).log
    assert [(entry.message, entry.phase) for entry in log if entry.message in ("fetched", "two tables")] == [
        ("fetched", "fetch"),
        ("two tables", "extract"),
    ]


def test_entries_of_a_failed_phase_are_kept(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def work(ctx: PhaseContext[Any]) -> Done:
        ctx.observe("the file is encrypted")
        raise PermissionError("cannot decrypt")

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    job = job_of(storage, JOB)
    assert "the file is encrypted" in log_messages(job.log, kind="observation")
    assert 'Phase "work" threw: cannot decrypt' in log_messages(job.log, kind="error")


def test_usage_is_summed_across_phases_and_retries(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        ctx.add_usage(requests=1, bytes=1024)
        return Next("summarise", {})

    @pipeline.phase(retry=RetryPolicy(max_attempts=3, backoff=0.0, jitter=False))
    def summarise(ctx: PhaseContext[Any]) -> Done:
        ctx.add_usage(input_tokens=100, cost=0.25)
        ctx.add_usage(input_tokens=20)
        if ctx.attempt < 3:
            raise TimeoutError("model slow")
        ctx.add_usage(output_tokens=7)
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    usage = job_of(storage, JOB).usage
    assert counters(usage) == {
        "requests": 1,
        "bytes": 1024,
        "input_tokens": 360,
        "cost": pytest.approx(0.75),
        "output_tokens": 7,
        "transitions": 2,  # fetch's next and summarise's done: its two retries count nothing
    }


@pytest.mark.parametrize("value", ["10", None, True, [1]])
def test_usage_counters_must_be_numbers(storage: Storage, clock: FakeClock, value: Any) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    raised: list[BaseException] = []

    @pipeline.phase
    def work(ctx: PhaseContext[Any]) -> Done:
        with pytest.raises(InvalidInputError) as info:
            ctx.add_usage(tokens=value)
        raised.append(info.value)
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    assert len(raised) == 1
    assert counters(job_of(storage, JOB).usage) == {
        "transitions": 1
    }  # the refused counter was not added; the done counts


def test_each_finished_phase_run_is_recorded(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        clock.advance(2)
        return Next("summarise", {})

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=10.0, jitter=False))
    def summarise(ctx: PhaseContext[Any]) -> Done:
        clock.advance(3)
        if ctx.attempt == 1:
            raise TimeoutError("model slow")
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    t0 = clock()
    scheduler.drain()

    records = job_of(storage, JOB).phases
    assert [(r.phase, r.attempt, r.outcome, r.next_phase) for r in records] == [
        ("fetch", 1, "next", "summarise"),
        ("summarise", 1, "retry", None),
        ("summarise", 2, "done", None),
    ]
    assert [(r.started_at - t0, r.ended_at - t0) for r in records] == [
        (0, 2000),
        (2000, 5000),
        (15000, 18000),
    ]
    assert records[1].error == "model slow"


def test_a_failed_phase_run_is_recorded_with_its_error(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Done:
        raise ConnectionError("host unreachable")

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    (record,) = job_of(storage, JOB).phases
    assert (record.phase, record.outcome, record.error) == ("fetch", "error", "host unreachable")
    assert record.ended_at >= record.started_at


def test_an_enormous_error_message_is_clipped_not_refused(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("loud")

    @pipeline.phase
    def shout(ctx: PhaseContext[Any]) -> Done:
        ctx.log("x" * 100_000)
        raise RuntimeError("boom " * 50_000)

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("loud-1", pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    job = job_of(storage, "loud-1")
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert job.error.startswith("boom boom")
    assert job.error.endswith("[truncated]")
    assert len(job.error) <= 4_000
    assert [len(entry.message) <= 16_000 for entry in job.log] == [True] * len(job.log)
    assert any(entry.message.startswith("xxx") for entry in job.log)
