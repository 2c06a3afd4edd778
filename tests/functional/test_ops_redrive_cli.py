"""``cairn ops redrive`` through the command line, against moto: SQS and CloudFormation on moto, the scheduler
on the in-process stack (moto's Lambda would need Docker), the same function the command calls."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from cairn import JobStatus, Pipeline, run_pipeline
from cairn.cli import main
from cairn.client.stack_access import Clients
from cairn.testing.stack import SCHEDULER, SCHEDULER_RETRIES, LocalStack
from tests.aws import REGION, sqs_client
from tests.functional.stacks import moto_stack
from tests.functional.test_scheduler_dlq import SchedulerOutage, fragile_pipeline
from tests.support import FakeClock, job_of

ROOT = Path(__file__).resolve().parents[2]
OWNER = "alice"
JOB = "job-1"
QUEUE_OUTPUT = "SchedulerDeadLetterQueueUrl"
FUNCTION_OUTPUT = "SchedulerFunctionName"


@dataclass
class Deployed:
    """The in-process stack with one crash report in the scheduler's dead-letter queue."""

    stack: LocalStack
    pipeline: Pipeline[Any]
    runs: list[int]
    capsys: pytest.CaptureFixture[str]

    @property
    def queue_url(self) -> str:
        assert self.stack.scheduler_dlq_url is not None
        return self.stack.scheduler_dlq_url

    def redrive(self, *options: str) -> tuple[int, str, str]:
        """Run ``cairn ops redrive OPTIONS``; its exit status, stdout and stderr (the stack's own output dropped)."""
        self.capsys.readouterr()
        status = main(["ops", "redrive", *options])
        out, err = self.capsys.readouterr()
        return status, _own(out), err

    def by_queue(self, *options: str) -> tuple[int, str, str]:
        return self.redrive("--queue-url", self.queue_url, "--function", SCHEDULER, *options)

    def visible(self) -> int:
        attributes = sqs_client().get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"])

    def send(self, body: str) -> None:
        sqs_client().send_message(QueueUrl=self.queue_url, MessageBody=body)


def _own(out: str) -> str:
    """stdout without the functions' JSON log and metric lines (the stack runs in this process)."""
    return "\n".join(line for line in out.splitlines() if not line.startswith(('{"_aws"', '{"level"')))


@pytest.fixture
def deployed(
    stack_clock: FakeClock, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Deployed]:
    runs: list[int] = []
    pipeline = fragile_pipeline(runs)
    with moto_stack(stack_clock, pipeline) as stack:
        SchedulerOutage(stack, times=SCHEDULER_RETRIES + 1)
        run_pipeline(
            JOB,
            pipeline,
            storage=stack.runtime.storage(OWNER),
            scheduler=stack.runtime.start_scheduler(OWNER, pipeline),
            initial_state={},
        )
        stack.run_until_idle()
        make = Clients.make

        def clients(self: Clients, service: str) -> Any:
            return stack.invoker if service == "lambda" else make(self, service)

        monkeypatch.setattr(Clients, "make", clients)
        yield Deployed(stack, pipeline, runs, capsys)


def test_a_dry_run_lists_each_message_and_leaves_it(deployed: Deployed) -> None:
    before = job_of(deployed.stack.runtime.storage(OWNER), JOB)

    status, out, err = deployed.by_queue("--dry-run")

    assert status == 0
    assert out == "listed 1 (dry run: nothing applied), malformed 0; 1 message left in the queue"
    [line] = err.splitlines()
    assert line.startswith(f"listed: crash report of job {JOB} phase work (message ")
    assert "failed at 20" in line  # when Lambda gave up
    assert line.endswith("ConnectionError: DynamoDB unreachable (outage 3)")  # why
    assert deployed.visible() == 1  # visible again at once: a real run right after finds it
    assert job_of(deployed.stack.runtime.storage(OWNER), JOB) == before


