"""A rerun of a map job from one of its phases, on every store, through the front door.

From ``then``: it runs again with the items' results (their records are kept), without running an item
again. From the item phase, which runs only as the map's items: refused, naming where to rerun from.
From the phase that starts the map: a new map, every item run again.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from cairn import Cairn, Done, InlineScheduler, JobStatus, Map, PhaseContext, Pipeline, RetryPolicy
from cairn.core.errors import InvalidInputError
from cairn.core.storage_port import Storage
from tests.support import FakeClock, counters, log_messages

JOB = "pages-1"
ITEMS = 4
RESULTS = [{"page": index, "words": index + 1} for index in range(ITEMS)]
TOKENS = sum(index + 1 for index in range(ITEMS))


def _pages(runs: Counter[int], merges: list[Any], failing: set[int], failing_once: set[str]) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("pages")

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        pages = [{"page": index, "text": "word " * (index + 1)} for index in range(ITEMS)]
        return Map(pages, phase="extract_page", then="merge", state={"title": ctx.state["title"]}, max_concurrency=2)

    @pipeline.phase
    def extract_page(ctx: PhaseContext[Any]) -> Done:
        runs[ctx.state["page"]] += 1
        ctx.add_usage(tokens=ctx.state["page"] + 1)
        ctx.log(f"read page {ctx.state['page']}")
        if ctx.state["page"] in failing:
            raise ValueError("unreadable scan")
        return Done({"page": ctx.state["page"], "words": len(ctx.state["text"].split())})

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=1.0, jitter=False))
    def merge(ctx: PhaseContext[Any]) -> Done:
        merges.append(ctx.results)
        if ctx.results is None:
            raise ValueError("merge ran without the pages' results")
        if "merge" in failing_once:
            failing_once.discard("merge")
            raise ValueError("the merge service is down")
        return Done({"title": ctx.state["title"], "words": sum(result["words"] for result in ctx.results)})

    return pipeline


class _Run:
    def __init__(self, storage: Storage, clock: FakeClock, failing: set[int] | None = None) -> None:
        self.runs: Counter[int] = Counter()
        self.merges: list[Any] = []
        self.failing = failing if failing is not None else set()
        self.failing_once: set[str] = set()
        scheduler = InlineScheduler(now=clock.monotonic, sleep=clock.sleep)
        pipeline = _pages(self.runs, self.merges, self.failing, self.failing_once)
        self.jobs = Cairn(pipeline, storage=storage, scheduler=scheduler)

    def complete(self) -> None:
        self.jobs.start("pages", JOB, state={"title": "Q3"})
        self.jobs.run_until_idle()
        assert self.jobs.get(JOB).status == JobStatus.COMPLETE


def test_a_rerun_from_then_gets_the_items_results_again(storage: Storage, clock: FakeClock) -> None:
    run = _Run(storage, clock)
    run.complete()
    first = run.jobs.get(JOB)
    assert first.result == {"title": "Q3", "words": 10}

    rerun = run.jobs.retry(JOB, mode="from", phase="merge")
    assert rerun.fan_out is not None  # the map it takes up again
    run.jobs.run_until_idle()

    done = run.jobs.get(JOB)
    assert done.status == JobStatus.COMPLETE, done.error
    assert done.result == first.result
    assert run.merges == [RESULTS, RESULTS]
    assert run.runs == Counter(dict.fromkeys(range(ITEMS), 1))  # no item ran again
    assert done.fan_out is None
    [note] = [message for message in log_messages(done.log) if 'rerun from phase "merge"' in message]
    assert f"the results of its map's {ITEMS} items" in note


def test_a_rerun_from_then_with_an_edited_state_gets_the_results_too(storage: Storage, clock: FakeClock) -> None:
    run = _Run(storage, clock)
    run.complete()

    run.jobs.retry(JOB, mode="from", phase="merge", state={"title": "Q4"})
    run.jobs.run_until_idle()

    done = run.jobs.get(JOB)
    assert done.status == JobStatus.COMPLETE, done.error
    assert done.result == {"title": "Q4", "words": 10}
    assert run.merges == [RESULTS, RESULTS]


def test_a_rerun_from_the_item_phase_is_refused_and_changes_nothing(storage: Storage, clock: FakeClock) -> None:
    run = _Run(storage, clock)
    run.complete()
    before = run.jobs.get(JOB)

    for state in (None, {"page": 0, "text": "word"}):
        with pytest.raises(InvalidInputError) as refused:
            run.jobs.retry(JOB, mode="from", phase="extract_page", state=state)
        message = str(refused.value)
        assert 'Phase "extract_page" runs only as an item of the map started by phase "split"' in message
        assert 'rerun from "split"' in message
        assert '"merge"' in message

    assert run.jobs.get(JOB) == before
    assert run.runs == Counter(dict.fromkeys(range(ITEMS), 1))


def test_a_rerun_from_then_after_an_item_failed_runs_the_unfinished_items_first(
    storage: Storage, clock: FakeClock
) -> None:
    run = _Run(storage, clock, failing={2})
    run.jobs.start("pages", JOB, state={"title": "Q3"})
    run.jobs.run_until_idle()
    assert run.jobs.get(JOB).status == JobStatus.ERROR
    assert run.merges == []

    run.failing.clear()
    run.jobs.retry(JOB, mode="from", phase="merge")
    run.jobs.run_until_idle()

    done = run.jobs.get(JOB)
    assert done.status == JobStatus.COMPLETE, done.error
    assert run.merges == [RESULTS]
    assert run.runs == Counter({0: 1, 1: 1, 2: 2, 3: 1})


def test_a_rerun_from_the_phase_that_starts_the_map_runs_a_new_map(storage: Storage, clock: FakeClock) -> None:
    run = _Run(storage, clock)
    run.complete()
    first_map = storage.get_maps(JOB)

    run.jobs.retry(JOB, mode="from", phase="split")
    run.jobs.run_until_idle()

    done = run.jobs.get(JOB)
    assert done.status == JobStatus.COMPLETE, done.error
    assert run.runs == Counter(dict.fromkeys(range(ITEMS), 2))
    maps = storage.get_maps(JOB)
    assert len(maps) == 2
    assert maps[0] == first_map[0]

    # and a rerun from then now takes up the newer map
    run.jobs.retry(JOB, mode="from", phase="merge")
    assert run.jobs.get(JOB).fan_out == maps[1].fan_out
    run.jobs.run_until_idle()
    assert run.jobs.get(JOB).status == JobStatus.COMPLETE
    assert run.merges == [RESULTS, RESULTS, RESULTS]


def test_the_items_usage_and_log_join_the_jobs_once_through_a_retry_and_a_rerun_of_then(
    storage: Storage, clock: FakeClock
) -> None:
    run = _Run(storage, clock)
    run.failing_once.add("merge")  # then fails once and is retried
    run.complete()
    first = run.jobs.get(JOB)
    assert run.merges == [RESULTS, RESULTS]
    # split's map, each item, merge's done (its retry counts none)
    assert counters(first.usage) == {"tokens": TOKENS, "transitions": 1 + ITEMS + 1}
    pages_logged = [message for message in log_messages(first.log) if message.startswith("read page")]
    assert pages_logged == [f"read page {index}" for index in range(ITEMS)]

    run.jobs.retry(JOB, mode="from", phase="merge")
    run.jobs.run_until_idle()

    done = run.jobs.get(JOB)
    assert done.status == JobStatus.COMPLETE, done.error
    assert run.merges == [RESULTS, RESULTS, RESULTS]
    # the items did not run again; the rerun of merge adds its done
    assert counters(done.usage) == {"tokens": TOKENS, "transitions": 1 + ITEMS + 1 + 1}
    assert [message for message in log_messages(done.log) if message.startswith("read page")] == pages_logged
