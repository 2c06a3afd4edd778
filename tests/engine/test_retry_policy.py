"""Per-phase retries: how often a failing phase is tried again, and how long cairn waits in between."""

from __future__ import annotations

import random
from typing import Any

import pytest

from cairn import Done, InvalidInputError, JobStatus, Next, PhaseContext, Pipeline, RetryPolicy, run_pipeline
from cairn.adapters import Checkpoint
from cairn.core.storage_port import Storage
from tests.support import FakeClock, job_of, make_scheduler, recording_scheduler

JOB = "job-1"


def _flaky(policy: RetryPolicy | None, failures: list[BaseException], seen: list[Any]) -> Pipeline[Any]:
    """prepare -> call: ``call`` raises the next exception in ``failures`` until none are left."""
    pipeline: Pipeline[Any] = Pipeline("flaky")

    @pipeline.phase
    def prepare(ctx: PhaseContext[Any]) -> Next:
        return Next("call", {"url": "https://example.test"})

    def call(ctx: PhaseContext[Any]) -> Done:
        seen.append(ctx.attempt)
        if failures:
            raise failures.pop(0)
        return Done({"attempts": ctx.attempt})

    pipeline.phase(name="call", retry=policy)(call)
    return pipeline


def test_the_default_policy_is_one_attempt(storage: Storage, clock: FakeClock) -> None:
    assert RetryPolicy().max_attempts == 1
    seen: list[Any] = []
    pipeline = _flaky(None, [ConnectionError("reset")], seen)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})

    scheduler.drain()

    job = job_of(storage, JOB)
    assert seen == [1]
    assert job.status == JobStatus.ERROR
    assert job.error == "reset"


def test_a_phase_failing_twice_then_succeeding_completes(storage: Storage, clock: FakeClock) -> None:
    seen: list[Any] = []
    failures: list[BaseException] = [TimeoutError("slow 1"), TimeoutError("slow 2")]
    pipeline = _flaky(RetryPolicy(max_attempts=3, backoff=1.0, jitter=False), failures, seen)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})

    scheduler.drain()

    job = job_of(storage, JOB)
    assert seen == [1, 2, 3]
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"attempts": 3}
    assert job.error is None
    assert [(record.phase, record.attempt, record.outcome) for record in job.phases] == [
        ("prepare", 1, "next"),
        ("call", 1, "retry"),
        ("call", 2, "retry"),
        ("call", 3, "done"),
    ]


def test_the_checkpoint_is_kept_between_tries(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("flaky")
    seen: list[tuple[int, Checkpoint | None, Checkpoint, int]] = []

    @pipeline.phase
    def prepare(ctx: PhaseContext[Any]) -> Next:
        return Next("call", {"url": "https://example.test"})

    @pipeline.phase(retry=RetryPolicy(max_attempts=3, backoff=1.0, jitter=False))
    def call(ctx: PhaseContext[Any]) -> Done:
        stored = job_of(storage, JOB)
        seen.append((ctx.attempt, stored.checkpoint, ctx.checkpoint, stored.attempt))
        if ctx.attempt < 3:
            raise TimeoutError("slow")
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)
    written = job_of(storage, JOB).checkpoint
    assert written is not None

    scheduler.drain()

    assert [attempt for attempt, *_ in seen] == [1, 2, 3]
    for attempt, stored_checkpoint, ctx_checkpoint, stored_attempt in seen:
        assert stored_checkpoint == written
        assert ctx_checkpoint == written
        assert stored_attempt == attempt


def test_a_retry_continues_from_the_state_saved_by_the_failed_attempt(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("flaky")
    seen: list[tuple[int, Any]] = []

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=1.0, jitter=False))
    def batch(ctx: PhaseContext[Any]) -> Done:
        seen.append((ctx.attempt, ctx.state))
        if ctx.attempt == 1:
            ctx.save_state({"processed": 40})
            raise TimeoutError("slow")
        return Done(ctx.state)

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"processed": 0})
    scheduler.drain()

    assert seen == [(1, {"processed": 0}), (2, {"processed": 40})]
    assert job_of(storage, JOB).result == {"processed": 40}


