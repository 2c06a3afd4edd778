"""The scheduler's dead-letter queue on the in-process stack, and ``redrive``: a crash report the scheduler failed
on for good waits in the queue, a redrive applies it once, and any repeat of it changes nothing.

A report that never arrives at all (dropped) is the sweep's to recover: the job runs on once its claim and
the sweep's idle time are over.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from cairn import Done, Job, JobStatus, Next, PhaseContext, Pipeline, RetryPolicy, run_pipeline
from cairn.client.redrive import FUNCTION_OUTPUT, QUEUE_OUTPUT, Summary, Target, redrive
from cairn.core.history_pages import HistoryPage
from cairn.testing.faults import SimulatedCrash
from cairn.testing.stack import SCHEDULER, SCHEDULER_RETRIES, LocalStack
from tests.functional.stacks import moto_stack
from tests.support import FakeClock, job_of
from tests.template.cfn import sam_template

OWNER = "alice"
JOB = "job-1"
SWEEP = {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}


def fragile_pipeline(runs: list[int]) -> Pipeline[Any]:
    """``work``'s worker dies on its first run (holding its claim); the next run goes on to ``finish``.

    ``runs`` holds the attempt number of each run of ``work``."""
    pipeline: Pipeline[Any] = Pipeline("fragile")

    @pipeline.phase(retry=RetryPolicy(max_attempts=3, backoff=0.0, jitter=False))
    def work(ctx: PhaseContext[Any]) -> Next:
        runs.append(ctx.attempt)
        if len(runs) == 1:
            raise SimulatedCrash("the worker ran out of memory")
        return Next("finish", {"worked": ctx.attempt})

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    return pipeline


class SchedulerOutage:
    """The scheduler fails on crash reports (the events with ``key``): on the first ``times`` (None: every one)."""

    def __init__(self, stack: LocalStack, times: int | None, *, key: str = "requestPayload") -> None:
        self.times = times
        self.key = key
        self.failed = 0
        spec = stack.invoker.functions[SCHEDULER]
        self.handler = spec.handler
        spec.handler = self

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        if self.key in event and (self.times is None or self.failed < self.times):
            self.failed += 1
            raise ConnectionError(f"DynamoDB unreachable (outage {self.failed})")
        return self.handler(event, context)


@dataclass
class Fragile:
    """A stack with the fragile pipeline, its runs, and the scheduler's outage."""

    stack: LocalStack
    pipeline: Pipeline[Any]
    runs: list[int]
    clock: FakeClock

    def start(self) -> None:
        run_pipeline(
            JOB,
            self.pipeline,
            storage=self.stack.runtime.storage(OWNER),
            scheduler=self.stack.runtime.start_scheduler(OWNER, self.pipeline),
            initial_state={},
        )

    def job(self) -> Job:
        return job_of(self.stack.runtime.storage(OWNER), JOB)

    def snapshot(self) -> tuple[Job, HistoryPage | None]:
        """The job and its whole history, as stored."""
        storage = self.stack.runtime.storage(OWNER)
        return job_of(storage, JOB), storage.history_page(JOB, limit=100)

    @property
    def target(self) -> Target:
        assert self.stack.scheduler_dlq_url is not None
        return Target(self.stack.scheduler_dlq_url, SCHEDULER)

    def redrive(self) -> Summary:
        """What ``cairn ops redrive`` does, with the stack's SQS and its local Lambda."""
        assert self.stack.runtime.sqs is not None
        return redrive(self.stack.runtime.sqs, self.stack.invoker, self.target, wait_seconds=0)

    def dead_letters(self) -> list[str]:
        """The bodies in the scheduler's dead-letter queue (read and made visible again)."""
        sqs = self.stack.runtime.sqs
        assert sqs is not None
        messages = sqs.receive_message(QueueUrl=self.target.queue_url, MaxNumberOfMessages=10).get("Messages", [])
        for message in messages:
            sqs.change_message_visibility(
                QueueUrl=self.target.queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
        return [message["Body"] for message in messages]


@pytest.fixture
def fragile(stack_clock: FakeClock) -> Iterator[Fragile]:
    runs: list[int] = []
    pipeline = fragile_pipeline(runs)
    with moto_stack(stack_clock, pipeline) as stack:
        yield Fragile(stack, pipeline, runs, stack_clock)


def test_a_crash_report_the_scheduler_fails_on_three_times_waits_in_its_dead_letter_queue(fragile: Fragile) -> None:
    outage = SchedulerOutage(fragile.stack, times=SCHEDULER_RETRIES + 1)
    fragile.start()
    fragile.stack.run_until_idle()

    assert outage.failed == 3  # the first delivery and Lambda's two retries
    crash, lost = fragile.stack.invoker.failures
    assert crash["requestPayload"]["phase"] == "work"
    assert lost["requestPayload"] == crash  # the scheduler's failure is about the crash report
    [body] = fragile.dead_letters()
    record = json.loads(body)
    assert record == json.loads(json.dumps(lost))
    assert set(record) == {
        "version",
        "timestamp",
        "requestContext",
        "requestPayload",
        "responseContext",
        "responsePayload",
    }
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 3
    assert record["requestContext"]["functionArn"].endswith(f":function:{SCHEDULER}:$LATEST")
    assert record["responsePayload"]["errorType"] == "ConnectionError"
    stuck = fragile.job()
    assert (stuck.status, stuck.attempt, fragile.runs) == (JobStatus.RUNNING, 1, [1])
    assert stuck.lease_owner is not None  # the dead worker's claim: nobody recorded the crash


def test_a_redrive_applies_the_report_once_and_every_repeat_of_it_changes_nothing(fragile: Fragile) -> None:
    SchedulerOutage(fragile.stack, times=SCHEDULER_RETRIES + 1)
    fragile.start()
    fragile.stack.run_until_idle()
    [body] = fragile.dead_letters()

    first = fragile.redrive()

    assert (first.count("redriven"), first.count("failed"), first.count("malformed"), first.left) == (1, 0, 0, 0)
    assert first.line() == "redriven 1, failed 0, malformed 0; the queue is empty"
    [handled] = first.handled
    assert (handled.letter.kind, handled.letter.job_id, handled.letter.phase) == ("crash report", JOB, "work")
    assert handled.detail == "status running"  # the crash is recorded; the retry is on its way
    recorded = fragile.job()
    assert (recorded.status, recorded.attempt, recorded.lease_owner) == (JobStatus.RUNNING, 2, None)

    # The same record again before the retry ran: the claim it names is gone, so it is stale.
    before = fragile.snapshot()
    sqs = fragile.stack.runtime.sqs
    assert sqs is not None
    sqs.send_message(QueueUrl=fragile.target.queue_url, MessageBody=body)
    early_replay = fragile.redrive()
    assert [item.detail for item in early_replay.handled] == ["status stale"]
    assert fragile.snapshot() == before

    fragile.stack.run_until_idle()
    done = fragile.job()
    assert done.status == JobStatus.COMPLETE, done.error
    assert done.result == {"worked": 2}
    assert fragile.runs == [1, 2]  # one crash counted, one retry run

    # Nothing left: a second redrive finds nothing and changes nothing.
    after = fragile.snapshot()
    second = fragile.redrive()
    assert (second.handled, second.left) == ([], 0)
    assert second.line() == "redriven 0, failed 0, malformed 0; the queue is empty"
    assert fragile.snapshot() == after

    # The saved record replayed once more, long after: the scheduler takes it, and nothing moves.
    sqs.send_message(QueueUrl=fragile.target.queue_url, MessageBody=body)
    replay = fragile.redrive()
    assert [item.outcome for item in replay.handled] == ["redriven"]
    assert [item.detail for item in replay.handled] == ["status stale"]
    fragile.stack.run_until_idle()
    job, history = fragile.snapshot()
    assert (job.sequence, job.status) == (after[0].sequence, after[0].status)
    assert (job, history) == after
    assert fragile.runs == [1, 2]


def test_a_report_the_scheduler_still_fails_on_stays_in_the_queue_and_is_reported(fragile: Fragile) -> None:
    outage = SchedulerOutage(fragile.stack, times=None)
    fragile.start()
    fragile.stack.run_until_idle()
    before = fragile.snapshot()

    summary = fragile.redrive()

    [handled] = summary.handled
    assert handled.outcome == "failed"
    assert "ConnectionError: DynamoDB unreachable (outage 4)" in handled.detail
    assert (summary.left, summary.exit_status) == (1, 1)
    assert summary.line() == "redriven 0, failed 1, malformed 0; 1 message left in the queue"
    assert len(fragile.dead_letters()) == 1  # visible again, for the next redrive
    assert fragile.snapshot() == before

    outage.times = outage.failed  # the outage is over
    assert fragile.redrive().count("redriven") == 1
    fragile.stack.run_until_idle()
    assert fragile.job().status == JobStatus.COMPLETE
    assert fragile.runs == [1, 2]


def test_a_crash_report_that_never_arrives_is_recovered_by_the_sweep(fragile: Fragile) -> None:
    """The report is lost for good (the scheduler failed on it and its dead letter was dropped): the sweep
    finds the job once the dead worker's claim and the idle time are over, and the job runs on."""
    SchedulerOutage(fragile.stack, times=None)
    fragile.start()
    fragile.stack.run_until_idle()
    sqs = fragile.stack.runtime.sqs
    assert sqs is not None
    sqs.purge_queue(QueueUrl=fragile.target.queue_url)  # dropped: no redrive will ever bring it back
    stuck = fragile.job()
    assert (stuck.status, stuck.lease_owner is not None, fragile.runs) == (JobStatus.RUNNING, True, [1])

    idle = fragile.stack.runtime.settings.sweep_idle_seconds
    fragile.clock.advance(idle + 1)  # idle long enough, but the dead worker's claim has not expired yet
    assert fragile.stack.call(SCHEDULER, SWEEP) == {"revived": []}

    lease = fragile.pipeline.get_phase("work").lease_seconds
    fragile.clock.advance(max(lease, idle) + 1)
    assert fragile.stack.call(SCHEDULER, SWEEP) == {"revived": [JOB]}
    fragile.stack.run_until_idle()

    done = fragile.job()
    assert done.status == JobStatus.COMPLETE, done.error
    # No report recorded the death, so the run the sweep's advance started is attempt 1 again.
    assert fragile.runs == [1, 1]
    assert done.result == {"worked": 1}


def test_the_local_stack_wires_the_scheduler_as_the_template_does() -> None:
    template = sam_template()
    scheduler = template["Resources"]["SchedulerFunction"]["Properties"]
    invoke = scheduler["EventInvokeConfig"]
    assert invoke["MaximumRetryAttempts"] == SCHEDULER_RETRIES
    assert invoke["DestinationConfig"]["OnFailure"] == {
        "Type": "SQS",
        "Destination": {"Fn::GetAtt": ["SchedulerDeadLetterQueue", "Arn"]},
    }
    outputs = template["Outputs"]
    assert outputs[QUEUE_OUTPUT]["Value"] == {"Ref": "SchedulerDeadLetterQueue"}
    assert outputs[FUNCTION_OUTPUT]["Value"] == {"Ref": "SchedulerFunction"}


def test_a_sweep_the_scheduler_failed_on_revives_once_however_often_it_is_redriven(stack_clock: FakeClock) -> None:
    ran: list[int] = []
    pipeline: Pipeline[Any] = Pipeline("once")

    @pipeline.phase
    def only(ctx: PhaseContext[Any]) -> Done:
        ran.append(ctx.attempt)
        return Done({"ran": len(ran)})

    with moto_stack(stack_clock, pipeline) as stack:
        fragile = Fragile(stack, pipeline, ran, stack_clock)
        SchedulerOutage(stack, times=SCHEDULER_RETRIES + 1, key="detail-type")
        fragile.start()
        stack.invoker.queue.clear()  # the first invoke is lost: the job stalls
        stack_clock.advance(stack.runtime.settings.sweep_idle_seconds + 1)
        stack.invoker.invoke(FunctionName=SCHEDULER, InvocationType="Event", Payload=json.dumps(SWEEP))
        stack.run_until_idle()  # EventBridge's async invoke of the sweep fails three times
        [body] = fragile.dead_letters()
        assert json.loads(body)["requestPayload"] == SWEEP

        assert [item.detail for item in fragile.redrive().handled] == ["revived 1"]
        assert stack.runtime.sqs is not None
        stack.runtime.sqs.send_message(QueueUrl=fragile.target.queue_url, MessageBody=body)
        assert [item.detail for item in fragile.redrive().handled] == ["revived 1"]  # not run yet: still stalled
        assert stack.invoker.pending() == 2  # two advances of the job at the same sequence

        stack.run_until_idle()
        done = fragile.job()
        assert done.status == JobStatus.COMPLETE
        assert ran == [1]  # the second advance found the job moved past its sequence
        after = fragile.snapshot()
        stack.runtime.sqs.send_message(QueueUrl=fragile.target.queue_url, MessageBody=body)
        assert [item.detail for item in fragile.redrive().handled] == ["revived 0"]
        stack.run_until_idle()
        assert fragile.snapshot() == after
