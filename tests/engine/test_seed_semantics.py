"""The seed's checkpoint rules: when a checkpoint is written, cleared and resumed (on MemoryStorage)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from cairn import (
    CairnError,
    Done,
    Fail,
    Job,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    RetryMode,
    RetryPolicy,
    advance_phase,
    run_pipeline,
)
from cairn.adapters import Checkpoint
from cairn.core.engine import resolve_start_phase
from cairn.core.errors import PipelineError
from cairn.core.storage_port import Storage
from cairn.testing.faults import SimulatedCrash
from tests.support import FakeClock, Scheduled, job_of, log_messages, make_scheduler, recording_scheduler

JOB = "job-1"


def _intake(calls: list[str], *, extract_fails: list[bool] | None = None) -> Pipeline[Any]:
    """fetch -> extract -> store; ``extract`` raises while ``extract_fails[0]`` is true."""
    pipeline: Pipeline[Any] = Pipeline("intake")
    failing = extract_fails if extract_fails is not None else [False]

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        calls.append(f"fetch {ctx.state}")
        return Next("extract", {**ctx.state, "fetched": True})

    @pipeline.phase
    def extract(ctx: PhaseContext[Any]) -> Next:
        calls.append(f"extract {ctx.state}")
        if failing[0]:
            raise RuntimeError("extractor unavailable")
        return Next("store", {**ctx.state, "extracted": True})

    @pipeline.phase
    def store(ctx: PhaseContext[Any]) -> Done:
        calls.append(f"store {ctx.state}")
        return Done({"stored": ctx.state})

    return pipeline


# --- run_pipeline -------------------------------------------------------------------------------


def test_run_pipeline_writes_the_starting_checkpoint_and_schedules_one_advance(
    storage: Storage, clock: FakeClock
) -> None:
    calls: list[str] = []
    pipeline = _intake(calls)
    scheduler = recording_scheduler(pipeline, storage, clock)

    returned = run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"doc": "a.pdf"})

    job = job_of(storage, JOB)
    assert job.checkpoint == Checkpoint(next_phase="fetch", state={"doc": "a.pdf"}, created_at=clock())
    assert job.status == JobStatus.RUNNING
    assert job.pipeline == "intake"
    assert returned.checkpoint == job.checkpoint
    assert scheduler.pending() == 1
    assert scheduler.scheduled == [Scheduled(JOB, "fetch", 0.0)]
    assert calls == [], "run_pipeline must not run any phase itself"


def test_resume_continues_from_saved_next_phase_with_saved_state(storage: Storage, clock: FakeClock) -> None:
    calls: list[str] = []
    failing = [True]
    pipeline = _intake(calls, extract_fails=failing)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"doc": "a.pdf"})
    scheduler.drain()
    assert job_of(storage, JOB).status == JobStatus.ERROR

    failing[0] = False
    calls.clear()
    clock.advance(60)
    job = run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"doc": "other.pdf"})

    saved = {"doc": "a.pdf", "fetched": True}
    assert job.checkpoint == Checkpoint(next_phase="extract", state=saved, created_at=clock())
    assert job.status == JobStatus.RUNNING
    assert job.error is None
    scheduler.drain()
    assert calls == [f"extract {saved}", f"store {dict(saved, extracted=True)}"], "fetch must not run again"
    assert job_of(storage, JOB).status == JobStatus.COMPLETE


def test_resume_is_the_default_retry_mode(storage: Storage, clock: FakeClock) -> None:
    calls: list[str] = []
    failing = [True]
    pipeline = _intake(calls, extract_fails=failing)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    explicit = run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, retry_mode=RetryMode.RESUME)
    default = run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler)

    assert explicit.checkpoint is not None
    assert default.checkpoint is not None
    assert explicit.checkpoint.next_phase == default.checkpoint.next_phase == "extract"
    assert explicit.checkpoint.state == default.checkpoint.state == {"fetched": True}


def test_resume_without_a_checkpoint_starts_fresh(storage: Storage, clock: FakeClock) -> None:
    calls: list[str] = []
    pipeline = _intake(calls)
    scheduler = make_scheduler(pipeline, storage, clock)

    job = run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"n": 1}, retry_mode="resume")

    assert job.checkpoint == Checkpoint(next_phase="fetch", state={"n": 1}, created_at=clock())


def test_resume_of_a_finished_job_starts_fresh_with_initial_state(storage: Storage, clock: FakeClock) -> None:
    calls: list[str] = []
    pipeline = _intake(calls)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"n": 1})
    scheduler.drain()
    assert job_of(storage, JOB).checkpoint is None

    calls.clear()
    clock.advance(5)
    job = run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"n": 2})

    assert job.checkpoint == Checkpoint(next_phase="fetch", state={"n": 2}, created_at=clock())
    assert job.status == JobStatus.RUNNING
    scheduler.drain()
    assert calls[0] == "fetch {'n': 2}"
    assert job_of(storage, JOB).status == JobStatus.COMPLETE


def test_resume_without_a_checkpoint_honours_initial_phase(storage: Storage, clock: FakeClock) -> None:
    calls: list[str] = []
    pipeline = _intake(calls)
    scheduler = make_scheduler(pipeline, storage, clock)

    job = run_pipeline(
        JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"n": 1}, initial_phase="extract"
    )

    assert job.checkpoint is not None
    assert job.checkpoint.next_phase == "extract"
    scheduler.drain()
    assert [call.split()[0] for call in calls] == ["extract", "store"]


def test_full_discards_the_checkpoint_and_starts_from_the_first_phase(storage: Storage, clock: FakeClock) -> None:
    calls: list[str] = []
    failing = [True]
    pipeline = _intake(calls, extract_fails=failing)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"v": 1})
    scheduler.drain()
    assert job_of(storage, JOB).checkpoint is not None

    failing[0] = False
    calls.clear()
    job = run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"v": 2}, retry_mode="full")

    assert job.checkpoint == Checkpoint(next_phase="fetch", state={"v": 2}, created_at=clock())
    assert job.status == JobStatus.RUNNING
    assert job.error is None
    scheduler.drain()
    assert calls == [
        "fetch {'v': 2}",
        "extract {'v': 2, 'fetched': True}",
        "store {'v': 2, 'fetched': True, 'extracted': True}",
    ]


def test_full_starts_from_initial_phase_when_given(storage: Storage, clock: FakeClock) -> None:
    calls: list[str] = []
    failing = [True]
    pipeline = _intake(calls, extract_fails=failing)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"v": 1})
    scheduler.drain()

    job = run_pipeline(
        JOB,
        pipeline,
        storage=storage,
        scheduler=scheduler,
        initial_state={"v": 3},
        retry_mode="full",
        initial_phase="store",
    )

    assert job.checkpoint == Checkpoint(next_phase="store", state={"v": 3}, created_at=clock())


def test_empty_pipeline_is_refused_and_nothing_is_written(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("empty")
    scheduler = make_scheduler(pipeline, storage, clock)

    with pytest.raises(PipelineError):
        run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})

    assert storage.get_job(JOB) is None
    assert storage.list_jobs() == []
    assert scheduler.pending() == 0


def test_advance_with_an_empty_pipeline_is_refused(storage: Storage, clock: FakeClock) -> None:
    scheduler = make_scheduler(Pipeline("empty"), storage, clock)

    with pytest.raises(PipelineError):
        advance_phase(JOB, Pipeline("empty"), storage=storage, scheduler=scheduler)


# --- phase outcomes -----------------------------------------------------------------------------


def test_next_writes_the_new_checkpoint_and_schedules_the_next_advance(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    ran: list[str] = []

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        ran.append("fetch")
        clock.advance(5)
        return Next("extract", {"pages": 3})

    @pipeline.phase
    def extract(ctx: PhaseContext[Any]) -> Done:
        ran.append("extract")
        return Done()

    scheduler = recording_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})

    assert scheduler.drain(max_steps=1) == 1

    job = job_of(storage, JOB)
    assert job.checkpoint == Checkpoint(next_phase="extract", state={"pages": 3}, created_at=clock())
    assert job.status == JobStatus.RUNNING
    assert ran == ["fetch"]
    assert scheduler.pending() == 1
    assert scheduler.scheduled[-1] == Scheduled(JOB, "extract", 0.0)


def test_save_state_checkpoints_the_current_phase_mid_phase(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    seen: list[Any] = []

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        return Next("work", {"done": 0})

    @pipeline.phase
    def work(ctx: PhaseContext[Any]) -> Next:
        clock.advance(3)
        ctx.save_state({"done": 1})
        seen.append(job_of(storage, JOB).checkpoint)
        seen.append(ctx.state)
        seen.append(clock())
        return Next("finish", ctx.state)

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    saved_checkpoint, state_after_save, saved_at = seen
    assert saved_checkpoint == Checkpoint(next_phase="work", state={"done": 1}, created_at=saved_at)
    assert state_after_save == {"done": 1}
    assert job_of(storage, JOB).status == JobStatus.COMPLETE


def test_crash_after_save_state_reenters_the_same_phase_with_the_saved_state(
    storage: Storage, clock: FakeClock
) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    crash = SimulatedCrash("power cut")
    entered: list[tuple[str, Any, str]] = []
    fetched: list[int] = []

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        fetched.append(1)
        return Next("work", {"done": 0})

    @pipeline.phase
    def work(ctx: PhaseContext[Any]) -> Next:
        entered.append((ctx.phase, ctx.state, ctx.checkpoint.next_phase))
        if ctx.state["done"] == 0:
            ctx.save_state({"done": 1})
            raise crash
        return Next("finish", {"done": 2})

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    with pytest.raises(SimulatedCrash) as info:
        scheduler.drain()
    assert info.value is crash, "a simulated process death must pass through untouched"

    job = job_of(storage, JOB)
    assert job.checkpoint is not None
    assert (job.checkpoint.next_phase, job.checkpoint.state) == ("work", {"done": 1})

    retry = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=retry)
    retry.drain()

    assert entered == [("work", {"done": 0}, "work"), ("work", {"done": 1}, "work")]
    assert fetched == [1]
    done = job_of(storage, JOB)
    assert done.status == JobStatus.COMPLETE
    assert done.result == {"done": 2}


def test_an_exception_keeps_the_checkpoint_and_sets_error(storage: Storage, clock: FakeClock) -> None:
    calls: list[str] = []
    pipeline = _intake(calls, extract_fails=[True])
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)
    before = job_of(storage, JOB).checkpoint
    clock.advance(10)

    scheduler.drain()

    job = job_of(storage, JOB)
    assert job.checkpoint == before
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert "extractor unavailable" in job.error
    threw = [m for m in log_messages(job.log) if m.startswith('Phase "extract" threw: ')]
    assert threw == ['Phase "extract" threw: extractor unavailable']
    assert scheduler.pending() == 0


def test_an_exception_without_a_message_still_gives_a_useful_error(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Done:
        raise KeyError

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    job = job_of(storage, JOB)
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert "KeyError" in job.error


def test_fail_keeps_the_checkpoint_sets_error_and_is_never_retried(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")
    attempts: list[int] = []

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        return Next("check", {"doc": "a.pdf"})

    @pipeline.phase(retry=RetryPolicy(max_attempts=5, backoff=0.0, jitter=False))
    def check(ctx: PhaseContext[Any]) -> Fail:
        attempts.append(ctx.attempt)
        return Fail("no invoice number found")

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)
    before = job_of(storage, JOB).checkpoint
    clock.advance(10)

    scheduler.drain()

    job = job_of(storage, JOB)
    assert attempts == [1]
    assert job.status == JobStatus.ERROR
    assert job.error == "no invoice number found"
    assert job.checkpoint == before
    assert any("no invoice number found" in m for m in log_messages(job.log, kind="error"))
    assert scheduler.pending() == 0


def test_done_clears_the_checkpoint_and_keeps_the_result(storage: Storage, clock: FakeClock) -> None:
    calls: list[str] = []
    pipeline = _intake(calls)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"doc": "a.pdf"})

    assert scheduler.drain() == 3

    job = job_of(storage, JOB)
    assert job.checkpoint is None
    assert job.status == JobStatus.COMPLETE
    assert job.error is None
    assert job.result == {"stored": {"doc": "a.pdf", "fetched": True, "extracted": True}}
    assert scheduler.pending() == 0


@pytest.mark.parametrize("result", [None, 0, "text", [1, 2], {"nested": {"list": [1.5, None, True]}}])
def test_any_json_result_is_kept_as_given(storage: Storage, clock: FakeClock, result: Any) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def only(ctx: PhaseContext[Any]) -> Done:
        return Done(result)

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    assert job_of(storage, JOB).result == result


def test_next_naming_no_phase_fails_clearly_and_keeps_the_checkpoint(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        return Next("summarise", {"pages": 2})

    @pipeline.phase
    def extract(ctx: PhaseContext[Any]) -> Done:
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    job = job_of(storage, JOB)
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    for name in ("summarise", "fetch", "extract"):
        assert name in job.error
    assert job.checkpoint is not None
    assert (job.checkpoint.next_phase, job.checkpoint.state) == ("summarise", {"pages": 2})


def test_a_checkpoint_from_before_a_rename_fails_clearly_on_resume(storage: Storage, clock: FakeClock) -> None:
    old: Pipeline[Any] = Pipeline("intake")

    @old.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        return Next("summarise", {"pages": 2})

    @old.phase
    def summarise(ctx: PhaseContext[Any]) -> Fail:
        return Fail("model overloaded")

    scheduler = make_scheduler(old, storage, clock)
    run_pipeline(JOB, old, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    renamed: Pipeline[Any] = Pipeline("intake")
    ran: list[str] = []

    @renamed.phase(name="fetch")
    def fetch_again(ctx: PhaseContext[Any]) -> Next:
        ran.append("fetch")
        return Next("summarize", ctx.state)

    @renamed.phase
    def summarize(ctx: PhaseContext[Any]) -> Done:
        ran.append("summarize")
        return Done()

    retry = make_scheduler(renamed, storage, clock)
    run_pipeline(JOB, renamed, storage=storage, scheduler=retry)
    retry.drain()

    job = job_of(storage, JOB)
    assert ran == []
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert "summarise" in job.error
    assert "summarize" in job.error
    assert job.checkpoint is not None
    assert job.checkpoint.next_phase == "summarise"


@pytest.mark.parametrize(
    ("returned", "reason"),
    [
        (None, "nothing"),
        ("next", "a string"),
        (Next("fetch", {"when": object()}), "a state that is not JSON"),
        (Done({"ratio": float("inf")}), "a result that is not JSON"),
    ],
)
def test_a_phase_returning_something_unusable_fails_with_the_checkpoint_kept(
    storage: Storage, clock: FakeClock, returned: Any, reason: str
) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Any:
        return returned

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"n": 1})
    before = job_of(storage, JOB).checkpoint
    scheduler.drain()

    job = job_of(storage, JOB)
    assert job.status == JobStatus.ERROR, reason
    assert job.error
    assert 'Phase "fetch"' in job.error
    assert job.checkpoint == before


# --- resolve_start_phase ------------------------------------------------------------------------

CHECKPOINT = Checkpoint(next_phase="extract", state={"n": 1}, created_at=1)


@pytest.mark.parametrize(
    ("mode", "checkpoint", "expected"),
    [
        ("resume", CHECKPOINT, "extract"),
        (RetryMode.RESUME, CHECKPOINT, "extract"),
        ("resume", None, "fetch"),
        (RetryMode.RESUME, None, "fetch"),
        ("full", CHECKPOINT, "fetch"),
        (RetryMode.FULL, CHECKPOINT, "fetch"),
        ("full", None, "fetch"),
    ],
)
def test_resolve_start_phase(mode: RetryMode | str, checkpoint: Checkpoint | None, expected: str) -> None:
    assert resolve_start_phase(mode, checkpoint, "fetch") == expected


def test_resolve_start_phase_refuses_an_unknown_mode_with_a_cairn_error() -> None:
    with pytest.raises(CairnError):
        resolve_start_phase("restart", CHECKPOINT, "fetch")


# --- wire format --------------------------------------------------------------------------------


def test_checkpoint_uses_the_seed_names_on_the_wire() -> None:
    checkpoint = Checkpoint(next_phase="extract", state={"doc_id": 7}, created_at=1_700_000_000_123)

    wire = checkpoint.to_wire()

    assert wire == {"nextPhase": "extract", "state": {"doc_id": 7}, "createdAt": 1_700_000_000_123}
    assert Checkpoint.model_validate(wire) == checkpoint


def test_a_stored_job_uses_camel_case_on_the_wire(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        ctx.log("fetched")
        return Next("extract", {"page_count": 2})

    @pipeline.phase
    def extract(ctx: PhaseContext[Any]) -> Done:
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)

    job = job_of(storage, JOB)
    wire = job.to_wire()

    assert wire["jobId"] == JOB
    assert wire["checkpoint"] == {"nextPhase": "extract", "state": {"page_count": 2}, "createdAt": clock()}
    for key in ("createdAt", "updatedAt", "expiresAt", "status", "pipeline", "log", "phases", "usage", "attempt"):
        assert key in wire
    assert not [key for key in wire if "_" in key]
    assert {"nextPhase", "startedAt", "endedAt", "outcome"} <= set(wire["phases"][0])
    assert not [key for entry in wire["log"] for key in entry if "_" in key]
    assert wire["status"] == "running"
    assert Job.model_validate(wire) == job


# --- state models -------------------------------------------------------------------------------


class Invoice(BaseModel):
    number: str
    lines: int = 0


def test_a_state_model_is_what_phases_see_and_json_is_what_is_stored(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Invoice] = Pipeline("invoices", state=Invoice)
    seen: list[object] = []

    @pipeline.phase
    def read(ctx: PhaseContext[Invoice]) -> Next:
        seen.append(ctx.state)
        return Next("count", Invoice(number=ctx.state.number, lines=4))

    @pipeline.phase
    def count(ctx: PhaseContext[Invoice]) -> Done:
        seen.append(ctx.state)
        return Done({"lines": ctx.state.lines})

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"number": "INV-1"})
    assert job_of(storage, JOB).checkpoint == Checkpoint(
        next_phase="read", state={"number": "INV-1", "lines": 0}, created_at=clock()
    )
    scheduler.drain(max_steps=1)
    checkpoint = job_of(storage, JOB).checkpoint
    assert checkpoint is not None
    assert checkpoint.state == {"number": "INV-1", "lines": 4}
    scheduler.drain()

    assert seen == [Invoice(number="INV-1"), Invoice(number="INV-1", lines=4)]
    assert job_of(storage, JOB).result == {"lines": 4}


def test_a_stored_state_that_no_longer_fits_the_model_fails_the_phase(storage: Storage, clock: FakeClock) -> None:
    before: Pipeline[Any] = Pipeline("invoices")

    @before.phase
    def read(ctx: PhaseContext[Any]) -> Fail:
        return Fail("stop")

    scheduler = make_scheduler(before, storage, clock)
    run_pipeline(JOB, before, storage=storage, scheduler=scheduler, initial_state={"legacy": True})
    scheduler.drain()

    after: Pipeline[Invoice] = Pipeline("invoices", state=Invoice)
    ran: list[str] = []

    @after.phase(name="read")
    def read_again(ctx: PhaseContext[Invoice]) -> Done:
        ran.append("read")
        return Done()

    retry = make_scheduler(after, storage, clock)
    run_pipeline(JOB, after, storage=storage, scheduler=retry, initial_state={"number": "INV-1"})
    retry.drain()

    job = job_of(storage, JOB)
    assert ran == []
    assert job.status == JobStatus.ERROR
    assert job.checkpoint is not None
    assert job.checkpoint.state == {"legacy": True}
    assert job.lease_owner is None, "the failed run must release its claim"


# --- aliases ------------------------------------------------------------------------------------


def _renamed_with_alias(ran: list[str], body: Callable[[PhaseContext[Any]], Any]) -> tuple[Pipeline[Any], ...]:
    """An "intake" pipeline whose phase "summarise" was renamed "summarize" (with an alias), and its old version."""
    old: Pipeline[Any] = Pipeline("intake")

    @old.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        return Next("summarise", {"pages": 2})

    @old.phase
    def summarise(ctx: PhaseContext[Any]) -> Fail:
        return Fail("model overloaded")

    new: Pipeline[Any] = Pipeline("intake", aliases={"summarise": "summarize"})

    @new.phase(name="fetch")
    def fetch_new(ctx: PhaseContext[Any]) -> Next:
        ran.append("fetch")
        return Next("summarize", ctx.state)

    @new.phase(retry=RetryPolicy(max_attempts=2, backoff=1.0, jitter=False))
    def summarize(ctx: PhaseContext[Any]) -> Any:
        ran.append(f"summarize {ctx.attempt}")
        return body(ctx)

    return old, new


def test_an_alias_lets_a_checkpoint_written_before_a_rename_resume(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []
    old, new = _renamed_with_alias(ran, lambda ctx: Done(ctx.state))
    scheduler = make_scheduler(old, storage, clock)
    run_pipeline(JOB, old, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    retry = make_scheduler(new, storage, clock)
    run_pipeline(JOB, new, storage=storage, scheduler=retry)
    retry.drain()

    job = job_of(storage, JOB)
    assert ran == ["summarize 1"]
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"pages": 2}


def test_a_retry_of_a_phase_resumed_through_an_alias_still_runs(storage: Storage, clock: FakeClock) -> None:
    ran: list[str] = []

    def flaky(ctx: PhaseContext[Any]) -> Done:
        if ctx.attempt == 1:
            raise TimeoutError("model slow")
        return Done(ctx.state)

    old, new = _renamed_with_alias(ran, flaky)
    scheduler = make_scheduler(old, storage, clock)
    run_pipeline(JOB, old, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    retry = make_scheduler(new, storage, clock)
    run_pipeline(JOB, new, storage=storage, scheduler=retry)
    retry.drain()

    job = job_of(storage, JOB)
    assert ran == ["summarize 1", "summarize 2"]
    assert job.status == JobStatus.COMPLETE, f"job left {job.status.value} with nothing scheduled"