def test_a_run_applies_every_message_and_empties_the_queue(deployed: Deployed) -> None:
    status, out, err = deployed.by_queue()

    assert status == 0
    assert out == "redriven 1, failed 0, malformed 0; the queue is empty"
    assert err.startswith(f"redriven: crash report of job {JOB} phase work")
    assert err.rstrip().endswith("-> status running")
    assert deployed.visible() == 0
    deployed.stack.run_until_idle()
    assert job_of(deployed.stack.runtime.storage(OWNER), JOB).status == JobStatus.COMPLETE
    assert deployed.runs == [1, 2]

    assert deployed.by_queue() == (0, "redriven 0, failed 0, malformed 0; the queue is empty", "")


def test_a_malformed_message_is_reported_and_kept(deployed: Deployed) -> None:
    deployed.send("not json at all")
    deployed.send(json.dumps({"requestContext": {"condition": "RetriesExhausted"}}))

    status, out, err = deployed.by_queue()

    assert status == 1
    assert out == "redriven 1, failed 0, malformed 2; 2 messages left in the queue"
    malformed = sorted(line for line in err.splitlines() if line.startswith("malformed:"))
    assert len(malformed) == 2
    assert any("not JSON" in line for line in malformed)
    assert any("no requestPayload" in line for line in malformed)
    assert all(line.endswith("-> left in the queue") for line in malformed)
    assert deployed.visible() == 2  # never deleted, and visible again for whoever looks next


def test_max_handles_that_many_and_json_summarises(deployed: Deployed) -> None:
    sqs = sqs_client()
    [report] = sqs.receive_message(QueueUrl=deployed.queue_url, VisibilityTimeout=0)["Messages"]  # seen, left visible
    deployed.send(report["Body"])  # a second crash report: whichever SQS gives first, it is one to apply

    status, out, _ = deployed.by_queue("--max", "1", "--json", "--dry-run")

    summary = json.loads(out)
    assert (summary["queueUrl"], summary["function"]) == (deployed.queue_url, SCHEDULER)
    assert summary["dryRun"] is True
    [handled] = summary["messages"]
    assert (handled["outcome"], handled["kind"], handled["jobId"]) == ("listed", "crash report", JOB)
    assert (summary["listed"], summary["malformed"], summary["left"]) == (1, 0, 2)
    assert status == 0  # every message handled was applied (listed, in a dry run)
    assert deployed.visible() == 2

    sqs.purge_queue(QueueUrl=deployed.queue_url)
    deployed.send("not json at all")
    deployed.send("{}")  # two malformed messages: whichever comes first, it is not applied

    status, out, _ = deployed.by_queue("--max", "1", "--json", "--dry-run")

    summary = json.loads(out)
    [handled] = summary["messages"]
    assert handled["outcome"] == "malformed"
    assert (summary["listed"], summary["malformed"], summary["left"]) == (0, 1, 2)
    assert status == 1


def test_the_stack_names_the_queue_and_the_function_through_its_outputs(deployed: Deployed) -> None:
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    cloudformation.create_stack(StackName="cairn-prod", TemplateBody=_template(deployed.queue_url))

    status, out, _ = deployed.redrive("--stack-name", "cairn-prod", "--region", REGION)

    assert (status, out) == (0, "redriven 1, failed 0, malformed 0; the queue is empty")


