"""The front door, ``Cairn``: the seed's rules through start, retry, pause, cancel, get and list."""

from __future__ import annotations

from typing import Any

import pytest

from cairn import (
    Cairn,
    Done,
    Fail,
    InlineScheduler,
    InvalidInputError,
    JobExistsError,
    JobNotFoundError,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    TransitionRefusedError,
)
from cairn.core.storage_port import Storage
from tests.support import counters


def counting_pipeline(fail_once: list[bool], name: str = "counting") -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline(name)

    @pipeline.phase
    def load(ctx: PhaseContext[Any]) -> Next:
        return Next("work", {"items": ctx.state["items"], "done": 0})

    @pipeline.phase
    def work(ctx: PhaseContext[Any]) -> Next | Fail:
        state = dict(ctx.state)
        while state["done"] < len(state["items"]):
            if fail_once and state["done"] == 1:
                fail_once.pop()
                return Fail("the second item is not ready")
            state["done"] += 1
            ctx.add_usage(items=1)
            ctx.save_state(state)
        return Next("finish", state)

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        return Done({"count": ctx.state["done"]})

    return pipeline


def test_start_then_run_until_idle_completes_the_job(storage: Storage) -> None:
    pipeline = counting_pipeline([])
    app = Cairn(pipeline, storage=storage)

    started = app.start(pipeline, "job-1", state={"items": ["a", "b"]})
    assert started.status == JobStatus.RUNNING
    assert app.run_until_idle() == 3

    job = app.get("job-1")
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"count": 2}
    assert [summary.job_id for summary in app.list(status="complete")] == ["job-1"]


def test_start_is_create_only_and_generates_an_id_when_none_is_given(storage: Storage) -> None:
    pipeline = counting_pipeline([])
    app = Cairn([pipeline], storage=storage)
    first = app.start("counting", "job-1", state={"items": ["a"]})

    with pytest.raises(JobExistsError) as raised:
        app.start("counting", "job-1", state={"items": ["other"]})
    assert raised.value.job == first
    assert app.get("job-1").input == {"items": ["a"]}

    generated = app.start(pipeline, state={"items": []})
    assert generated.job_id != "job-1"
    assert app.get(generated.job_id).status == JobStatus.RUNNING


def test_a_retry_resumes_from_the_checkpoint_and_refuses_a_state_it_would_ignore(storage: Storage) -> None:
    pipeline = counting_pipeline([True])
    app = Cairn(pipeline, storage=storage)
    app.start(pipeline, "job-1", state={"items": ["a", "b", "c"]})
    app.run_until_idle()
    failed = app.get("job-1")
    assert failed.status == JobStatus.ERROR
    assert failed.checkpoint is not None
    assert failed.checkpoint.state["done"] == 1

    with pytest.raises(InvalidInputError, match="ignore the state"):
        app.retry("job-1", mode="resume", state={"items": ["x"]})
    assert app.get("job-1").sequence == failed.sequence  # refused: nothing was written

    app.retry("job-1")
    app.run_until_idle()
    done = app.get("job-1")
    assert done.result == {"count": 3}
    # the item before the failure is not counted twice; the transitions are load's next, then (the
    # failure counts none) work's next after the retry and finish's done
    assert counters(done.usage) == {"items": 3, "transitions": 3}


def test_resuming_a_complete_job_is_refused_and_starting_it_over_runs_it_again(storage: Storage) -> None:
    pipeline = counting_pipeline([])
    app = Cairn(pipeline, storage=storage)
    app.start(pipeline, "job-1", state={"items": ["a"]})
    app.run_until_idle()
    before = app.get("job-1")

    for state in (None, {"items": ["a", "b"]}):  # a resume of a finished job would rerun its side effects
        with pytest.raises(TransitionRefusedError, match="already complete; Start over"):
            app.retry("job-1", state=state)
    assert app.get("job-1") == before

    app.retry("job-1", mode="full", state={"items": ["a", "b", "c", "d"]})
    app.run_until_idle()
    job = app.get("job-1")
    assert job.result == {"count": 4}
    assert job.input == {"items": ["a", "b", "c", "d"]}


def test_pause_cancel_and_unknown_jobs(storage: Storage) -> None:
    pipeline = counting_pipeline([])
    app = Cairn(pipeline, storage=storage)
    app.start(pipeline, "job-1", state={"items": ["a"]})

    assert app.pause("job-1").status == JobStatus.PAUSED
    app.run_until_idle()
    assert app.get("job-1").status == JobStatus.PAUSED  # the queued advance did nothing
    assert app.cancel("job-1").status == JobStatus.CANCELLED
    with pytest.raises(JobNotFoundError):
        app.get("no-such-job")
    with pytest.raises(JobNotFoundError):
        app.retry("no-such-job")
    with pytest.raises(InvalidInputError):
        app.get("bad id\n")


def test_a_front_door_with_two_pipelines_advances_each_job_with_its_own(storage: Storage) -> None:
    first, second = counting_pipeline([], "first"), counting_pipeline([], "second")
    app = Cairn([first, second], storage=storage)
    app.start("first", "a", state={"items": ["x"]})
    app.start("second", "b", state={"items": ["x", "y"]})
    app.run_until_idle()

    assert app.get("a").result == {"count": 1}
    assert app.get("b").result == {"count": 2}
    with pytest.raises(InvalidInputError, match="Unknown pipeline"):
        app.start("third")


def test_run_until_idle_runs_an_unbound_inline_scheduler_and_refuses_one_bound_elsewhere(storage: Storage) -> None:
    pipeline = counting_pipeline([])
    given = InlineScheduler()
    app = Cairn(pipeline, storage=storage, scheduler=given)  # unbound: the front door binds it to itself
    app.start(pipeline, "job-1", state={"items": []})
    app.run_until_idle()
    assert app.get("job-1").status == JobStatus.COMPLETE

    outside = InlineScheduler()
    other = Cairn(pipeline, storage=storage, scheduler=outside)
    borrowed = Cairn(pipeline, storage=storage, scheduler=outside)  # bound to ``other`` already
    borrowed.start(pipeline, "job-2", state={"items": []})
    with pytest.raises(InvalidInputError, match="inline scheduler"):
        borrowed.run_until_idle()
    other.run_until_idle()
    assert app.get("job-2").status == JobStatus.COMPLETE
