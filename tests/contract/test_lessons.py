"""Lessons that carry over, on every store: a job's insights are recalled by the next job of its pipeline.

``ctx.insight`` writes to the pipeline's memory with the phase's next write; ``ctx.recall`` reads the
newest lessons back. A full retry leaves them; a retried phase that records the same insight again
keeps one lesson; the memory has its own TTL; one owner never recalls another's (DynamoDB).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from cairn import Cairn, Done, Fail, InlineScheduler, InvalidInputError, Next, PhaseContext, Pipeline
from cairn.adapters import Lesson
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.core.storage_port import Storage
from tests.support import FakeClock


def _front_door(pipeline: Pipeline[Any], storage: Storage, clock: FakeClock) -> Cairn:
    return Cairn(pipeline, storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))


def _learning(recalled: dict[str, list[Lesson]], *, memory_ttl: timedelta = timedelta(days=30)) -> Pipeline[Any]:
    """Each job recalls what earlier jobs learned, then learns one thing of its own (its state's ``lesson``)."""
    pipeline: Pipeline[Any] = Pipeline("learner", memory_ttl=memory_ttl)

    @pipeline.phase
    def study(ctx: PhaseContext[Any]) -> Next | Fail:
        recalled[ctx.job_id] = ctx.recall(limit=5)
        ctx.insight(ctx.state["lesson"])
        if ctx.state.get("fail"):
            return Fail("failed after learning")
        return Next("finish", ctx.state)

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        return Done(None)

    return pipeline


def _texts(lessons: list[Lesson]) -> list[str]:
    return [lesson.text for lesson in lessons]


def test_the_next_job_recalls_what_earlier_jobs_learned_newest_first(storage: Storage, clock: FakeClock) -> None:
    recalled: dict[str, list[Lesson]] = {}
    jobs = _front_door(_learning(recalled), storage, clock)

    for number in range(1, 4):
        jobs.start("learner", f"job-{number}", state={"lesson": f"lesson {number}"})
        jobs.run_until_idle()
        clock.advance(1)

    assert _texts(recalled["job-1"]) == []
    assert _texts(recalled["job-2"]) == ["lesson 1"]
    assert _texts(recalled["job-3"]) == ["lesson 2", "lesson 1"]
    newest = storage.recall("learner", 10)[0]
    assert (newest.job_id, newest.phase, newest.text) == ("job-3", "study", "lesson 3")
    assert newest.recorded_at == clock() - 1000


def test_the_limit_keeps_the_newest(storage: Storage, clock: FakeClock) -> None:
    recalled: dict[str, list[Lesson]] = {}
    jobs = _front_door(_learning(recalled), storage, clock)
    for number in range(1, 8):
        jobs.start("learner", f"job-{number}", state={"lesson": f"lesson {number}"})
        jobs.run_until_idle()
        clock.advance(1)

    assert _texts(recalled["job-7"]) == ["lesson 6", "lesson 5", "lesson 4", "lesson 3", "lesson 2"]
    assert _texts(storage.recall("learner", 2)) == ["lesson 7", "lesson 6"]


def test_a_failed_phase_keeps_its_lesson_and_a_full_retry_does_not_erase_it(storage: Storage, clock: FakeClock) -> None:
    recalled: dict[str, list[Lesson]] = {}
    jobs = _front_door(_learning(recalled), storage, clock)
    jobs.start("learner", "job-1", state={"lesson": "the scan is upside down", "fail": True})
    jobs.run_until_idle()
    assert jobs.get("job-1").status == "error"

    clock.advance(1)
    jobs.retry("job-1", mode="full", state={"lesson": "the scan is upside down"})
    jobs.run_until_idle()

    assert _texts(recalled["job-1"]) == ["the scan is upside down"]  # the full retry recalled its first run's
    assert _texts(storage.recall("learner", 10)) == ["the scan is upside down"]  # one lesson, not two


def test_lessons_outlive_the_job_and_expire_with_their_own_ttl(storage: Storage, clock: FakeClock) -> None:
    recalled: dict[str, list[Lesson]] = {}
    pipeline = _learning(recalled, memory_ttl=timedelta(days=3))
    jobs = _front_door(pipeline, storage, clock)
    jobs.start("learner", "job-1", state={"lesson": "tables span pages"})
    jobs.run_until_idle()

    clock.advance(2 * 86_400)  # the job has expired (24 h TTL); its lesson has not
    assert _texts(storage.recall("learner", 10)) == ["tables span pages"]
    clock.advance(86_400)
    assert storage.recall("learner", 10) == []


def test_pipelines_keep_their_own_memories(storage: Storage, clock: FakeClock) -> None:
    recalled: dict[str, list[Lesson]] = {}
    jobs = _front_door(_learning(recalled), storage, clock)
    jobs.start("learner", "job-1", state={"lesson": "only for learners"})
    jobs.run_until_idle()

    assert storage.recall("other-pipeline", 10) == []


@pytest.mark.parametrize("limit", [0, -1, 101, 2.5, True])
def test_a_limit_out_of_range_is_refused_clearly(storage: Storage, limit: Any) -> None:
    with pytest.raises(InvalidInputError, match="recall"):
        storage.recall("learner", limit)


def test_one_owner_never_recalls_anothers_lessons(storage: Storage, clock: FakeClock) -> None:
    if not isinstance(storage, DynamoDBStorage):
        pytest.skip("memory and file stores hold one owner's jobs; owners exist in the DynamoDB store")
    recalled: dict[str, list[Lesson]] = {}
    pipeline = _learning(recalled)
    alice, bob = storage.for_owner("alice"), storage.for_owner("bob")
    alices = _front_door(pipeline, alice, clock)
    alices.start("learner", "job-1", state={"lesson": "alice's secret"})
    alices.run_until_idle()
    clock.advance(1)
    bobs = _front_door(pipeline, bob, clock)
    bobs.start("learner", "job-2", state={"lesson": "bob's own"})
    bobs.run_until_idle()

    assert _texts(recalled["job-2"]) == []
    assert _texts(bob.recall("learner", 10)) == ["bob's own"]
    assert _texts(alice.recall("learner", 10)) == ["alice's secret"]
