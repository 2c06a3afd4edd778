"""The four ways the old transition protocol broke, each through the path a user's job takes.

1. A write that lands but whose response is lost (DynamoDB, botocore with no retries left).
2. A resume racing a worker's commit (in tests/contract/test_resume_races.py, on every store).
3. Stale and duplicate events: a self-looping phase, and a failed phase's retry backoff.
4. Duplicate crash reports, and a report about a worker that no longer holds the claim.

3 and 4 run on the local stack: phase functions, the scheduler and its queue on moto, as deployed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto import mock_aws

from cairn import Done, JobStatus, Next, PhaseContext, Pipeline, RetryPolicy, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.core.registry import PipelineRegistry
from cairn.testing.faults import LosingResponses, SimulatedCrash
from cairn.testing.invoker import Invocation, LocalContext
from cairn.testing.serialised import one_call_at_a_time
from cairn.testing.stack import LocalStack
from tests.aws import REGION, dynamodb_client, new_table, s3_client, sqs_client
from tests.support import FakeClock, counters, job_of, make_scheduler

OWNER = "alice"


# --- 1. a write whose response is lost ---------------------------------------------------------


def paging_pipeline(effects: list[str]) -> Pipeline[Any]:
    """``pages`` works page by page with a checkpoint after each; ``finish`` completes."""
    pipeline: Pipeline[Any] = Pipeline("paging")

    @pipeline.phase
    def pages(ctx: PhaseContext[Any]) -> Next:
        state = dict(ctx.state)
        while state["done"] < 4:
            effects.append(f"page {state['done'] + 1}")
            ctx.add_usage(pages=1)
            state = {**state, "done": state["done"] + 1}
            ctx.save_state(state)
        return Next("finish", state)

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        effects.append("finish")
        return Done({"pages": ctx.state["done"]})

    return pipeline


@pytest.fixture
def no_retry_dynamodb() -> Iterator[Any]:
    """A DynamoDB client on moto whose botocore makes one attempt per call (max_attempts=1)."""
    with mock_aws():
        client = boto3.client(
            "dynamodb", region_name=REGION, config=Config(retries={"mode": "standard", "max_attempts": 1})
        )
        yield client


@dataclass
class PagingRun:
    """A paging job run to the end on DynamoDB whose client loses the responses ``lose`` picks."""

    client: LosingResponses
    storage: DynamoDBStorage
    pipeline: Pipeline[Any]
    effects: list[str]

    @classmethod
    def run(cls, dynamodb: Any, clock: FakeClock, lose: Callable[[str, int], bool]) -> PagingRun:
        client = LosingResponses(dynamodb, lose)
        storage = DynamoDBStorage(new_table(dynamodb), client=cast(Any, client), clock=clock)
        effects: list[str] = []
        run = cls(client, storage, paging_pipeline(effects), effects)
        run.start(initial_state={"done": 0})
        return run

    def start(self, **options: Any) -> None:
        """Start (or resume) the job and drain its advances."""
        scheduler = make_scheduler(self.pipeline, self.storage, FakeClock())
        run_pipeline("job-1", self.pipeline, storage=self.storage, scheduler=scheduler, **options)
        scheduler.drain()


@pytest.mark.parametrize(
    ("lost_call", "what"),
    [
        (("UpdateItem", 3), "the second save"),
        (("UpdateItem", 6), "the phase's commit"),
        (("UpdateItem", 1), "the claim"),
        (("PutItem", 0), "the start"),
    ],
)
def test_a_write_that_lands_but_loses_its_response_is_resolved_not_redone(
    no_retry_dynamodb: Any, clock: FakeClock, lost_call: tuple[str, int], what: str
) -> None:
    operation, nth = lost_call
    seen: Counter[str] = Counter()

    def lose(name: str, _: int) -> bool:
        method = {"update_item": "UpdateItem", "put_item": "PutItem"}.get(name)
        if method is None:
            return False
        seen[method] += 1
        return method == operation and seen[method] == nth + 1

    run = PagingRun.run(no_retry_dynamodb, clock, lose)

    assert run.client.lost == [operation.lower().replace("item", "_item")], f"no response of {what} was lost"
    job = job_of(run.storage, "job-1")
    assert job.status == JobStatus.COMPLETE, job.error
    assert job.result == {"pages": 4}
    assert run.effects == ["page 1", "page 2", "page 3", "page 4", "finish"], "checkpointed work was redone"
    assert counters(job.usage) == {"pages": 4, "transitions": 2}  # pages' next and finish's done, once each
    assert [(record.phase, record.outcome) for record in job.phases] == [("pages", "next"), ("finish", "done")]


def test_an_error_commit_never_writes_back_the_checkpoint_the_worker_last_saw(
    no_retry_dynamodb: Any, clock: FakeClock
) -> None:
    """A save lands, its response is lost and DynamoDB stays unreachable: the phase fails, the save stays."""
    saves = Counter[str]()

    def lose(name: str, _: int) -> bool:
        if name != "update_item":
            return False
        saves["update"] += 1
        return 3 <= saves["update"] <= 7  # the 2nd save lands; it and its 4 resends answer with a timeout

    run = PagingRun.run(no_retry_dynamodb, clock, lose)

    job = job_of(run.storage, "job-1")
    assert job.status == JobStatus.ERROR
    assert job.checkpoint is not None
    assert job.checkpoint.state == {"done": 2}, "the landed save was erased by the error commit"
    run.effects.clear()
    run.start()
    assert run.effects == ["page 3", "page 4", "finish"]
    assert counters(job_of(run.storage, "job-1").usage) == {"pages": 4, "transitions": 2}  # the error counts none


# --- 3 and 4: on the local stack ---------------------------------------------------------------


def looping_pipeline(ticks: list[int], *, crash_on: set[int] | None = None, attempts: int = 1) -> Pipeline[Any]:
    """``tick`` runs three times (a phase that loops to itself), then ``tock`` completes."""
    pipeline: Pipeline[Any] = Pipeline("looping")

    @pipeline.phase(retry=RetryPolicy(max_attempts=attempts, backoff=1.0, jitter=False))
    def tick(ctx: PhaseContext[Any]) -> Next:
        count = ctx.state["count"] + 1
        if crash_on and count in crash_on:
            crash_on.discard(count)
            raise SimulatedCrash(f"worker died during tick {count}")
        ticks.append(count)
        ctx.add_usage(ticks=1)
        return Next("tick" if count < 3 else "tock", {"count": count})

    @pipeline.phase
    def tock(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    return pipeline


def flaky_pipeline(runs: list[int]) -> Pipeline[Any]:
    """``wobble`` fails on its first attempt and is retried after a one-second backoff."""
    pipeline: Pipeline[Any] = Pipeline("flaky")

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=1.0, jitter=False))
    def wobble(ctx: PhaseContext[Any]) -> Done:
        runs.append(ctx.attempt)
        if ctx.attempt == 1:
            raise ConnectionError("upstream reset the connection")
        return Done({"attempt": ctx.attempt})

    return pipeline


def local_stack(pipeline: Pipeline[Any], clock: FakeClock) -> LocalStack:
    return LocalStack.create(
        PipelineRegistry([pipeline]),
        dynamodb=dynamodb_client(),
        s3=s3_client(),
        sqs=sqs_client(),
        clock=clock,
    )


def start(stack: LocalStack, pipeline: Pipeline[Any], state: Any) -> None:
    run_pipeline(
        "job-1",
        pipeline,
        storage=stack.runtime.storage(OWNER),
        scheduler=stack.runtime.start_scheduler(OWNER, pipeline),
        initial_state=state,
    )


def tick_function(stack: LocalStack, pipeline: Pipeline[Any]) -> str:
    """The function that runs ``pipeline``'s phase ``tick`` on ``stack``."""
    return stack.runtime.settings.phase_function(pipeline.name, "tick")


