"""Code written for cl-pipelines runs on cairn as its author expects: log levels, retry modes, errors,
the memory store's inspect view and the inline scheduler's callback."""

from __future__ import annotations

from typing import Any

import pytest

from cairn import (
    Cairn,
    Done,
    InlineScheduler,
    InvalidInputError,
    JobStatus,
    MemoryStorage,
    Next,
    PhaseContext,
    PhaseError,
    Pipeline,
)
from cairn.core.engine import resolve_start_phase
from cairn.core.models import Checkpoint
from tests.support import FakeClock

JOB = "port-1"
LINES = ("the source is slow", "stored")
"""What the phases below log (the engine logs lines of its own beside them)."""
ADVANCE_LINE = "def advance(job_id, *, phase, sequence=None, **extra)"


def _logging_pipeline(level: Any) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("noisy")

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        ctx.log("the source is slow", level)
        return Next("store", {"pages": 2})

    @pipeline.phase
    def store(ctx: PhaseContext[Any]) -> Done:
        ctx.log("stored")
        return Done(ctx.state)

    return pipeline


def test_a_warn_log_line_is_a_warning(clock: FakeClock) -> None:
    pipeline = _logging_pipeline("warn")
    app = Cairn(pipeline, storage=MemoryStorage(clock=clock))
    app.start(pipeline, JOB)
    app.run_until_idle()

    job = app.get(JOB)
    assert job.status == JobStatus.COMPLETE, job.error
    assert [(entry.message, entry.level) for entry in job.log if entry.message in LINES] == [
        ("the source is slow", "warning"),
        ("stored", "info"),
    ]


def test_an_unknown_log_level_still_fails_the_phase_clearly(clock: FakeClock) -> None:
    pipeline = _logging_pipeline("loud")
    app = Cairn(pipeline, storage=MemoryStorage(clock=clock))
    app.start(pipeline, JOB)
    app.run_until_idle()

    job = app.get(JOB)
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert "Unknown log level 'loud'" in job.error


def test_no_retry_mode_means_resume() -> None:
    saved = Checkpoint(next_phase="store", state={"pages": 2}, created_at=1)

    assert resolve_start_phase(None, saved, "fetch") == "store"
    assert resolve_start_phase(None, None, "fetch") == "fetch"
    assert resolve_start_phase("full", saved, "fetch") == "fetch"


def test_a_phase_error_says_where_it_happened_and_whether_it_may_pass() -> None:
    raised = PhaseError("the upstream refused the file", job_id=JOB, phase="fetch", recoverable=False)
    plain = PhaseError("something else")

    assert str(raised) == "the upstream refused the file"
    assert (raised.job_id, raised.phase, raised.recoverable) == (JOB, "fetch", False)
    assert (plain.job_id, plain.phase, plain.recoverable) == (None, None, True)


def test_a_phase_error_raised_by_a_phase_fails_the_job_with_its_message(clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("strict")

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Done:
        raise PhaseError("the upstream refused the file", job_id=ctx.job_id, phase=ctx.phase, recoverable=False)

    app = Cairn(pipeline, storage=MemoryStorage(clock=clock))
    app.start(pipeline, JOB)
    app.run_until_idle()

    job = app.get(JOB)
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert "the upstream refused the file" in job.error


def test_the_memory_stores_inspect_view_holds_each_jobs_log(clock: FakeClock) -> None:
    storage = MemoryStorage(clock=clock)
    pipeline = _logging_pipeline("info")
    app = Cairn(pipeline, storage=storage)
    app.start(pipeline, JOB)
    app.start(pipeline, "port-2")
    app.run_until_idle()

    inspected = storage.inspect()

    for job_id in (JOB, "port-2"):
        assert [entry.message for entry in inspected[job_id].log if entry.message in LINES] == list(LINES)
        assert [record.phase for record in inspected[job_id].phases] == ["fetch", "store"]
        assert inspected[job_id].log == app.get(job_id).log


def _no_sequence(job_id: str, *, phase: str) -> None:
    raise AssertionError("never called")


def _no_map_items(job_id: str, *, phase: str, sequence: int | None = None) -> None:
    raise AssertionError("never called")


def _positional_only(job_id: str, phase: str, sequence: int | None, /) -> None:
    raise AssertionError("never called")


@pytest.mark.parametrize("advance", [_no_sequence, _no_map_items, _positional_only])
def test_bind_refuses_a_callback_the_drain_could_not_call_and_shows_the_line_to_write(advance: Any) -> None:
    scheduler = InlineScheduler()

    with pytest.raises(InvalidInputError) as refused:
        scheduler.bind(advance)

    assert ADVANCE_LINE in str(refused.value)
    assert advance.__name__ in str(refused.value)
    assert not scheduler.bound


def test_bind_takes_the_callbacks_the_drain_can_call(clock: FakeClock) -> None:
    calls: list[tuple[str, str, dict[str, Any]]] = []

    def advance(job_id: str, *, phase: str, sequence: int | None = None, **extra: Any) -> None:
        calls.append((job_id, phase, extra))

    scheduler = InlineScheduler(now=clock.monotonic, sleep=clock.sleep)
    scheduler.bind(advance)
    scheduler.schedule_advance("j1", phase="fetch", sequence=3)
    scheduler.schedule_item("j1", phase="page", fan_out="pages", item=0)

    assert scheduler.drain() == 2
    assert calls == [("j1", "fetch", {}), ("j1", "page", {"fan_out": "pages", "item": 0})]

    pipeline = _logging_pipeline("info")
    app = Cairn(pipeline, storage=MemoryStorage(clock=clock), scheduler=InlineScheduler())
    app.start(pipeline, JOB)
    assert app.run_until_idle() == 2
