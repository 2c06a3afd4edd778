"""Sleeps, signals and reruns from a phase on every store, through the front door (``Cairn``).

A sleep commits its checkpoint with the wake-up time and nothing runs until then; a wait makes the
job ``waiting`` until its signal (exactly one delivery wins) or its timeout; a rerun continues at a
chosen phase with the state the job entered it with, or an edited one.
"""

from __future__ import annotations

from typing import Any

import pytest

from cairn import (
    Cairn,
    Done,
    InlineScheduler,
    InvalidInputError,
    JobNotFoundError,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    Sleep,
    TransitionRefusedError,
    WaitFor,
)
from cairn.adapters import ClaimLostError
from cairn.core.storage_port import Storage
from tests.support import FakeClock, log_messages

JOB = "doc-1"
TWO_HOURS = 7200


def _front_door(pipeline: Pipeline[Any], storage: Storage, clock: FakeClock) -> Cairn:
    return Cairn(pipeline, storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))


def _sleeping(ran: list[tuple[str, int]], clock: FakeClock, seconds: float = TWO_HOURS) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("nap")

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Sleep:
        ran.append(("fetch", clock()))
        return Sleep(seconds, "publish", {"pages": 3})

    @pipeline.phase
    def publish(ctx: PhaseContext[Any]) -> Done:
        ran.append(("publish", clock()))
        return Done({"published": ctx.state["pages"]})

    return pipeline


def test_a_sleep_commits_its_checkpoint_and_the_next_phase_runs_after_the_delay(
    storage: Storage, clock: FakeClock
) -> None:
    ran: list[tuple[str, int]] = []
    jobs = _front_door(_sleeping(ran, clock), storage, clock)
    jobs.start("nap", JOB, state={})

    jobs.run_until_idle(max_steps=1)
    asleep = jobs.get(JOB)
    assert asleep.status == JobStatus.RUNNING
    assert asleep.checkpoint is not None
    assert asleep.checkpoint.next_phase == "publish"
    assert asleep.checkpoint.state == {"pages": 3}
    assert asleep.not_before == ran[0][1] + TWO_HOURS * 1000
    assert [name for name, _ in ran] == ["fetch"]

    jobs.run_until_idle()
    done = jobs.get(JOB)
    assert done.status == JobStatus.COMPLETE
    assert done.result == {"published": 3}
    assert ran[1][1] - ran[0][1] >= TWO_HOURS * 1000
    assert [record.outcome for record in done.phases] == ["sleep", "done"]


@pytest.mark.parametrize("stop", ["pause", "cancel"])
def test_a_paused_or_cancelled_sleeping_job_does_not_wake(storage: Storage, clock: FakeClock, stop: str) -> None:
    ran: list[tuple[str, int]] = []
    jobs = _front_door(_sleeping(ran, clock), storage, clock)
    jobs.start("nap", JOB, state={})
    jobs.run_until_idle(max_steps=1)

    getattr(jobs, stop)(JOB)
    jobs.run_until_idle()
    clock.advance(TWO_HOURS * 2)
    jobs.run_until_idle()

    assert [name for name, _ in ran] == ["fetch"]
    assert jobs.get(JOB).status == (JobStatus.PAUSED if stop == "pause" else JobStatus.CANCELLED)
    jobs.retry(JOB)
    jobs.run_until_idle()
    assert jobs.get(JOB).status == JobStatus.COMPLETE
    assert [name for name, _ in ran] == ["fetch", "publish"]


def test_a_sleep_longer_than_the_ttl_is_a_clear_error(storage: Storage, clock: FakeClock) -> None:
    ran: list[tuple[str, int]] = []
    jobs = _front_door(_sleeping(ran, clock, seconds=400 * 24 * 3600), storage, clock)
    jobs.start("nap", JOB, state={})
    jobs.run_until_idle()

    failed = jobs.get(JOB)
    assert failed.status == JobStatus.ERROR
    assert failed.error is not None
    assert "Sleep(seconds)" in failed.error
    assert "TTL" in failed.error


