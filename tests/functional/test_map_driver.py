"""Map (fan-out) on the deployed functions: started through the API, items run by the item phase's function.

The direct driver runs on the test kit's API client on moto (as tests/functional/test_waits_drivers.py
does): each item is an async invoke of the item phase's function, a backoff goes through the SQS
delay queue (its delay skipped on the stack's clock), a dead item worker's on-failure record goes to
the scheduler, and the scheduled sweep advances a stalled job again. On the Step Functions driver the
machine's ``Map`` state runs the items, one slot each, and resolves the job again after them.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from cairn import Done, JobStatus, Map, PhaseContext, Pipeline, RetryPolicy
from cairn.testing.faults import SimulatedCrash
from cairn.testing.stack import LocalStack
from tests.events import load_event
from tests.functional.test_waits_drivers import (
    Deploy,
    Deployment,
    on_stepfunctions,
    phase_function,
    queue_deliveries,
    recorded,
    statuses,
)
from tests.support import counters

JOB = "doc-1"
PIPELINE = "pages"
ITEMS = 7
CONCURRENCY = 3
BACKOFF = 30


@dataclass
class Runs:
    """What the phases saw: each item's runs (with its attempt), and each ``merge``'s results."""

    items: Counter[int] = field(default_factory=Counter)
    attempts: list[tuple[int, int]] = field(default_factory=list)
    merges: list[list[Any]] = field(default_factory=list)
    splits: int = 0


def pages(runs: Runs, *, crash: frozenset[int] = frozenset(), fail: frozenset[int] = frozenset()) -> Pipeline[Any]:
    """``split`` maps 7 pages over ``extract_page`` (3 at a time), then ``merge``.

    Item ``i`` adds ``i + 1`` tokens of usage. An item in ``crash`` dies (its worker process) on its first
    run; one in ``fail`` raises on its first run, and is retried after ``BACKOFF`` seconds.
    """
    pipeline: Pipeline[Any] = Pipeline(PIPELINE)

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        runs.splits += 1
        items = [{"page": number, "text": "word " * (number + 1)} for number in range(ITEMS)]
        return Map(items, phase="extract_page", then="merge", state={"title": "Q3"}, max_concurrency=CONCURRENCY)

    @pipeline.phase(retry=RetryPolicy(max_attempts=3, backoff=BACKOFF, jitter=False))
    def extract_page(ctx: PhaseContext[Any]) -> Done:
        assert ctx.item is not None
        assert ctx.state["page"] == ctx.item
        runs.items[ctx.item] += 1
        runs.attempts.append((ctx.item, ctx.attempt))
        ctx.add_usage(tokens=ctx.item + 1)
        if ctx.item in crash and runs.items[ctx.item] == 1:
            raise SimulatedCrash(f"the worker of page {ctx.item} ran out of memory")
        if ctx.item in fail and runs.items[ctx.item] == 1:
            raise ValueError(f"page {ctx.item} is unreadable for now")
        return Done({"page": ctx.item, "words": len(ctx.state["text"].split())})

    @pipeline.phase
    def merge(ctx: PhaseContext[Any]) -> Done:
        assert ctx.results is not None
        runs.merges.append(list(ctx.results))
        return Done({"title": ctx.state["title"], "pages": [result["page"] for result in ctx.results]})

    return pipeline


ALL_PAGES = {"title": "Q3", "pages": list(range(ITEMS))}
RESULTS = [{"page": index, "words": index + 1} for index in range(ITEMS)]
TOKENS = sum(index + 1 for index in range(ITEMS))
TRANSITIONS = 1 + ITEMS + 1  # split's map, each item (however often it runs), merge's done


@dataclass(frozen=True)
class ItemCall:
    """One invocation of the item phase's function: its event, its response, and the items then in flight."""

    event: dict[str, Any]
    response: Any
    in_flight: int


def item_calls(deployment: Deployment) -> list[ItemCall]:
    """Wrap the item phase's function: each invocation, with how many item invocations were queued or running."""
    stack = deployment.stack
    function = item_function(deployment)
    spec = stack.invoker.functions[function]
    calls: list[ItemCall] = []

    def handler(event: dict[str, Any], context: Any) -> Any:
        in_flight = 1 + queued_items(stack, function)
        response = spec.handler(event, context)
        calls.append(ItemCall(event, response, in_flight))
        return response

    stack.invoker.functions[function] = dataclasses.replace(spec, handler=handler)
    return calls


def item_function(deployment: Deployment) -> str:
    return phase_function(deployment, PIPELINE, "extract_page")


def queued_items(stack: LocalStack, function: str) -> int:
    return sum(invocation.function == function for invocation in stack.invoker.queue)


def items_of(calls: list[ItemCall]) -> list[int]:
    return [call.event["item"] for call in calls]


