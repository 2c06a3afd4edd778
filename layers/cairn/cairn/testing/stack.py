"""The deployed bundle, in-process: phase functions and the scheduler on moto, wired as the SAM template wires them.

``LocalStack`` registers one function per phase of each pipeline
(``<prefix><pipeline>-<phase>``: the generic phase handler with that
function's ``CAIRN_PIPELINE`` and ``CAIRN_PHASE``, async retries off, failures
to the scheduler) and the scheduler function (2 async retries, failures to its
dead-letter queue, :attr:`LocalStack.scheduler_dlq_url`) with a
:class:`LocalLambda`, and gives them a :class:`Runtime` whose AWS clients talk
to moto. ``run_until_idle`` plays Lambda's async queue and the SQS delay
queue's event source mapping until nothing is left to run.

A message sent to the delay queue carries the sender's trace header (the
``AWSTraceHeader`` system attribute), so the scheduler invocation it leads to
continues the sender's chain, as on AWS; the phase functions and the scheduler
have the ``RecursiveLoop`` setting of template.yaml (``Allow``), which
tests/template checks against :data:`TEMPLATE_RECURSIVE_LOOP`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, cast

from ..aws.dynamodb.schema import create_table
from ..aws.phase_handler import registry_phase_handler
from ..aws.runtime import Runtime
from ..aws.scheduler_handler import scheduler_handler
from ..core.clock import Clock, system_clock_ms
from ..core.errors import CairnError
from ..core.registry import PipelineRegistry
from ..core.settings import PHASE, PIPELINE, DriverName, Settings
from .invoker import Chain, Invocation, LambdaHandler, LocalLambda, QueueDestination, RecursiveLoop
from .serialised import one_call_at_a_time

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient

PREFIX = "cairn-"
SCHEDULER = f"{PREFIX}scheduler"
TRACE_HEADER: Final = "AWSTraceHeader"
TEMPLATE_RECURSIVE_LOOP: RecursiveLoop = "Allow"
"""The ``RecursiveLoop`` of the phase functions and the scheduler in template.yaml."""
SCHEDULER_RETRIES: Final = 2
"""The scheduler's async retries in template.yaml (its ``EventInvokeConfig``'s ``MaximumRetryAttempts``)."""
QUEUED_COUNTS: Final = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesDelayed",
    "ApproximateNumberOfMessagesNotVisible",
)
"""The delay queue's counts of messages still to come: visible, not yet due, and received but not deleted."""