def test_retries_wait_with_doubling_backoff(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("flaky")
    started: list[int] = []

    @pipeline.phase(retry=RetryPolicy(max_attempts=4, backoff=1.0, jitter=False))
    def call(ctx: PhaseContext[Any]) -> Done:
        started.append(clock())
        if ctx.attempt < 4:
            raise TimeoutError("slow")
        return Done()

    scheduler = recording_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    t0 = clock()

    scheduler.drain()

    assert [item.delay for item in scheduler.scheduled] == [0.0, 1.0, 2.0, 4.0]
    assert [item.phase for item in scheduler.scheduled] == ["call"] * 4
    assert [at - t0 for at in started] == [0, 1000, 3000, 7000]
    assert job_of(storage, JOB).status == JobStatus.COMPLETE


def test_backoff_is_capped_by_max_delay(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("flaky")
    started: list[int] = []

    @pipeline.phase(retry=RetryPolicy(max_attempts=5, backoff=10.0, max_delay=25.0, jitter=False))
    def call(ctx: PhaseContext[Any]) -> Done:
        started.append(clock())
        if ctx.attempt < 5:
            raise TimeoutError("slow")
        return Done()

    scheduler = recording_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    t0 = clock()

    scheduler.drain()

    assert [item.delay for item in scheduler.scheduled[1:]] == [10.0, 20.0, 25.0, 25.0]
    assert [at - t0 for at in started] == [0, 10_000, 30_000, 55_000, 80_000]


def test_retry_delays_with_jitter_stay_in_range(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("flaky")

    @pipeline.phase(retry=RetryPolicy(max_attempts=3, backoff=2.0, max_delay=3.0, jitter=True))
    def call(ctx: PhaseContext[Any]) -> Done:
        if ctx.attempt < 3:
            raise TimeoutError("slow")
        return Done()

    scheduler = recording_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})

    scheduler.drain()

    first, second = (item.delay for item in scheduler.scheduled[1:])
    assert 1.0 <= first <= 2.0
    assert 1.5 <= second <= 3.0
    assert job_of(storage, JOB).status == JobStatus.COMPLETE


def test_retry_on_decides_which_exceptions_are_retried(storage: Storage, clock: FakeClock) -> None:
    seen: list[Any] = []
    failures: list[BaseException] = [TimeoutError("slow"), ValueError("malformed response")]
    policy = RetryPolicy(max_attempts=5, backoff=1.0, jitter=False, retry_on=(TimeoutError,))
    pipeline = _flaky(policy, failures, seen)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})

    scheduler.drain()

    job = job_of(storage, JOB)
    assert seen == [1, 2], "TimeoutError is retried, ValueError is not"
    assert job.status == JobStatus.ERROR
    assert job.error == "malformed response"
    assert scheduler.pending() == 0


def test_retry_on_matches_subclasses(storage: Storage, clock: FakeClock) -> None:
    seen: list[Any] = []
    policy = RetryPolicy(max_attempts=2, backoff=0.0, jitter=False, retry_on=(OSError,))
    pipeline = _flaky(policy, [ConnectionResetError("peer reset")], seen)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})

    scheduler.drain()

    assert seen == [1, 2]
    assert job_of(storage, JOB).status == JobStatus.COMPLETE


def test_the_last_failure_sets_the_error(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("flaky")
    seen: list[int] = []

    @pipeline.phase(retry=RetryPolicy(max_attempts=3, backoff=1.0, jitter=False))
    def call(ctx: PhaseContext[Any]) -> Done:
        seen.append(ctx.attempt)
        raise TimeoutError(f"slow on attempt {ctx.attempt}")

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"n": 1})
    before = job_of(storage, JOB).checkpoint

    scheduler.drain()

    job = job_of(storage, JOB)
    assert seen == [1, 2, 3]
    assert job.status == JobStatus.ERROR
    assert job.error == "slow on attempt 3"
    assert job.checkpoint == before
    assert [record.outcome for record in job.phases] == ["retry", "retry", "error"]
    assert scheduler.pending() == 0