def deliver(stack: LocalStack, invocation: Invocation) -> Any:
    """Run a copy of an earlier async invocation again, as a duplicate or late delivery."""
    return stack.invoker.run(Invocation(invocation.function, dict(invocation.payload)))


def test_a_duplicate_or_late_event_of_a_self_looping_phase_starts_no_second_chain(stack_clock: FakeClock) -> None:
    ticks: list[int] = []
    pipeline = looping_pipeline(ticks)
    with mock_aws():
        stack = local_stack(pipeline, stack_clock)
        start(stack, pipeline, {"count": 0})
        [first] = list(stack.invoker.queue)
        stack.invoker.drain(max_steps=1)  # tick 1 commits "tick" again and invokes it
        assert [invocation.function for invocation in stack.invoker.queue] == [tick_function(stack, pipeline)]

        duplicate = deliver(stack, first)  # the same event, delivered twice

        assert duplicate["status"] == "skipped"
        assert stack.invoker.pending() == 1, "a duplicate started a second invocation chain"
        stack.run_until_idle()
        late = deliver(stack, first)  # and once more, long after the job finished
        assert late["status"] == "skipped"

        job = job_of(stack.runtime.storage(OWNER), "job-1")
        assert job.status == JobStatus.COMPLETE
        assert ticks == [1, 2, 3]
        assert counters(job.usage) == {"ticks": 3, "transitions": 4}  # three ticks' next and tock's done
        assert [record.phase for record in job.phases] == ["tick", "tick", "tick", "tock"]


def test_a_duplicate_event_of_a_failed_phase_does_not_skip_its_retry_backoff(stack_clock: FakeClock) -> None:
    runs: list[int] = []
    pipeline = flaky_pipeline(runs)
    with mock_aws():
        stack = local_stack(pipeline, stack_clock)
        start(stack, pipeline, {})
        [first] = list(stack.invoker.queue)
        stack.invoker.drain()
        assert runs == [1]
        assert stack.delayed_waiting() == 1  # the retry waits on the delay queue

        duplicate = deliver(stack, first)

        assert duplicate["status"] == "skipped"
        assert runs == [1], "the duplicate ran the retry before its backoff"
        stack.run_until_idle(timeout=30)
        assert runs == [1, 2]
        assert job_of(stack.runtime.storage(OWNER), "job-1").result == {"attempt": 2}