class TracedSQS:
    """An SQS client whose messages carry the trace header of the invocation that sends them."""

    def __init__(self, client: SQSClient, invoker: LocalLambda) -> None:
        self._client = client
        self._invoker = invoker

    def send_message(self, **kwargs: Any) -> Any:
        """Send a message; inside a function, with the function's trace header."""
        chain = self._invoker.current_chain
        if chain is not None:
            attributes = {TRACE_HEADER: {"DataType": "String", "StringValue": chain.header}}
            kwargs["MessageSystemAttributes"] = {**kwargs.get("MessageSystemAttributes", {}), **attributes}
        return self._client.send_message(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class LocalStack:
    """Phase functions, the scheduler and their AWS resources, on moto and a local Lambda."""

    def __init__(
        self,
        pipelines: PipelineRegistry,
        runtime: Runtime,
        invoker: LocalLambda,
        *,
        recursive_loop: RecursiveLoop = TEMPLATE_RECURSIVE_LOOP,
        scheduler_dlq_url: str | None = None,
    ) -> None:
        self.pipelines = pipelines
        self.runtime = runtime
        self.invoker = invoker
        self.scheduler_dlq_url = scheduler_dlq_url
        """The scheduler's dead-letter queue: the on-failure records of the events it failed on for good."""
        scheduler = runtime.settings.scheduler_function or SCHEDULER
        for pipeline in pipelines:
            for phase in pipeline.phase_names:
                environment = {PIPELINE: pipeline.name, PHASE: phase}
                handler = registry_phase_handler(pipelines, runtime=runtime, environ=environment)
                name = runtime.settings.phase_function(pipeline.name, phase)
                invoker.register(name, handler, on_failure=scheduler, recursive_loop=recursive_loop)
        self.scheduler: LambdaHandler = scheduler_handler(pipelines, runtime=runtime)
        dead_letters = (
            QueueDestination(scheduler_dlq_url, runtime.sqs) if scheduler_dlq_url and runtime.sqs is not None else None
        )
        invoker.register(
            scheduler,
            self.scheduler,
            on_failure=dead_letters,
            recursive_loop=recursive_loop,
            max_retries=SCHEDULER_RETRIES,
        )

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
        recursive_loop: RecursiveLoop = TEMPLATE_RECURSIVE_LOOP,
    ) -> LocalStack:
        """Create a table, a bucket, a delay queue and the scheduler's dead-letter queue (unique names) and wire
        the functions to them.

        DynamoDB calls are serialised, so moto's conditional writes are atomic as DynamoDB's are.
        ``recursive_loop`` is the phase functions' and the scheduler's recursive loop setting.
        """
        dynamodb = one_call_at_a_time(dynamodb)
        suffix = uuid.uuid4().hex[:10]
        table = f"cairn-jobs-{suffix}"
        create_table(dynamodb, table)
        bucket = f"cairn-state-{suffix}"
        s3.create_bucket(Bucket=bucket)
        queue_url = sqs.create_queue(QueueName=f"cairn-delays-{suffix}")["QueueUrl"]
        dlq_url = sqs.create_queue(QueueName=f"cairn-scheduler-dlq-{suffix}")["QueueUrl"]
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
        traced = cast("SQSClient", TracedSQS(sqs, invoker))
        runtime = Runtime(
            settings=settings, dynamodb=dynamodb, s3=s3, lambda_client=invoker, sqs=traced, sfn=sfn, clock=clock
        )
        return cls(pipelines, runtime, invoker, recursive_loop=recursive_loop, scheduler_dlq_url=dlq_url)

    def register(self, name: str, handler: LambdaHandler) -> None:
        """Deploy another function (the API, say) beside the phases and the scheduler."""
        self.invoker.register(name, handler)

    def call(self, name: str, event: dict[str, Any]) -> Any:
        """Invoke a function synchronously with ``event`` (a new chain); returns its response."""
        return self.invoker.call(name, event)

    def deliver_delayed(self) -> int:
        """Hand the delay queue's visible messages to the scheduler, as its SQS event source would.

        Messages of one chain go in one batch, which continues that chain; a batch that recursive
        loop detection stops is not delivered (its messages are dropped, as to a dead-letter queue).
        """
        sqs = self.runtime.sqs
        queue_url = self.runtime.settings.delay_queue_url
        if sqs is None or queue_url is None:
            return 0
        received = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=0,
            MessageSystemAttributeNames=[TRACE_HEADER],
        )
        messages = received.get("Messages", [])
        batches: dict[str | None, list[Any]] = {}
        for message in messages:
            batches.setdefault(message.get("Attributes", {}).get(TRACE_HEADER), []).append(message)
        scheduler = self.runtime.settings.scheduler_function or SCHEDULER
        for header, batch in batches.items():
            chain = Chain.parse(header)
            delivered = self.invoker.allows(scheduler, chain)
            failed: set[str] = set()
            if delivered:
                records = [
                    {
                        "messageId": message["MessageId"],
                        "body": message["Body"],
                        "attributes": {TRACE_HEADER: chain.header},
                        "eventSource": "aws:sqs",
                    }
                    for message in batch
                ]
                response = self.invoker.call(scheduler, {"Records": records}, chain=chain)
                failed = {item["itemIdentifier"] for item in response.get("batchItemFailures", [])}
            for message in batch:
                if message["MessageId"] not in failed:
                    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            if not delivered:
                self.invoker.stopped.extend(
                    Invocation(scheduler, {"Records": [{"body": message["Body"]}]}, chain=chain) for message in batch
                )
        return len(messages)

    def delayed_waiting(self) -> int:
        """Messages in the delay queue still to come: not yet due, due but not received, or received and failed."""
        sqs = self.runtime.sqs
        queue_url = self.runtime.settings.delay_queue_url
        if sqs is None or queue_url is None:
            return 0
        attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=list(QUEUED_COUNTS))["Attributes"]
        return sum(int(attributes.get(name, 0)) for name in QUEUED_COUNTS)

    def run_until_idle(self, *, timeout: float = 30.0, on_step: Callable[[], None] | None = None) -> int:
        """Run async invokes and delayed advances until none are left; returns how many invokes ran."""
        deadline = time.monotonic() + timeout
        ran = 0
        while True:
            ran += self.invoker.drain()
            if self.deliver_delayed():
                continue
            if self.invoker.pending() == 0 and self.delayed_waiting() == 0:
                # A message whose delay ends between the counts is in neither; one more receive finds it.
                if self.deliver_delayed():
                    continue
                return ran
            if on_step:
                on_step()
            if time.monotonic() > deadline:
                raise CairnError(f"The local stack did not go idle within {timeout}s")
            time.sleep(0.05)