def _approval(seen: list[Any], *, timeout: float | None = 3600, timeout_phase: str | None = None) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("review")

    @pipeline.phase
    def draft(ctx: PhaseContext[Any]) -> WaitFor:
        return WaitFor("approval", "publish", {"title": "Q3"}, timeout=timeout, timeout_phase=timeout_phase)

    @pipeline.phase
    def publish(ctx: PhaseContext[Any]) -> Done:
        seen.append(ctx.signal)
        return Done({"title": ctx.state["title"], "approved_by": ctx.signal["by"]})

    @pipeline.phase
    def escalate(ctx: PhaseContext[Any]) -> Done:
        seen.append(("escalated", ctx.signal))
        return Done({"escalated": ctx.state["title"]})

    return pipeline


def test_a_waiting_job_continues_with_the_signal_payload(storage: Storage, clock: FakeClock) -> None:
    seen: list[Any] = []
    jobs = _front_door(_approval(seen), storage, clock)
    jobs.start("review", JOB, state={})
    jobs.run_until_idle()

    waiting = jobs.get(JOB)
    assert waiting.status == JobStatus.WAITING
    assert waiting.waiting_for == "approval"
    assert waiting.wait_deadline is not None
    assert seen == []

    jobs.signal(JOB, "approval", {"by": "ana"})
    jobs.run_until_idle()
    done = jobs.get(JOB)
    assert done.status == JobStatus.COMPLETE
    assert done.result == {"title": "Q3", "approved_by": "ana"}
    assert seen == [{"by": "ana"}]
    assert 'Received signal "approval"' in log_messages(done.log)
    assert done.signal is None
    assert done.waiting_for is None


def test_a_second_delivery_and_an_unawaited_signal_are_refused_and_stored_nowhere(
    storage: Storage, clock: FakeClock
) -> None:
    seen: list[Any] = []
    jobs = _front_door(_approval(seen), storage, clock)
    jobs.start("review", JOB, state={})
    jobs.run_until_idle()

    with pytest.raises(TransitionRefusedError, match="no one waits for signal"):
        jobs.signal(JOB, "rejection", {"by": "bo"})
    assert jobs.get(JOB).status == JobStatus.WAITING
    jobs.signal(JOB, "approval", {"by": "ana"})
    with pytest.raises(TransitionRefusedError):
        jobs.signal(JOB, "approval", {"by": "bo"})
    jobs.run_until_idle()
    with pytest.raises(TransitionRefusedError):
        jobs.signal(JOB, "approval", {"by": "cy"})

    assert seen == [{"by": "ana"}]
    assert jobs.get(JOB).result == {"title": "Q3", "approved_by": "ana"}
    with pytest.raises(JobNotFoundError):
        jobs.signal("nobody", "approval", {})


def test_two_racing_deliveries_one_wins(storage_factory: Any, clock: FakeClock) -> None:
    """Two front doors on one store, each with its own view of the job: exactly one delivery lands."""
    seen: list[Any] = []
    first = _front_door(_approval(seen), storage_factory(clock), clock)
    second = _front_door(_approval(seen), storage_factory(clock), clock)
    first.start("review", JOB, state={})
    first.run_until_idle()
    second.get(JOB)

    outcomes = []
    for jobs, who in ((first, "ana"), (second, "bo")):
        try:
            jobs.signal(JOB, "approval", {"by": who})
            outcomes.append(who)
        except TransitionRefusedError:
            outcomes.append("refused")
    first.run_until_idle()
    second.run_until_idle()

    assert outcomes == ["ana", "refused"]
    assert seen == [{"by": "ana"}]


def test_a_bad_signal_name_or_payload_is_refused_before_anything_is_written(storage: Storage, clock: FakeClock) -> None:
    jobs = _front_door(_approval([]), storage, clock)
    jobs.start("review", JOB, state={})
    jobs.run_until_idle()
    before = jobs.get(JOB).sequence

    for name in ("", "has space", "x" * 65, "-leading"):
        with pytest.raises(InvalidInputError, match="signal name"):
            jobs.signal(JOB, name, {})
    with pytest.raises(InvalidInputError, match="at most"):
        jobs.signal(JOB, "approval", {"blob": "x" * 70_000})
    assert jobs.get(JOB).sequence == before