def test_a_resume_after_exhausted_retries_starts_counting_attempts_again(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("flaky")
    seen: list[int] = []
    fail = [True]

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=1.0, jitter=False))
    def call(ctx: PhaseContext[Any]) -> Done:
        seen.append(ctx.attempt)
        if fail[0]:
            raise TimeoutError("slow")
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()
    fail[0] = False

    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler)
    scheduler.drain()

    assert seen == [1, 2, 1]
    assert job_of(storage, JOB).status == JobStatus.COMPLETE


def test_attempts_count_per_phase(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("flaky")
    seen: list[tuple[str, int]] = []
    policy = RetryPolicy(max_attempts=2, backoff=0.0, jitter=False)

    @pipeline.phase(retry=policy)
    def first(ctx: PhaseContext[Any]) -> Next:
        seen.append(("first", ctx.attempt))
        if ctx.attempt == 1:
            raise TimeoutError("slow")
        return Next("second", {})

    @pipeline.phase(retry=policy)
    def second(ctx: PhaseContext[Any]) -> Done:
        seen.append(("second", ctx.attempt))
        if ctx.attempt == 1:
            raise TimeoutError("slow")
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    assert seen == [("first", 1), ("first", 2), ("second", 1), ("second", 2)]
    assert job_of(storage, JOB).status == JobStatus.COMPLETE


# --- the policy itself --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (RetryPolicy(backoff=1.0, jitter=False), [1.0, 2.0, 4.0, 8.0]),
        (RetryPolicy(backoff=0.5, max_delay=3.0, jitter=False), [0.5, 1.0, 2.0, 3.0, 3.0]),
        (RetryPolicy(backoff=0.0, jitter=False), [0.0, 0.0]),
        (RetryPolicy(backoff=100.0, jitter=False), [100.0, 200.0, 300.0, 300.0]),
    ],
)
def test_delay_for_doubles_and_caps(policy: RetryPolicy, expected: list[float]) -> None:
    assert [policy.delay_for(attempt) for attempt in range(1, len(expected) + 1)] == expected


def test_delay_for_with_jitter_stays_between_half_and_all_of_the_capped_delay() -> None:
    policy = RetryPolicy(backoff=1.5, max_delay=20.0, jitter=True)
    rng = random.Random(1234)
    for attempt in range(1, 12):
        capped = min(1.5 * 2 ** (attempt - 1), 20.0)
        draws = [policy.delay_for(attempt, rng) for _ in range(200)]
        assert all(capped / 2 <= draw <= capped for draw in draws), attempt
        assert len(set(draws)) > 1, "jitter must actually vary the delay"


class _Fixed(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


@pytest.mark.parametrize(("draw", "expected"), [(0.0, 4.0), (0.5, 6.0), (0.999999, 7.999996)])
def test_delay_for_with_jitter_spans_the_whole_range(draw: float, expected: float) -> None:
    policy = RetryPolicy(backoff=2.0, jitter=True)

    assert policy.delay_for(3, _Fixed(draw)) == pytest.approx(expected)


def test_delay_for_with_jitter_uses_the_module_random_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = RetryPolicy(backoff=2.0, max_delay=10.0, jitter=True)

    draws = [policy.delay_for(2) for _ in range(100)]

    assert all(2.0 <= draw <= 4.0 for draw in draws)
    given = iter([0.0, 0.25, 0.5, 0.75, 0.999])
    monkeypatch.setattr(random, "random", lambda: next(given))  # what the module random draws next
    assert [policy.delay_for(2) for _ in range(5)] == pytest.approx([2.0, 2.5, 3.0, 3.5, 3.998])
    assert next(given, None) is None  # one draw of the module's per delay, none from anywhere else


@pytest.mark.parametrize(
    "kwargs",
    [{"max_attempts": 0}, {"max_attempts": -1}, {"backoff": -1.0}, {"max_delay": -0.5}],
)
def test_a_nonsensical_policy_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        RetryPolicy(**kwargs)


def test_should_retry_respects_attempts_and_types() -> None:
    policy = RetryPolicy(max_attempts=3, retry_on=(TimeoutError,))

    assert policy.should_retry(TimeoutError(), 1)
    assert policy.should_retry(TimeoutError(), 2)
    assert not policy.should_retry(TimeoutError(), 3)
    assert not policy.should_retry(ValueError(), 1)
