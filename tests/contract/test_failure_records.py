"""Why an attempt failed is kept with the attempt, on every store: the exception's type and its traceback,
for a phase that raised, a map item that raised, and a worker whose death Lambda reported."""

from __future__ import annotations

from typing import Any

from cairn import Done, JobStatus, Map, Next, PhaseContext, Pipeline, RetryPolicy, run_pipeline
from cairn.core.engine import record_crash
from cairn.core.failures import reported_failure
from cairn.core.models import Failure, PhaseRecord
from cairn.core.storage_port import Storage
from tests.contract.test_crash_records import JOB, slow_dying_pipeline, start_and_kill
from tests.support import FakeClock, RecordingScheduler, job_of, make_scheduler


def _add_tax(total: Any) -> Any:
    return total + 0.2  # a str total: TypeError


def buggy_pipeline() -> Pipeline[Any]:
    """``load`` then ``price``, which raises TypeError on its two attempts."""
    pipeline: Pipeline[Any] = Pipeline("buggy")

    @pipeline.phase
    def load(ctx: PhaseContext[Any]) -> Next:
        return Next("price", {"total": "12.50"})

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=1, jitter=False, retry_on=(TypeError,)))
    def price(ctx: PhaseContext[Any]) -> Done:
        return Done({"with_tax": _add_tax(ctx.state["total"])})

    return pipeline


def test_each_failed_attempt_keeps_its_exception_type_and_traceback(storage: Storage, clock: FakeClock) -> None:
    pipeline = buggy_pipeline()
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("buggy-1", pipeline, storage=storage, scheduler=scheduler, initial_state={})

    scheduler.drain()

    job = job_of(storage, "buggy-1")
    failed = [record for record in job.phases if record.phase == "price"]
    assert job.status == JobStatus.ERROR
    assert [record.outcome for record in failed] == ["retry", "error"]
    for record in failed:
        assert record.failure is not None
        assert record.failure.type == "TypeError"
        lines = record.failure.traceback.splitlines()
        assert lines[0].startswith("TypeError: can only concatenate str")
        assert lines[1] == "In your code (most recent call last):"
        assert f'File "{__file__}"' in record.failure.traceback
        assert "return total + 0.2" in record.failure.traceback
        assert "in _add_tax" in record.failure.traceback
    assert all(record.failure is None for record in job.phases if record.phase == "load")


def test_a_failed_map_item_keeps_its_exception(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("buggy-map")

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        return Map(items=[1, "two", 3], phase="double", then="gather")

    @pipeline.phase
    def double(ctx: PhaseContext[Any]) -> Done:
        if not isinstance(ctx.state, int):
            raise LookupError(f"no number in {ctx.state!r}")
        return Done(ctx.state * 2)

    @pipeline.phase
    def gather(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.results)

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("buggy-map-1", pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    job = job_of(storage, "buggy-map-1")
    assert job.status == JobStatus.ERROR
    items = storage.get_items("buggy-map-1", _only_map_id(storage, "buggy-map-1"))
    failed = [item for item in items if item.status == "failed"]
    assert [item.index for item in failed] == [1]
    assert failed[0].failure is not None
    assert failed[0].failure.type == "LookupError"
    assert "raise LookupError" in failed[0].failure.traceback
    assert all(item.failure is None for item in items if item.status == "done")


def _only_map_id(storage: Storage, job_id: str) -> str:
    maps = storage.get_maps(job_id)
    assert len(maps) == 1
    return maps[0].fan_out.id


def killed_and_reported(storage: Storage, clock: FakeClock, error: str, failure: Failure | None = None) -> PhaseRecord:
    """Let ``work``'s worker die, deliver its crash report twice (Lambda may); the one record of that attempt."""
    pipeline = slow_dying_pipeline(clock, attempts=1, dying=[True])
    start_and_kill(pipeline, storage, clock)
    reports = [
        record_crash(
            JOB,
            pipeline,
            storage=storage,
            scheduler=RecordingScheduler(clock),
            phase="work",
            error=error,
            dead_worker="request-1",
            failure=failure,
        )
        for _ in range(2)
    ]
    assert reports[1] is None  # the repeat is stale: nothing is written twice
    records = [record for record in job_of(storage, JOB).phases if record.phase == "work"]
    assert len(records) == 1
    return records[0]


def test_a_crash_report_keeps_what_lambda_said_of_the_death(storage: Storage, clock: FakeClock) -> None:
    record = killed_and_reported(
        storage, clock, "Task timed out after 900.00 seconds", reported_failure("Sandbox.Timedout", [])
    )

    assert record.outcome == "error"
    assert record.failure is not None
    assert record.failure.type == "Sandbox.Timedout"


def test_a_crash_report_without_a_type_names_the_dead_worker(storage: Storage, clock: FakeClock) -> None:
    record = killed_and_reported(storage, clock, "Runtime exited: signal: killed")

    assert record.failure is not None
    assert record.failure.type == "cairn.core.errors.PhaseCrashedError"
    assert record.failure.traceback == "cairn.core.errors.PhaseCrashedError: Runtime exited: signal: killed"
