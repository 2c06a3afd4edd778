"""Fan-out (``Map``) on every store, through the front door: one run per item under the job, then one phase.

Items are not jobs: each has a small checkpoint (attempt, claim, result) under its job. A crashed item
re-runs alone, a duplicate item event does nothing, ``then`` runs once with the results in order, and
usage sums across items.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from cairn import (
    Cairn,
    Done,
    InlineScheduler,
    JobStatus,
    Map,
    PhaseContext,
    Pipeline,
    RetryPolicy,
)
from cairn.core.storage_port import Storage
from cairn.testing.faults import SimulatedCrash
from tests.support import FakeClock, counters, log_messages

JOB = "doc-1"
PAGES = 5
PAGE_RETRY = RetryPolicy(max_attempts=3, backoff=1.0)


def _pages(
    runs: Counter[int],
    merges: list[Any],
    *,
    crash: frozenset[int] = frozenset(),
    fail: frozenset[int] = frozenset(),
    failing: set[int] | None = None,
    retry: RetryPolicy | None = PAGE_RETRY,
) -> Pipeline[Any]:
    """Split 5 pages, extract each (crashing or failing once where told, failing while in ``failing``), merge."""
    pipeline: Pipeline[Any] = Pipeline("pages")
    crashed: set[int] = set()
    failed: set[int] = set()

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        pages = [{"page": number, "text": f"page {number}"} for number in range(PAGES)]
        return Map(pages, phase="extract_page", then="merge", state={"title": "Q3"}, max_concurrency=2)

    @pipeline.phase(retry=retry)
    def extract_page(ctx: PhaseContext[Any]) -> Done:
        assert ctx.item is not None
        assert ctx.item == ctx.state["page"]
        runs[ctx.item] += 1
        ctx.add_usage(tokens=10)
        ctx.log(f"read page {ctx.item}")
        if ctx.item in crash and ctx.item not in crashed:
            crashed.add(ctx.item)
            raise SimulatedCrash(f"worker died on page {ctx.item}")
        if ctx.item in fail and ctx.item not in failed:
            failed.add(ctx.item)
            raise ValueError(f"page {ctx.item} is unreadable")
        if failing is not None and ctx.item in failing:
            raise ValueError("unreadable scan")
        return Done({"page": ctx.item, "words": len(ctx.state["text"].split())})

    @pipeline.phase
    def merge(ctx: PhaseContext[Any]) -> Done:
        merges.append(ctx.results)
        assert ctx.results is not None
        return Done({"title": ctx.state["title"], "pages": [result["page"] for result in ctx.results]})

    return pipeline


def _front_door(pipeline: Pipeline[Any], storage: Storage, clock: FakeClock) -> Cairn:
    return Cairn(pipeline, storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))


def test_each_item_runs_once_and_then_runs_once_with_the_results_in_order(storage: Storage, clock: FakeClock) -> None:
    runs: Counter[int] = Counter()
    merges: list[Any] = []
    jobs = _front_door(_pages(runs, merges), storage, clock)
    jobs.start("pages", JOB, state={})

    jobs.run_until_idle(max_steps=1)
    mapping = jobs.get(JOB)
    assert mapping.status == JobStatus.RUNNING
    assert mapping.fan_out is not None
    assert mapping.fan_out.count == PAGES
    assert mapping.checkpoint is not None
    assert mapping.checkpoint.next_phase == "merge"
    assert jobs._inline is not None
    assert jobs._inline.pending() == 2  # max_concurrency

    jobs.run_until_idle()
    done = jobs.get(JOB)
    assert done.status == JobStatus.COMPLETE
    assert done.result == {"title": "Q3", "pages": [0, 1, 2, 3, 4]}
    assert runs == Counter(dict.fromkeys(range(PAGES), 1))
    assert len(merges) == 1
    assert [result["page"] for result in merges[0]] == [0, 1, 2, 3, 4]
    # split's map, each item, merge's done
    assert counters(done.usage) == {"tokens": 10 * PAGES, "transitions": 1 + PAGES + 1}
    assert [f"read page {index}" for index in range(PAGES)] == [
        message for message in log_messages(done.log) if message.startswith("read page")
    ]
    assert done.fan_out is None
    assert [record.phase for record in done.phases] == ["split", "merge"]


def test_a_crashed_item_runs_again_alone(storage: Storage, clock: FakeClock) -> None:
    runs: Counter[int] = Counter()
    merges: list[Any] = []
    jobs = _front_door(_pages(runs, merges, crash=frozenset({2})), storage, clock)
    jobs.start("pages", JOB, state={})

    with pytest.raises(SimulatedCrash):
        jobs.run_until_idle()
    jobs.run_until_idle()  # the other items go on; the crashed one holds its claim until its lease ends
    assert jobs.get(JOB).status == JobStatus.RUNNING

    clock.advance(pipeline_lease(jobs) + 1)
    jobs.advance(JOB, phase="merge")  # what the sweep (or a resume) does: the job's next advance
    jobs.run_until_idle()

    done = jobs.get(JOB)
    assert done.status == JobStatus.COMPLETE
    assert done.result == {"title": "Q3", "pages": [0, 1, 2, 3, 4]}
    assert runs == Counter({0: 1, 1: 1, 2: 2, 3: 1, 4: 1})
    assert len(merges) == 1


def pipeline_lease(jobs: Cairn) -> float:
    return jobs.pipeline("pages").get_phase("extract_page").lease_seconds


def test_a_duplicate_item_event_is_a_no_op(storage: Storage, clock: FakeClock) -> None:
    runs: Counter[int] = Counter()
    merges: list[Any] = []
    jobs = _front_door(_pages(runs, merges), storage, clock)
    jobs.start("pages", JOB, state={})
    jobs.run_until_idle(max_steps=2)  # the map, then item 0
    fan_out = jobs.get(JOB).fan_out
    assert fan_out is not None

    assert jobs.advance(JOB, phase="extract_page", fan_out=fan_out.id, item=0) is None
    jobs.run_until_idle()
    assert jobs.advance(JOB, phase="extract_page", fan_out=fan_out.id, item=3) is None
    assert jobs.advance(JOB, phase="merge") is None  # then ran already

    assert runs == Counter(dict.fromkeys(range(PAGES), 1))
    assert len(merges) == 1


def test_an_item_retried_per_its_policy_and_usage_counts_every_attempt(storage: Storage, clock: FakeClock) -> None:
    runs: Counter[int] = Counter()
    merges: list[Any] = []
    jobs = _front_door(_pages(runs, merges, fail=frozenset({1})), storage, clock)
    jobs.start("pages", JOB, state={})
    jobs.run_until_idle()

    done = jobs.get(JOB)
    assert done.status == JobStatus.COMPLETE
    assert runs[1] == 2
    assert counters(done.usage) == {
        "tokens": 10 * (PAGES + 1),
        "transitions": 1 + PAGES + 1,
    }  # an item's retry counts none


def test_an_item_that_fails_for_good_fails_the_job_and_a_resume_reruns_only_it(
    storage: Storage, clock: FakeClock
) -> None:
    runs: Counter[int] = Counter()
    merges: list[Any] = []
    failing = {3}
    pipeline = _pages(runs, merges, failing=failing, retry=None)

    jobs = _front_door(pipeline, storage, clock)
    jobs.start("pages", JOB, state={})
    jobs.run_until_idle()

    failed = jobs.get(JOB)
    assert failed.status == JobStatus.ERROR
    assert failed.error is not None
    assert "Map item 3 of 5" in failed.error
    assert "unreadable scan" in failed.error
    assert merges == []

    failing.clear()
    jobs.retry(JOB)
    jobs.run_until_idle()
    done = jobs.get(JOB)
    assert done.status == JobStatus.COMPLETE
    assert runs == Counter({0: 1, 1: 1, 2: 1, 3: 2, 4: 1})


def test_a_paused_map_runs_no_more_items_until_resumed(storage: Storage, clock: FakeClock) -> None:
    runs: Counter[int] = Counter()
    merges: list[Any] = []
    jobs = _front_door(_pages(runs, merges), storage, clock)
    jobs.start("pages", JOB, state={})
    jobs.run_until_idle(max_steps=2)

    jobs.pause(JOB)
    jobs.run_until_idle()
    assert sum(runs.values()) == 1
    assert jobs.get(JOB).status == JobStatus.PAUSED

    jobs.retry(JOB)
    jobs.run_until_idle()
    assert jobs.get(JOB).status == JobStatus.COMPLETE
    assert runs == Counter(dict.fromkeys(range(PAGES), 1))


@pytest.mark.parametrize(
    ("outcome", "message"),
    [
        (Map([], phase="extract_page", then="merge"), "empty"),
        (Map([1], phase="nope", then="merge"), 'phase="nope"'),
        (Map([1], phase="extract_page", then="nope"), 'then="nope"'),
        (Map([1], phase="extract_page", then="merge", max_concurrency=0), "max_concurrency"),
        (Map("abc", phase="extract_page", then="merge"), "must be a list"),
    ],
)
def test_a_map_that_cannot_run_is_a_clear_error(storage: Storage, clock: FakeClock, outcome: Map, message: str) -> None:
    pipeline: Pipeline[Any] = Pipeline("pages")

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        return outcome

    @pipeline.phase
    def extract_page(ctx: PhaseContext[Any]) -> Done:
        return Done(None)

    @pipeline.phase
    def merge(ctx: PhaseContext[Any]) -> Done:
        return Done(None)

    jobs = _front_door(pipeline, storage, clock)
    jobs.start("pages", JOB, state={})
    jobs.run_until_idle()
    failed = jobs.get(JOB)
    assert failed.status == JobStatus.ERROR
    assert failed.error is not None
    assert message in failed.error
