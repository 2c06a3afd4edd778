"""The deployed bundle, in-process: phase functions and the scheduler on moto, wired as the SAM template wires them.

``LocalStack`` registers one function per phase (``<prefix><phase>``, async
retries off, failures to the scheduler) and the scheduler function with a
:class:`LocalLambda`, and gives them a :class:`Runtime` whose AWS clients talk
to moto. ``run_until_idle`` plays Lambda's async queue and the SQS delay
queue's event source mapping until nothing is left to run.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..aws.dynamodb_schema import create_table
from ..aws.phase_handler import phase_handler
from ..aws.runtime import Runtime
from ..aws.scheduler_handler import scheduler_handler
from ..clock import Clock, system_clock_ms
from ..errors import CairnError
from ..registry import PipelineRegistry
from ..settings import DriverName, Settings
from .invoker import LambdaHandler, LocalContext, LocalLambda
from .serialised import one_call_at_a_time

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient

PREFIX = "cairn-"
SCHEDULER = f"{PREFIX}scheduler"


class LocalStack:
    """Phase functions, the scheduler and their AWS resources, on moto and a local Lambda."""

    def __init__(self, pipelines: PipelineRegistry, runtime: Runtime, invoker: LocalLambda) -> None:
        self.pipelines = pipelines
        self.runtime = runtime
        self.invoker = invoker
        scheduler = runtime.settings.scheduler_function or SCHEDULER
        for pipeline in pipelines:
            for phase in pipeline.phase_names:
                handler = phase_handler(pipeline, phase, runtime=runtime)
                invoker.register(runtime.settings.phase_function(phase), handler, on_failure=scheduler)
        self.scheduler: LambdaHandler = scheduler_handler(pipelines, runtime=runtime)
        invoker.register(scheduler, self.scheduler)

    @classmethod
    def create(
        cls,
        pipelines: PipelineRegistry,
        *,
        dynamodb: DynamoDBClient,
        s3: S3Client,
        sqs: SQSClient,
        sfn: SFNClient | None = None,
        driver: DriverName = "direct",
        state_machine_arn: str | None = None,
        clock: Clock = system_clock_ms,
    ) -> LocalStack:
        """Create a table, a bucket and a delay queue (unique names) and wire the functions to them.

        DynamoDB calls are serialised, so moto's conditional writes are atomic as DynamoDB's are.
        """
        dynamodb = one_call_at_a_time(dynamodb)
        suffix = uuid.uuid4().hex[:10]
        table = f"cairn-jobs-{suffix}"
        create_table(dynamodb, table)
        bucket = f"cairn-state-{suffix}"
        s3.create_bucket(Bucket=bucket)
        queue_url = sqs.create_queue(QueueName=f"cairn-delays-{suffix}")["QueueUrl"]
        settings = Settings(
            table_name=table,
            state_bucket=bucket,
            driver=driver,
            function_prefix=PREFIX,
            scheduler_function=SCHEDULER,
            delay_queue_url=queue_url,
            state_machine_arn=state_machine_arn,
        )
        invoker = LocalLambda()
        runtime = Runtime(
            settings=settings, dynamodb=dynamodb, s3=s3, lambda_client=invoker, sqs=sqs, sfn=sfn, clock=clock
        )
        return cls(pipelines, runtime, invoker)

    def register(self, name: str, handler: LambdaHandler) -> None:
        """Deploy another function (the API, say) beside the phases and the scheduler."""
        self.invoker.register(name, handler)

    def call(self, name: str, event: dict[str, Any]) -> Any:
        """Invoke a function synchronously with ``event``; returns its response."""
        return self.invoker.functions[name].handler(event, LocalContext(name))

    def deliver_delayed(self) -> int:
        """Hand the delay queue's visible messages to the scheduler, as its SQS event source would."""
        sqs = self.runtime.sqs
        queue_url = self.runtime.settings.delay_queue_url
        if sqs is None or queue_url is None:
            return 0
        received = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        messages = received.get("Messages", [])
        if not messages:
            return 0
        records = [
            {"messageId": message["MessageId"], "body": message["Body"], "eventSource": "aws:sqs"}
            for message in messages
        ]
        response = self.call(self.runtime.settings.scheduler_function or SCHEDULER, {"Records": records})
        failed = {item["itemIdentifier"] for item in response.get("batchItemFailures", [])}
        for message in messages:
            if message["MessageId"] not in failed:
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        return len(messages)

    def delayed_waiting(self) -> int:
        """Messages in the delay queue that are not yet due, or due but not yet received."""
        sqs = self.runtime.sqs
        queue_url = self.runtime.settings.delay_queue_url
        if sqs is None or queue_url is None:
            return 0
        attributes = sqs.get_queue_attributes(
            QueueUrl=queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"],
        )["Attributes"]
        return int(attributes.get("ApproximateNumberOfMessages", 0)) + int(
            attributes.get("ApproximateNumberOfMessagesDelayed", 0)
        )

    def run_until_idle(self, *, timeout: float = 30.0, on_step: Callable[[], None] | None = None) -> int:
        """Run async invokes and delayed advances until none are left; returns how many invokes ran."""
        deadline = time.monotonic() + timeout
        ran = 0
        while True:
            ran += self.invoker.drain()
            if self.deliver_delayed():
                continue
            if self.invoker.pending() == 0 and self.delayed_waiting() == 0:
                return ran
            if on_step:
                on_step()
            if time.monotonic() > deadline:
                raise CairnError(f"The local stack did not go idle within {timeout}s")
            time.sleep(0.05)