def scheduler_of(deployment: Deployment) -> str:
    scheduler = deployment.stack.runtime.settings.scheduler_function
    assert scheduler is not None
    return scheduler


def sweep(deployment: Deployment) -> list[str]:
    """Send the scheduler the scheduled sweep (the sample EventBridge event); the jobs it revived."""
    return list(deployment.stack.call(scheduler_of(deployment), load_event("scheduler/scheduled-sweep"))["revived"])


# -- 1. a map runs each item once, at most max_concurrency at a time, then merge once ---------------


def test_a_map_started_through_the_api_runs_each_item_once_then_merge_with_the_results_in_order(
    direct: Deploy,
) -> None:
    runs = Runs()
    deployment = direct(pages(runs))
    stack = deployment.stack
    calls = item_calls(deployment)
    merges = recorded(stack, phase_function(deployment, PIPELINE, "merge"))

    deployment.start(PIPELINE, JOB, {})
    stack.invoker.drain(max_steps=1)  # split runs and returns the map

    queued = list(stack.invoker.queue)
    assert [invocation.function for invocation in queued] == [item_function(deployment)] * CONCURRENCY
    assert [invocation.payload["item"] for invocation in queued] == [0, 1, 2]
    fan_out = queued[0].payload["fanOut"]
    assert fan_out
    assert {(invocation.payload["phase"], invocation.payload["fanOut"]) for invocation in queued} == {
        ("extract_page", fan_out)
    }
    view = deployment.view(JOB)
    assert (view["status"], view["nextPhase"]) == ("running", "merge")
    assert [(record["phase"], record["outcome"]) for record in view["phases"]] == [("split", "map")]
    assert counters(view["usage"]) == {"transitions": 1 + ITEMS}  # split's map and its items, counted when it starts

    deployment.settle()

    assert items_of(calls) == list(range(ITEMS))  # one invocation per item
    assert statuses([(call.event, call.response) for call in calls]) == ["running"] * ITEMS
    assert max(call.in_flight for call in calls) == CONCURRENCY
    assert runs.items == Counter(dict.fromkeys(range(ITEMS), 1))
    assert runs.splits == 1
    assert statuses(merges) == ["complete"]
    assert runs.merges == [RESULTS]
    done = deployment.job(JOB)
    assert done.status == JobStatus.COMPLETE
    assert done.result == ALL_PAGES
    assert counters(done.usage) == {"tokens": TOKENS, "transitions": TRANSITIONS}
    assert done.fan_out is None
    assert [record.phase for record in done.phases] == ["split", "merge"]
    assert counters(deployment.view(JOB)["usage"]) == {"tokens": TOKENS, "transitions": TRANSITIONS}
    assert stack.invoker.failures == []


# -- 2. a duplicate item event -----------------------------------------------------------------------


def test_a_duplicate_item_event_is_skipped_while_the_map_runs_and_after_the_job_completed(direct: Deploy) -> None:
    runs = Runs()
    deployment = direct(pages(runs))
    stack = deployment.stack
    calls = item_calls(deployment)
    deployment.start(PIPELINE, JOB, {})
    stack.invoker.drain(max_steps=2)  # split, then item 0
    [first] = calls
    assert first.event["item"] == 0
    assert first.response["status"] == "running"

    again = stack.call(item_function(deployment), dict(first.event))  # Lambda delivers the event twice

    assert again["status"] == "skipped"
    assert runs.items == Counter({0: 1})
    deployment.settle()
    assert deployment.job(JOB).status == JobStatus.COMPLETE

    late = stack.call(item_function(deployment), dict(calls[-1].event))

    assert late["status"] == "skipped"
    assert runs.items == Counter(dict.fromkeys(range(ITEMS), 1))
    assert len(runs.merges) == 1
    done = deployment.job(JOB)
    assert done.status == JobStatus.COMPLETE
    assert done.result == ALL_PAGES
    assert counters(done.usage) == {"tokens": TOKENS, "transitions": TRANSITIONS}


# -- 3. an item whose worker dies ---------------------------------------------------------------------


