"""A phase and a migration each get their own copy of the state: an in-place edit followed by a failure never
changes the checkpoint a retry resumes from. Run on ``Cairn()``'s default store and on the test kit's."""

from __future__ import annotations

import copy
from typing import Any

from cairn import Cairn, Done, Fail, JobStatus, Next, PhaseContext, Pipeline, RetryPolicy
from cairn.testing.plugin import LocalCairns, SkippingClock

JOB = "copies-1"


def edits_then_raises(seen: list[Any]) -> Pipeline[Any]:
    """``count`` adds 100 to its state in place, then raises the first time; a retry completes."""
    pipeline: Pipeline[Any] = Pipeline("copies")

    def count(ctx: PhaseContext[Any]) -> Done:
        seen.append(copy.deepcopy(ctx.state))
        if ctx.attempt == 1:
            ctx.state["n"] += 100
            ctx.state["items"].append("half-done")
            raise RuntimeError("the call failed")
        return Done(ctx.state)

    pipeline.phase(name="count", retry=RetryPolicy(max_attempts=2, backoff=0.0, jitter=False))(count)
    return pipeline


def test_a_retry_after_an_in_place_edit_sees_the_committed_state_on_the_default_store() -> None:
    seen: list[Any] = []
    jobs = Cairn(edits_then_raises(seen))

    jobs.start("copies", JOB, state={"n": 1, "items": []})
    jobs.run_until_idle()

    assert seen == [{"n": 1, "items": []}, {"n": 1, "items": []}]
    job = jobs.get(JOB)
    assert (job.status, job.result) == (JobStatus.COMPLETE, {"n": 1, "items": []})


def test_a_retry_after_an_in_place_edit_sees_the_committed_state_in_the_test_kit(cairn_local: LocalCairns) -> None:
    seen: list[Any] = []
    jobs = cairn_local(edits_then_raises(seen))

    jobs.start("copies", JOB, state={"n": 1, "items": []})
    jobs.run_until_idle()

    assert [state["n"] for state in seen] == [1, 1]
    assert jobs.get(JOB).result == {"n": 1, "items": []}


def test_a_start_state_edited_by_the_caller_afterwards_is_not_the_stored_one() -> None:
    state: dict[str, Any] = {"n": 1, "items": []}
    seen: list[Any] = []
    jobs = Cairn(edits_then_raises(seen))

    jobs.start("copies", JOB, state=state)
    state["n"] = 7
    job = jobs.get(JOB)
    assert job.checkpoint is not None
    job.checkpoint.state["n"] = 8  # an edit of what was read is not stored either
    jobs.run_until_idle()

    assert seen[0] == {"n": 1, "items": []}


def versioned(migration: Any) -> Pipeline[Any]:
    """``check`` at state version 2: it needs the v2 shape, ``{"count": int}``."""
    pipeline: Pipeline[Any] = Pipeline("copies", state_version=2, migrations={1: migration})

    @pipeline.phase
    def check(ctx: PhaseContext[Any]) -> Done:
        return Done({"count": ctx.state["count"] + 1})

    return pipeline


def test_a_migration_that_edits_its_input_then_raises_leaves_the_checkpoint_as_saved(
    cairn_clock: SkippingClock,
) -> None:
    v1: Pipeline[Any] = Pipeline("copies")

    @v1.phase
    def read(ctx: PhaseContext[Any]) -> Next:
        return Next("check", ctx.state)

    @v1.phase
    def check(ctx: PhaseContext[Any]) -> Fail:
        return Fail("the checker is down")

    kit = LocalCairns(cairn_clock)
    first = kit(v1)
    first.start("copies", JOB, state={"n": 4})
    first.run_until_idle()
    assert first.get(JOB).status == JobStatus.ERROR

    def broken(state: dict[str, Any]) -> dict[str, Any]:
        state["count"] = state.pop("n")  # half-migrated in place
        raise ValueError("forgot a field")

    broken_code = kit(versioned(broken), storage=first.storage)
    broken_code.retry(JOB)
    broken_code.run_until_idle()
    failed = broken_code.get(JOB)
    assert failed.status == JobStatus.ERROR
    assert failed.checkpoint is not None
    assert (failed.checkpoint.state, failed.checkpoint.state_version) == ({"n": 4}, None)

    fixed = kit(versioned(lambda state: {"count": state["n"]}), storage=first.storage)
    fixed.retry(JOB)
    fixed.run_until_idle()
    done = fixed.get(JOB)
    assert (done.status, done.result) == (JobStatus.COMPLETE, {"count": 5}), done.error
