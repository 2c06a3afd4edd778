"""The transition guard: a job that loops or fans out without end is stopped in error, naming the setting.

The stack runs with ``RecursiveLoop: Allow``, so Lambda no longer stops a runaway chain: the engine
counts each phase run that leaves its phase and each map item (usage ``transitions``) and stops the
job at ``Pipeline(max_transitions=)``, or the lower ``CAIRN_MAX_TRANSITIONS`` of the stack.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from cairn import (
    Cairn,
    ConfigurationError,
    Done,
    InlineScheduler,
    JobStatus,
    Map,
    Next,
    PhaseContext,
    Pipeline,
    RetryPolicy,
    Sleep,
)
from cairn.core.errors import PipelineError
from cairn.core.pipeline import DEFAULT_MAX_TRANSITIONS
from cairn.core.settings import MAX_TRANSITIONS, Settings, stack_max_transitions
from cairn.core.storage_port import Storage
from cairn.features.transition_guard import GUARD_STOP, TRANSITIONS, transition_limit
from tests.support import FakeClock, counters, log_messages

JOB = "job-1"


def looping(runs: Counter[str], *, max_transitions: int = 5, until: int | None = None) -> Pipeline[Any]:
    """``step`` returns Next to itself, forever (or until it has run ``until`` times in all)."""
    pipeline: Pipeline[Any] = Pipeline("looping", max_transitions=max_transitions)

    @pipeline.phase
    def step(ctx: PhaseContext[Any]) -> Next | Done:
        runs["step"] += 1
        count = ctx.state["count"] + 1
        if until is not None and count >= until:
            return Done({"count": count})
        return Next("step", {"count": count})

    return pipeline


def mapping(runs: Counter[str], *, items: int, max_transitions: int) -> Pipeline[Any]:
    """``split`` maps ``items`` items over ``page``; ``merge`` counts the results."""
    pipeline: Pipeline[Any] = Pipeline("mapping", max_transitions=max_transitions)

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        runs["split"] += 1
        return Map(list(range(items)), phase="page", then="merge", state={})

    @pipeline.phase
    def page(ctx: PhaseContext[Any]) -> Done:
        runs["page"] += 1
        ctx.add_usage(tokens=1)
        return Done(ctx.state)

    @pipeline.phase
    def merge(ctx: PhaseContext[Any]) -> Done:
        runs["merge"] += 1
        assert ctx.results is not None
        return Done({"pages": len(ctx.results)})

    return pipeline


def front_door(pipeline: Pipeline[Any], storage: Storage, clock: FakeClock) -> Cairn:
    return Cairn(pipeline, storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))


def test_a_self_loop_is_stopped_in_error_after_exactly_its_allowed_runs(storage: Storage, clock: FakeClock) -> None:
    runs: Counter[str] = Counter()
    pipeline = looping(runs, max_transitions=5)
    app = front_door(pipeline, storage, clock)

    app.start(pipeline, JOB, state={"count": 0})
    app.run_until_idle()

    job = app.get(JOB)
    assert job.status == JobStatus.ERROR
    assert runs["step"] == 5
    assert job.error == (
        f'Job "{JOB}" reached its limit of 5 transitions (Pipeline(max_transitions=5), or CAIRN_MAX_TRANSITIONS '
        "for the stack): a phase that loops or fans out without end is stopped here. Retry the job to allow "
        "it 5 more, or raise the limit first if that is not enough."
    )
    assert counters(job.usage) == {TRANSITIONS: 5, GUARD_STOP: 5}
    assert job.checkpoint is not None
    assert job.checkpoint.state == {"count": 5}  # a resume goes on from here
    assert [record.outcome for record in job.phases] == ["next"] * 5 + ["error"]
    assert job.error in log_messages(job.log)
    assert [entry.level for entry in job.log if entry.message == job.error] == ["error"]
    assert [entry.kind for entry in job.log if entry.message == job.error] == ["error"]


def test_a_retry_after_the_guard_stopped_the_job_may_take_the_whole_limit_again(
    storage: Storage, clock: FakeClock
) -> None:
    runs: Counter[str] = Counter()
    pipeline = looping(runs, max_transitions=5, until=8)
    app = front_door(pipeline, storage, clock)
    app.start(pipeline, JOB, state={"count": 0})
    app.run_until_idle()
    assert app.get(JOB).status == JobStatus.ERROR

    app.retry(JOB)
    app.run_until_idle()

    job = app.get(JOB)
    assert job.status == JobStatus.COMPLETE, job.error
    assert job.result == {"count": 8}
    assert runs["step"] == 8  # five before the stop, three after the retry: none ran twice
    assert counters(job.usage) == {TRANSITIONS: 8, GUARD_STOP: 5}  # every transition of the job's life; counted from 5


def test_a_retry_that_loops_on_is_stopped_again_after_the_limit(storage: Storage, clock: FakeClock) -> None:
    runs: Counter[str] = Counter()
    pipeline = looping(runs, max_transitions=3)
    app = front_door(pipeline, storage, clock)
    app.start(pipeline, JOB, state={"count": 0})
    app.run_until_idle()

    app.retry(JOB)
    app.run_until_idle()

    job = app.get(JOB)
    assert job.status == JobStatus.ERROR
    assert runs["step"] == 6
    assert counters(job.usage) == {TRANSITIONS: 6, GUARD_STOP: 6}
    assert job.checkpoint is not None
    assert job.checkpoint.state == {"count": 6}


def test_a_job_under_its_limit_completes(storage: Storage, clock: FakeClock) -> None:
    runs: Counter[str] = Counter()
    pipeline = looping(runs, max_transitions=5, until=5)
    app = front_door(pipeline, storage, clock)

    app.start(pipeline, JOB, state={"count": 0})
    app.run_until_idle()

    job = app.get(JOB)
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"count": 5}
    assert counters(job.usage) == {TRANSITIONS: 5}  # four Next and the Done: the limit is reached, not passed


def test_retries_and_errors_count_no_transition(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("flaky", max_transitions=2)
    attempts: list[int] = []

    @pipeline.phase(retry=RetryPolicy(max_attempts=4, backoff=0.001, jitter=False))
    def shaky(ctx: PhaseContext[Any]) -> Sleep:
        attempts.append(ctx.attempt)
        if ctx.attempt < 4:
            raise RuntimeError("not yet")
        return Sleep(1, "after", {})

    @pipeline.phase
    def after(ctx: PhaseContext[Any]) -> Done:
        return Done({"ok": True})

    app = front_door(pipeline, storage, clock)
    app.start(pipeline, JOB, state={})
    app.run_until_idle()

    job = app.get(JOB)
    assert job.status == JobStatus.COMPLETE, job.error
    assert attempts == [1, 2, 3, 4]
    assert counters(job.usage) == {TRANSITIONS: 2}  # the sleep and the done


def test_a_map_whose_items_would_pass_the_limit_is_refused_at_its_start(storage: Storage, clock: FakeClock) -> None:
    runs: Counter[str] = Counter()
    pipeline = mapping(runs, items=10, max_transitions=5)
    app = front_door(pipeline, storage, clock)

    app.start(pipeline, JOB, state={})
    app.run_until_idle()

    job = app.get(JOB)
    assert job.status == JobStatus.ERROR
    assert runs == Counter({"split": 1})  # no item ran, and no item record was written
    assert job.fan_out is None
    assert storage.get_maps(JOB) == []
    assert job.error is not None
    assert job.error.startswith(f'Job "{JOB}" cannot start a map of 10 items over phase "page"')
    assert "limit of 5 transitions (Pipeline(max_transitions=5)" in job.error
    assert counters(job.usage) == {GUARD_STOP: 0}
    assert job.error in log_messages(job.log)


def test_a_map_that_fits_counts_each_item_once(storage: Storage, clock: FakeClock) -> None:
    runs: Counter[str] = Counter()
    pipeline = mapping(runs, items=3, max_transitions=5)  # split, three items, merge: exactly five
    app = front_door(pipeline, storage, clock)

    app.start(pipeline, JOB, state={})
    app.run_until_idle()

    job = app.get(JOB)
    assert job.status == JobStatus.COMPLETE, job.error
    assert job.result == {"pages": 3}
    assert runs == Counter({"split": 1, "page": 3, "merge": 1})
    assert counters(job.usage) == {TRANSITIONS: 5, "tokens": 3}  # the items' usage joined without a count of its own


def test_a_map_without_room_for_the_phase_after_it_is_refused(storage: Storage, clock: FakeClock) -> None:
    runs: Counter[str] = Counter()
    pipeline = mapping(runs, items=4, max_transitions=5)  # split, four items: merge would be the sixth

    app = front_door(pipeline, storage, clock)
    app.start(pipeline, JOB, state={})
    app.run_until_idle()

    assert app.get(JOB).status == JobStatus.ERROR
    assert runs == Counter({"split": 1})


def test_the_default_limit_is_generous() -> None:
    assert DEFAULT_MAX_TRANSITIONS == 100_000
    assert Pipeline("plain").max_transitions == DEFAULT_MAX_TRANSITIONS


@pytest.mark.parametrize("value", [0, -1, "x", 2.5, True, None])
def test_a_bad_max_transitions_is_refused_when_the_pipeline_is_made(value: Any) -> None:
    with pytest.raises(PipelineError) as refused:
        Pipeline("bad", max_transitions=value)

    assert str(refused.value) == f"Pipeline 'bad': max_transitions must be a positive whole number, got {value!r}"


@pytest.mark.parametrize("raw", ["0", "-1", "x", "2.5"])
def test_a_bad_cairn_max_transitions_is_a_configuration_error(raw: str) -> None:
    environ = {MAX_TRANSITIONS: raw}

    with pytest.raises(ConfigurationError, match=MAX_TRANSITIONS):
        Settings.from_env(environ)
    with pytest.raises(ConfigurationError, match=MAX_TRANSITIONS):
        transition_limit(Pipeline("plain"), environ)


def test_cairn_max_transitions_is_read_into_the_settings() -> None:
    assert Settings.from_env({MAX_TRANSITIONS: "250"}).max_transitions == 250
    assert Settings.from_env({MAX_TRANSITIONS: ""}).max_transitions is None
    assert Settings.from_env({}).max_transitions is None
    assert stack_max_transitions({}) is None


def test_the_stack_limit_lowers_the_pipelines_and_never_raises_it() -> None:
    pipeline: Pipeline[Any] = Pipeline("limited", max_transitions=50)

    lowered = transition_limit(pipeline, {MAX_TRANSITIONS: "7"})
    kept = transition_limit(pipeline, {MAX_TRANSITIONS: "1000"})

    assert lowered.value == 7
    assert lowered.setting == "CAIRN_MAX_TRANSITIONS=7 for the stack, below Pipeline(max_transitions=50)"
    assert kept.value == 50
    assert kept.setting == "Pipeline(max_transitions=50), or CAIRN_MAX_TRANSITIONS for the stack"
    assert transition_limit(pipeline, {}).value == 50


def test_the_stack_limit_stops_a_loop_and_names_itself(
    storage: Storage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MAX_TRANSITIONS, "3")
    runs: Counter[str] = Counter()
    pipeline = looping(runs, max_transitions=DEFAULT_MAX_TRANSITIONS)
    app = front_door(pipeline, storage, clock)

    app.start(pipeline, JOB, state={"count": 0})
    app.run_until_idle()

    job = app.get(JOB)
    assert job.status == JobStatus.ERROR
    assert runs["step"] == 3
    assert job.error is not None
    assert job.error.startswith(
        f'Job "{JOB}" reached its limit of 3 transitions (CAIRN_MAX_TRANSITIONS=3 for the stack, '
        f"below Pipeline(max_transitions={DEFAULT_MAX_TRANSITIONS}))"
    )


def test_a_bad_cairn_max_transitions_refuses_an_advance_before_anything_is_written(
    storage: Storage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: Counter[str] = Counter()
    pipeline = looping(runs)
    app = front_door(pipeline, storage, clock)
    app.start(pipeline, JOB, state={"count": 0})
    before = app.get(JOB)
    monkeypatch.setenv(MAX_TRANSITIONS, "many")

    with pytest.raises(ConfigurationError, match="CAIRN_MAX_TRANSITIONS must be a whole number, got 'many'"):
        app.advance(JOB, phase="step", sequence=before.sequence)

    after = app.get(JOB)
    assert (after.sequence, after.lease_owner, runs["step"]) == (before.sequence, None, 0)
