"""Every value cairn stores for a caller passes one admission rule, on every store, before anything is written.

A state, a signal payload, a result or an annotation nested deeper than ``MAX_JSON_DEPTH``, or
holding a string that is not Unicode text, is refused with InvalidInputError naming what and the
limit, and the job is left as it was. What is accepted stays readable: the job can be read, listed,
cancelled and retried.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from cairn import (
    Cairn,
    Done,
    InlineScheduler,
    InvalidInputError,
    Job,
    JobNotFoundError,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    WaitFor,
)
from cairn.core.admission import MAX_JSON_DEPTH
from cairn.core.storage_port import Storage
from tests.support import FakeClock

JOB = "deep-1"
TOO_DEEP = [MAX_JSON_DEPTH + 1, 200, 255, 100_000]


def nested(depth: int) -> Any:
    """A value whose arrays nest ``depth`` deep (built without recursion)."""
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def _front_door(pipeline: Pipeline[Any], storage: Storage, clock: FakeClock) -> Cairn:
    return Cairn(pipeline, storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))


def _awaiting() -> Pipeline[Any]:
    """``ask`` waits for signal "go"; ``use`` finishes with the payload it was given as its result."""
    pipeline: Pipeline[Any] = Pipeline("awaiting")

    @pipeline.phase
    def ask(ctx: PhaseContext[Any]) -> WaitFor:
        return WaitFor("go", "use", ctx.state)

    @pipeline.phase
    def use(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.signal)

    return pipeline


def _returning(outcome: Any) -> Pipeline[Any]:
    """One phase that returns ``outcome`` (a callable of the context) and a second that finishes."""
    pipeline: Pipeline[Any] = Pipeline("returning")

    @pipeline.phase
    def make(ctx: PhaseContext[Any]) -> Any:
        return outcome(ctx)

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        return Done("finished")

    return pipeline


def _waiting_job(jobs: Cairn) -> Job:
    jobs.start("awaiting", JOB, state={"n": 1})
    jobs.run_until_idle()
    job = jobs.get(JOB)
    assert (job.status, job.waiting_for) == (JobStatus.WAITING, "go")
    return job


def _assert_usable(jobs: Cairn, job_id: str = JOB) -> None:
    """The job can be read, is listed, can be cancelled and then retried (started over)."""
    job = jobs.get(job_id)
    assert job_id in [listed.job_id for listed in jobs.list()]
    assert jobs.cancel(job_id).status == JobStatus.CANCELLED
    retried = jobs.retry(job_id, mode="full")
    assert retried.status in (JobStatus.RUNNING, JobStatus.WAITING)
    assert jobs.get(job_id).sequence > job.sequence


def test_a_signal_payload_as_deep_as_the_limit_is_delivered_and_the_job_stays_usable(
    storage: Storage, clock: FakeClock
) -> None:
    jobs = _front_door(_awaiting(), storage, clock)
    _waiting_job(jobs)

    jobs.signal(JOB, "go", nested(MAX_JSON_DEPTH))

    delivered = jobs.get(JOB)  # the payload sits on the job until its phase commits
    assert delivered.signal is not None
    assert delivered.signal.payload == nested(MAX_JSON_DEPTH)
    assert [job.status for job in jobs.list()] == [JobStatus.RUNNING]
    assert jobs.cancel(JOB).status == JobStatus.CANCELLED
    jobs.retry(JOB)  # a resume keeps the signal its phase was given
    jobs.run_until_idle()
    done = jobs.get(JOB)
    assert done.status == JobStatus.COMPLETE
    assert done.result == nested(MAX_JSON_DEPTH)


@pytest.mark.parametrize("depth", TOO_DEEP)
def test_a_signal_payload_nested_too_deep_is_refused_and_the_job_still_waits(
    storage: Storage, clock: FakeClock, depth: int
) -> None:
    jobs = _front_door(_awaiting(), storage, clock)
    before = _waiting_job(jobs)

    with pytest.raises(InvalidInputError) as refused:
        jobs.signal(JOB, "go", nested(depth))

    assert str(refused.value) == f"Signal payload nests arrays and objects {depth} deep; at most {MAX_JSON_DEPTH}"
    assert jobs.get(JOB) == before  # nothing was written
    jobs.signal(JOB, "go", {"ok": True})  # the wait is still on: a payload it can take is delivered
    jobs.run_until_idle()
    assert jobs.get(JOB).result == {"ok": True}


def test_a_signal_payload_with_a_lone_surrogate_is_refused(storage: Storage, clock: FakeClock) -> None:
    jobs = _front_door(_awaiting(), storage, clock)
    before = _waiting_job(jobs)

    with pytest.raises(InvalidInputError, match="Signal payload holds a string that is not valid Unicode"):
        jobs.signal(JOB, "go", {"text": "half a pair \ud800"})

    assert jobs.get(JOB) == before


def test_a_state_as_deep_as_the_limit_starts_a_job_that_stays_usable(storage: Storage, clock: FakeClock) -> None:
    jobs = _front_door(_awaiting(), storage, clock)

    jobs.start("awaiting", JOB, state=nested(MAX_JSON_DEPTH))
    jobs.run_until_idle()

    job = jobs.get(JOB)
    assert job.status == JobStatus.WAITING
    assert job.checkpoint is not None
    assert job.checkpoint.state == nested(MAX_JSON_DEPTH)
    _assert_usable(jobs)


@pytest.mark.parametrize("depth", TOO_DEEP)
def test_a_start_with_a_state_nested_too_deep_is_refused_and_writes_no_job(
    storage: Storage, clock: FakeClock, depth: int
) -> None:
    jobs = _front_door(_awaiting(), storage, clock)

    with pytest.raises(InvalidInputError, match=f"nests arrays and objects {depth} deep; at most {MAX_JSON_DEPTH}"):
        jobs.start("awaiting", JOB, state=nested(depth))

    with pytest.raises(JobNotFoundError):
        jobs.get(JOB)
    assert jobs.list() == []


@pytest.mark.parametrize("depth", TOO_DEEP)
def test_a_retry_with_a_state_nested_too_deep_is_refused_and_changes_nothing(
    storage: Storage, clock: FakeClock, depth: int
) -> None:
    jobs = _front_door(_awaiting(), storage, clock)
    before = _waiting_job(jobs)

    with pytest.raises(InvalidInputError, match=f"nests arrays and objects {depth} deep"):
        jobs.retry(JOB, mode="full", state=nested(depth))

    assert jobs.get(JOB) == before


@pytest.mark.parametrize(
    ("outcome", "refused"),
    [
        (lambda ctx: Next("finish", nested(200)), 'State for pipeline "returning" nests arrays and objects 200 deep'),
        (lambda ctx: Done(nested(MAX_JSON_DEPTH + 1)), "The result nests arrays and objects 65 deep"),
        (lambda ctx: WaitFor("go", "finish", nested(100_000)), "nests arrays and objects 100000 deep"),
        (lambda ctx: Done({"text": "\udfff"}), "The result holds a string that is not valid Unicode"),
    ],
    ids=["next-state", "done-result", "wait-state", "lone-surrogate-result"],
)
def test_a_phase_returning_what_cannot_be_stored_fails_with_a_clear_error_and_the_job_stays_usable(
    storage: Storage, clock: FakeClock, outcome: Any, refused: str
) -> None:
    jobs = _front_door(_returning(outcome), storage, clock)

    jobs.start("returning", JOB)
    jobs.run_until_idle()

    failed = jobs.get(JOB)
    assert failed.status == JobStatus.ERROR
    assert failed.error is not None
    assert refused in failed.error
    assert failed.error.startswith('Phase "make" returned output that cannot be stored')
    assert failed.checkpoint is not None
    assert failed.checkpoint.next_phase == "make"  # the bad value was not written
    _assert_usable(jobs)


def test_a_phase_returning_a_state_as_deep_as_the_limit_goes_on(storage: Storage, clock: FakeClock) -> None:
    jobs = _front_door(_returning(lambda ctx: Next("finish", nested(MAX_JSON_DEPTH))), storage, clock)

    jobs.start("returning", JOB)
    jobs.run_until_idle()

    assert jobs.get(JOB).status == JobStatus.COMPLETE


@pytest.mark.parametrize("record", ["observe", "insight", "log"])
def test_an_annotation_that_is_not_unicode_text_fails_the_phase_and_nothing_of_it_is_kept(
    storage: Storage, clock: FakeClock, record: str
) -> None:
    def annotate(ctx: PhaseContext[Any]) -> Done:
        getattr(ctx, record)("half a pair \ud800")
        return Done("annotated")

    jobs = _front_door(_returning(annotate), storage, clock)

    jobs.start("returning", JOB)
    jobs.run_until_idle()

    failed = jobs.get(JOB)
    assert failed.status == JobStatus.ERROR
    assert failed.error is not None
    assert "holds a string that is not valid Unicode" in failed.error
    assert storage.recall("returning", 10) == []  # no lesson holds it
    _assert_usable(jobs)


def test_an_exception_whose_message_is_not_unicode_text_still_fails_the_job_readably(
    storage: Storage, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # The engine's own log line quotes the message as raised; kept out of the report, which must travel as UTF-8.
    caplog.set_level(logging.CRITICAL + 1, logger="cairn")

    def raises(ctx: PhaseContext[Any]) -> Any:
        raise ValueError("bad byte \udcff in the input")

    jobs = _front_door(_returning(raises), storage, clock)

    jobs.start("returning", JOB)
    jobs.run_until_idle()

    failed = jobs.get(JOB)
    assert failed.status == JobStatus.ERROR
    assert failed.error is not None
    assert "bad byte ? in the input" in failed.error  # the lone surrogate replaced, the rest kept
    _assert_usable(jobs)