def test_an_item_whose_worker_dies_runs_again_alone_once_its_lease_ends_through_the_sweep(direct: Deploy) -> None:
    runs = Runs()
    pipeline = pages(runs, crash=frozenset({2}))
    deployment = direct(pipeline)
    stack = deployment.stack
    calls = item_calls(deployment)
    reports = recorded(stack, scheduler_of(deployment))
    deployment.start(PIPELINE, JOB, {})
    stack.invoker.drain(max_steps=1)
    mapped = deployment.view(JOB)

    deployment.settle()  # item 2 dies holding its claim; its slot (item 5) waits with it

    [failure] = stack.invoker.failures
    assert failure["requestPayload"]["item"] == 2
    assert failure["responsePayload"]["errorType"] == "SimulatedCrash"
    [(report, response)] = reports
    assert report["requestPayload"] == failure["requestPayload"]
    assert response["status"] in ("stale", "ignored")  # about an item, not the job's claim
    stalled = deployment.job(JOB)
    assert (stalled.status, stalled.error, stalled.lease_owner) == (JobStatus.RUNNING, None, None)
    assert stalled.sequence == mapped["sequence"]  # the crash report did not touch the job
    assert stalled.checkpoint is not None
    assert stalled.checkpoint.next_phase == "merge"
    assert stalled.fan_out is not None
    assert runs.items == Counter({0: 1, 1: 1, 2: 1, 3: 1, 4: 1, 6: 1})
    assert runs.merges == []

    lease = pipeline.get_phase("extract_page").lease_seconds
    deployment.clock.advance(max(lease, stack.runtime.settings.sweep_idle_seconds) + 1)
    before = len(calls)
    assert sweep(deployment) == [JOB]
    deployment.settle()

    assert sorted(set(items_of(calls[before:]))) == [2, 5]  # only the crashed item and the one it held back
    assert runs.items == Counter({0: 1, 1: 1, 2: 2, 3: 1, 4: 1, 5: 1, 6: 1})
    assert (2, 2) in runs.attempts  # the crash counted as its first attempt
    assert runs.merges == [RESULTS]
    done = deployment.job(JOB)
    assert done.status == JobStatus.COMPLETE
    assert done.result == ALL_PAGES
    assert counters(done.usage) == {
        "tokens": TOKENS,
        "transitions": TRANSITIONS,
    }  # the dead attempt's usage died with it
    assert len(stack.invoker.failures) == 1


def test_an_item_whose_worker_died_finishing_last_runs_merge_without_another_sweep(direct: Deploy) -> None:
    runs = Runs()
    pipeline = pages(runs, crash=frozenset({2}))
    deployment = direct(pipeline)
    stack = deployment.stack
    idle = stack.runtime.settings.sweep_idle_seconds
    lease = pipeline.get_phase("extract_page").lease_seconds
    assert lease > idle + 1
    deployment.start(PIPELINE, JOB, {})
    deployment.settle()

    deployment.clock.advance(idle + 1)  # the sweep comes while the dead item's lease still runs
    assert sweep(deployment) == [JOB]
    deployment.settle()
    assert runs.items[5] == 1  # item 5 took the free slot
    assert runs.items[2] == 1

    deployment.clock.advance(lease + 1)
    assert sweep(deployment) == [JOB]
    deployment.settle()

    assert runs.items[2] == 2
    assert deployment.job(JOB).status == JobStatus.COMPLETE  # fails: running, every item done, merge not scheduled


# -- 4. an item retried through the delay queue -------------------------------------------------------


def test_an_item_that_fails_once_is_retried_through_the_delay_queue_and_the_job_completes(direct: Deploy) -> None:
    runs = Runs()
    deployment = direct(pages(runs, fail=frozenset({1})))
    stack = deployment.stack
    calls = item_calls(deployment)
    hops = queue_deliveries(deployment)
    started = deployment.clock()

    deployment.start(PIPELINE, JOB, {})
    deployment.settle()

    assert len(hops) == 1  # the retry's backoff went through the delay queue
    assert hops[0] >= started + BACKOFF * 1000
    assert items_of(calls) == [0, 1, 2, 3, 5, 6, 1, 4]  # item 1's slot (item 4) waited for its retry
    assert max(call.in_flight for call in calls) <= CONCURRENCY
    assert runs.items == Counter({0: 1, 1: 2, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1})
    assert (1, 2) in runs.attempts
    assert runs.merges == [RESULTS]  # item order, not the order the items finished in
    done = deployment.job(JOB)
    assert done.status == JobStatus.COMPLETE
    assert done.result == ALL_PAGES
    # both attempts of item 1 count in its tokens, once in the transitions
    assert counters(done.usage) == {"tokens": TOKENS + 2, "transitions": TRANSITIONS}
    assert stack.invoker.failures == []


# -- 5. the Step Functions driver --------------------------------------------------------------------


def test_stepfunctions_a_map_runs_its_items_in_the_machines_map_state_then_merge_once(
    stepfunctions: Deploy,
) -> None:
    runs = Runs()
    deployment = stepfunctions(pages(runs, fail=frozenset({1})))
    on_stepfunctions(deployment)

    deployment.start(PIPELINE, JOB, {})
    deployment.settle()

    done = deployment.job(JOB)
    assert done.status == JobStatus.COMPLETE, done.error
    assert done.result == ALL_PAGES
    assert runs.merges == [RESULTS]
    assert runs.items == Counter({index: 2 if index == 1 else 1 for index in range(ITEMS)})
    assert counters(done.usage) == {"tokens": TOKENS + 2, "transitions": TRANSITIONS}  # item 1 ran twice
    assert done.fan_out is None
    [execution] = deployment.executions()
    assert execution["status"] == "SUCCEEDED"