def test_a_crash_report_delivered_twice_counts_one_crash(stack_clock: FakeClock) -> None:
    ticks: list[int] = []
    pipeline = looping_pipeline(ticks, crash_on={2}, attempts=2)
    with mock_aws():
        stack = local_stack(pipeline, stack_clock)
        start(stack, pipeline, {"count": 0})
        stack.invoker.drain()  # tick 1 commits; tick 2 dies; its on-failure record reaches the scheduler
        [record] = stack.invoker.failures
        assert stack.delayed_waiting() == 1  # the crash was counted and the retry queued
        storage = stack.runtime.storage(OWNER)
        after_first = job_of(storage, "job-1")
        assert after_first.attempt == 2

        again = stack.call("cairn-scheduler", record)  # Lambda delivers the same record again

        assert again == {"status": "stale", "jobId": "job-1"}
        assert job_of(storage, "job-1").attempt == 2
        assert job_of(storage, "job-1").sequence == after_first.sequence
        stack.run_until_idle(timeout=30)
        job = job_of(storage, "job-1")
        assert job.status == JobStatus.COMPLETE, job.error
        assert ticks == [1, 2, 3]


def test_a_report_about_a_worker_that_committed_is_stale_and_the_sweep_revives_the_job(
    stack_clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks: list[int] = []
    pipeline = looping_pipeline(ticks)
    with mock_aws():
        stack = local_stack(pipeline, stack_clock)
        invoke = stack.invoker.invoke
        throttled: list[str] = []

        def throttle_second_tick(**kwargs: Any) -> Any:
            if kwargs["FunctionName"] == tick_function(stack, pipeline) and len(ticks) == 1 and not throttled:
                throttled.append(kwargs["FunctionName"])
                raise ClientError({"Error": {"Code": "TooManyRequestsException", "Message": "Rate exceeded"}}, "Invoke")
            return invoke(**kwargs)

        monkeypatch.setattr(stack.invoker, "invoke", throttle_second_tick)
        start(stack, pipeline, {"count": 0})
        stack.invoker.drain()  # tick 1 commits, its invoke of tick 2 is throttled: the function fails after committing

        assert throttled == [tick_function(stack, pipeline)]
        [report] = stack.invoker.failures
        assert report["requestPayload"]["phase"] == "tick"
        storage = stack.runtime.storage(OWNER)
        job = job_of(storage, "job-1")
        assert job.status == JobStatus.RUNNING, "a report about a worker that committed was taken as a crash"
        assert job.attempt == 1
        assert job.lease_owner is None

        stack_clock.advance(stack.runtime.settings.sweep_idle_seconds + 1)
        swept = stack.call("cairn-scheduler", {"detail-type": "Scheduled Event", "source": "aws.events"})
        assert swept == {"revived": ["job-1"]}
        stack.run_until_idle()
        done = job_of(storage, "job-1")
        assert done.status == JobStatus.COMPLETE
        assert ticks == [1, 2, 3]
        assert counters(done.usage) == {"ticks": 3, "transitions": 4}


def test_a_report_for_a_live_workers_claim_named_by_another_request_is_stale(stack_clock: FakeClock) -> None:
    ticks: list[int] = []
    pipeline = looping_pipeline(ticks)
    with mock_aws():
        stack = local_stack(pipeline, stack_clock)
        start(stack, pipeline, {"count": 0})
        [first] = list(stack.invoker.queue)
        storage = stack.runtime.storage(OWNER)
        before = job_of(storage, "job-1")
        forged = {
            "requestContext": {"requestId": "someone-else", "condition": "RetriesExhausted"},
            "requestPayload": {**first.payload, "sequence": before.sequence + 5},
            "responsePayload": {"errorMessage": "Task timed out"},
        }

        response = stack.scheduler(forged, LocalContext("cairn-scheduler"))

        assert response == {"status": "stale", "jobId": "job-1"}
        assert job_of(storage, "job-1").sequence == before.sequence
        stack.run_until_idle()
        assert job_of(storage, "job-1").status == JobStatus.COMPLETE


def test_a_serialised_client_is_still_the_one_losing_responses() -> None:
    """The proxies compose: serialised calls still reach moto and still lose their responses."""
    with mock_aws():
        client = dynamodb_client()
        table = new_table(client)
        losing = LosingResponses(client, lambda name, _: name == "put_item")
        serialised = one_call_at_a_time(losing)
        with pytest.raises(Exception, match="Read timeout"):
            serialised.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"S": "b"}})
        assert "Item" in client.get_item(TableName=table, Key={"pk": {"S": "a"}, "sk": {"S": "b"}})