def test_a_stack_without_the_outputs_is_a_usage_error_naming_them(deployed: Deployed) -> None:
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    cloudformation.create_stack(StackName="cairn-old", TemplateBody=_template(None))

    status, out, err = deployed.redrive("--stack-name", "cairn-old")

    assert (status, out) == (2, "")
    assert "cairn-old" in err
    assert f"no output {QUEUE_OUTPUT} and no output {FUNCTION_OUTPUT}" in err
    assert deployed.visible() == 1

    status, _, err = deployed.redrive("--stack-name", "no-such-stack")
    assert status == 2
    assert "stack 'no-such-stack'" in err
    assert "does not exist" in err


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ((), "--stack-name NAME, or --queue-url URL --function NAME"),
        (("--queue-url", "https://sqs.example/q"), "--queue-url and --function go together"),
        (("--function", "cairn-scheduler"), "--queue-url and --function go together"),
        (("--stack-name", "s", "--function", "f"), "not both"),
    ],
)
def test_missing_or_mixed_options_are_a_usage_error(
    options: tuple[str, ...], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ops", "redrive", *options]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("cairn ops redrive: error: ")
    assert said in err


def test_the_installed_command_reads_aws_endpoint_url(moto_endpoint: str) -> None:
    """The command as a process, boto3 pointed at the moto server by AWS_ENDPOINT_URL alone."""
    sqs = boto3.client("sqs", region_name=REGION, endpoint_url=moto_endpoint)
    url = sqs.create_queue(QueueName="cairn-scheduler-dlq-cli")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="{}")
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": moto_endpoint,
        "PYTHONPATH": str(ROOT / "layers" / "cairn"),
    }
    command = [sys.executable, "-m", "cairn", "ops", "redrive", "--queue-url", url, "--function", "f", "--dry-run"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, check=False)

    assert done.returncode == 1, done.stderr
    assert done.stdout.strip() == "listed 0 (dry run: nothing applied), malformed 1; 1 message left in the queue"
    assert "no requestPayload" in done.stderr


def _template(queue_url: str | None) -> str:
    """A stack with a queue and, given ``queue_url``, the two outputs a redrive reads."""
    outputs = {
        QUEUE_OUTPUT: {"Value": queue_url},
        FUNCTION_OUTPUT: {"Value": SCHEDULER},
    }
    template: dict[str, Any] = {"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}}
    if queue_url is not None:
        template["Outputs"] = outputs
    return json.dumps(template)


def _message_id(err: str) -> str:
    (found,) = re.findall(r"\(message ([^)]+)\)", err)
    return str(found)


def test_a_message_that_will_never_succeed_is_discarded_and_the_scheduler_logs_who_and_why(
    deployed: Deployed, caplog: pytest.LogCaptureFixture
) -> None:
    before = job_of(deployed.stack.runtime.storage(OWNER), JOB)
    message_id = _message_id(deployed.by_queue("--dry-run")[2])
    deployed.capsys.readouterr()

    status = main(["ops", "redrive", "--queue-url", deployed.queue_url, "--function", SCHEDULER,
                   "--discard", message_id, "--reason", "the pipeline was removed"])  # fmt: skip
    out, err = deployed.capsys.readouterr()

    assert status == 0
    assert _own(out) == "redriven 0, failed 0, malformed 0, discarded 1; the queue is empty"
    who = boto3.client("sts", region_name=REGION).get_caller_identity()["Arn"]
    line = err.strip()
    assert line.startswith(f"discarded: crash report of job {JOB} phase work (message {message_id}), failed at ")
    assert line.endswith(f": ConnectionError: DynamoDB unreachable (outage 3) -> by {who}: the pipeline was removed")
    (audit,) = [
        record for record in caplog.records if record.getMessage() == "Discarded a dead-lettered scheduler event"
    ]
    assert audit.levelname == "WARNING"
    entry = audit.__dict__["discard"]  # the structured line the scheduler's log group keeps
    assert (entry["by"], entry["reason"]) == (who, "the pipeline was removed")
    assert (entry["messageId"], entry["jobId"], entry["kind"]) == (message_id, JOB, "crash report")
    assert deployed.visible() == 0
    assert job_of(deployed.stack.runtime.storage(OWNER), JOB) == before  # nothing applied to the job


def test_a_discard_needs_a_reason_and_names_an_id_it_did_not_find(deployed: Deployed) -> None:
    status, _, err = deployed.by_queue("--discard", "some-id")
    assert status == 2
    assert "--discard needs --reason TEXT" in err
    assert deployed.by_queue("--reason", "why")[0] == 2
    assert deployed.by_queue("--discard", "x", "--reason", "y" * 1001)[0] == 2

    status, out, _ = deployed.by_queue("--discard", "not-a-message", "--reason", "gone")

    assert status == 1
    assert out == "redriven 1, failed 0, malformed 0; not found to discard: not-a-message; the queue is empty"