def test_a_wait_that_times_out_is_an_error_and_a_resume_waits_again(storage: Storage, clock: FakeClock) -> None:
    seen: list[Any] = []
    jobs = _front_door(_approval(seen, timeout=600), storage, clock)
    jobs.start("review", JOB, state={})
    jobs.run_until_idle()
    assert jobs.get(JOB).status == JobStatus.WAITING

    clock.advance(601)
    jobs.run_until_idle()
    failed = jobs.get(JOB)
    assert failed.status == JobStatus.ERROR
    assert failed.error is not None
    assert 'Timed out waiting for signal "approval"' in failed.error
    with pytest.raises(TransitionRefusedError):
        jobs.signal(JOB, "approval", {"by": "late"})

    resumed = jobs.retry(JOB)
    assert resumed.status == JobStatus.WAITING
    assert resumed.waiting_for == "approval"
    assert resumed.wait_deadline == clock() + 600_000
    jobs.run_until_idle()
    assert seen == []  # the approval is never skipped
    jobs.signal(JOB, "approval", {"by": "ana"})
    jobs.run_until_idle()
    assert jobs.get(JOB).status == JobStatus.COMPLETE
    assert seen == [{"by": "ana"}]


def test_a_wait_that_times_out_continues_at_its_timeout_phase(storage: Storage, clock: FakeClock) -> None:
    seen: list[Any] = []
    jobs = _front_door(_approval(seen, timeout=600, timeout_phase="escalate"), storage, clock)
    jobs.start("review", JOB, state={})
    jobs.run_until_idle()

    clock.advance(601)
    jobs.run_until_idle()
    done = jobs.get(JOB)
    assert done.status == JobStatus.COMPLETE
    assert done.result == {"escalated": "Q3"}
    assert seen == [("escalated", None)]


def test_a_signal_before_the_timeout_makes_the_timeout_a_no_op(storage: Storage, clock: FakeClock) -> None:
    seen: list[Any] = []
    jobs = _front_door(_approval(seen, timeout=600), storage, clock)
    jobs.start("review", JOB, state={})
    jobs.run_until_idle()

    jobs.signal(JOB, "approval", {"by": "ana"})
    clock.advance(3600)
    jobs.run_until_idle()

    done = jobs.get(JOB)
    assert done.status == JobStatus.COMPLETE
    assert seen == [{"by": "ana"}]


def test_a_job_cancelled_while_waiting_waits_again_when_resumed(storage: Storage, clock: FakeClock) -> None:
    seen: list[Any] = []
    jobs = _front_door(_approval(seen, timeout=None), storage, clock)
    jobs.start("review", JOB, state={})
    jobs.run_until_idle()

    jobs.cancel(JOB)
    with pytest.raises(TransitionRefusedError):
        jobs.signal(JOB, "approval", {"by": "ana"})
    assert jobs.retry(JOB).status == JobStatus.WAITING
    jobs.run_until_idle()
    assert seen == []
    jobs.signal(JOB, "approval", {"by": "ana"})
    jobs.run_until_idle()
    assert jobs.get(JOB).status == JobStatus.COMPLETE


def test_a_crash_in_the_phase_after_the_signal_reads_the_signal_again(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("review")
    seen: list[Any] = []

    @pipeline.phase
    def draft(ctx: PhaseContext[Any]) -> WaitFor:
        return WaitFor("approval", "publish", {})

    @pipeline.phase(retry=None)
    def publish(ctx: PhaseContext[Any]) -> Done:
        seen.append(ctx.signal)
        if len(seen) == 1:
            raise RuntimeError("the mail server is down")
        return Done(ctx.signal)

    jobs = _front_door(pipeline, storage, clock)
    jobs.start("review", JOB, state={})
    jobs.run_until_idle()
    jobs.signal(JOB, "approval", {"by": "ana"})
    jobs.run_until_idle()
    assert jobs.get(JOB).status == JobStatus.ERROR

    jobs.retry(JOB)
    jobs.run_until_idle()
    assert jobs.get(JOB).result == {"by": "ana"}
    assert seen == [{"by": "ana"}, {"by": "ana"}]


def _three_steps(ran: list[tuple[str, Any]]) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("steps")

    @pipeline.phase
    def load(ctx: PhaseContext[Any]) -> Next:
        ran.append(("load", ctx.state))
        return Next("extract", {"pages": ctx.state["pages"], "loaded": True})

    @pipeline.phase
    def extract(ctx: PhaseContext[Any]) -> Next:
        ran.append(("extract", ctx.state))
        return Next("summarise", {**ctx.state, "words": ctx.state["pages"] * 100})

    @pipeline.phase
    def summarise(ctx: PhaseContext[Any]) -> Done:
        ran.append(("summarise", ctx.state))
        return Done({"words": ctx.state["words"]})

    return pipeline


def test_a_rerun_from_a_phase_uses_the_state_the_job_entered_it_with(storage: Storage, clock: FakeClock) -> None:
    ran: list[tuple[str, Any]] = []
    jobs = _front_door(_three_steps(ran), storage, clock)
    jobs.start("steps", JOB, state={"pages": 2})
    jobs.run_until_idle()
    ran.clear()

    rerun = jobs.retry(JOB, mode="from", phase="extract", by="ana")
    assert rerun.status == JobStatus.RUNNING
    assert rerun.checkpoint is not None
    assert rerun.checkpoint.next_phase == "extract"
    jobs.run_until_idle()

    done = jobs.get(JOB)
    assert done.status == JobStatus.COMPLETE
    assert done.result == {"words": 200}
    assert [name for name, _ in ran] == ["extract", "summarise"]
    assert ran[0][1] == {"pages": 2, "loaded": True}
    [note] = [entry for entry in done.log if entry.message.startswith("Job rerun from phase")]
    assert '"extract"' in note.message
    assert "by ana" in note.message
    assert "was complete" in note.message
    assert [record.phase for record in done.phases] == ["load", "extract", "summarise", "extract", "summarise"]


def test_a_rerun_with_an_edited_state_continues_with_it(storage: Storage, clock: FakeClock) -> None:
    ran: list[tuple[str, Any]] = []
    jobs = _front_door(_three_steps(ran), storage, clock)
    jobs.start("steps", JOB, state={"pages": 2})
    jobs.run_until_idle()

    jobs.retry(JOB, mode="from", phase="summarise", state={"words": 7})
    jobs.run_until_idle()
    assert jobs.get(JOB).result == {"words": 7}


def test_a_rerun_from_the_first_phase_and_from_a_phase_never_reached(storage: Storage, clock: FakeClock) -> None:
    ran: list[tuple[str, Any]] = []
    jobs = _front_door(_three_steps(ran), storage, clock)
    jobs.start("steps", JOB, state={"pages": 2})
    jobs.run_until_idle(max_steps=1)

    with pytest.raises(InvalidInputError, match='no state kept from entering phase "summarise"'):
        jobs.retry(JOB, mode="from", phase="summarise")
    with pytest.raises(InvalidInputError, match="phase"):
        jobs.retry(JOB, mode="from")
    with pytest.raises(Exception, match="Unknown phase"):
        jobs.retry(JOB, mode="from", phase="nope")
    jobs.retry(JOB, mode="from", phase="load")
    jobs.run_until_idle()
    assert jobs.get(JOB).result == {"words": 200}
    assert ran[0] == ("load", {"pages": 2})
    assert ("load", {"pages": 2}) in ran[1:]


def test_a_rerun_fences_a_worker_still_running_the_phase(storage: Storage, clock: FakeClock) -> None:
    """A rerun racing a running worker: the worker's commit is refused; only the rerun goes on."""
    pipeline: Pipeline[Any] = Pipeline("steps")
    jobs = _front_door(pipeline, storage, clock)
    commits: list[str] = []

    @pipeline.phase
    def load(ctx: PhaseContext[Any]) -> Next:
        return Next("slow", {"round": 1})

    @pipeline.phase
    def slow(ctx: PhaseContext[Any]) -> Done:
        if ctx.state["round"] == 1:
            jobs.retry(JOB, mode="from", phase="slow", state={"round": 2})
            try:
                ctx.save_state({"round": 1, "late": True})
            except ClaimLostError:
                commits.append("fenced")
                raise
        commits.append(f"round {ctx.state['round']}")
        return Done(ctx.state["round"])

    jobs.start("steps", JOB, state={})
    jobs.run_until_idle()

    assert commits == ["fenced", "round 2"]
    assert jobs.get(JOB).result == 2


def test_a_rerun_of_an_unknown_job_is_not_found(storage: Storage, clock: FakeClock) -> None:
    jobs = _front_door(_three_steps([]), storage, clock)
    with pytest.raises(JobNotFoundError):
        jobs.retry("nobody", mode="from", phase="extract")
