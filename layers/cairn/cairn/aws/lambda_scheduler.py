"""The direct driver: the next phase's function is invoked asynchronously; delays go through SQS."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Literal, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from ..core.clock import Clock, system_clock_ms
from ..core.errors import SchedulingError
from ..core.pipeline import Pipeline
from ..core.settings import Settings
from ..scheduling.messages import AdvanceMessage
from .routing import invocation_for

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

MAX_QUEUE_DELAY_SECONDS = 900


class LambdaInvoker(Protocol):
    """What the driver needs of a Lambda client: ``invoke`` (boto3's, or the local invoker's)."""

    def invoke(
        self,
        *,
        FunctionName: str,
        InvocationType: Literal["Event", "RequestResponse", "DryRun"],
        Payload: bytes,
    ) -> Any:
        """Invoke a function."""
        ...


class LambdaScheduler:
    """Schedules advances of one owner's jobs of one pipeline by invoking phase functions.

    A phase runs in the function ``<prefix><phase>``; a phase the pipeline does
    not know goes to the scheduler function, which records the error. A delay
    (in seconds) is an SQS message delivered to the scheduler function
    (re-queued while the delay exceeds SQS's 15 minutes).
    """

    def __init__(
        self,
        *,
        owner: str,
        pipeline: Pipeline[Any],
        settings: Settings,
        lambda_client: LambdaInvoker,
        sqs_client: SQSClient | None = None,
        clock: Clock = system_clock_ms,
    ) -> None:
        self.owner = owner
        self.pipeline = pipeline
        self.settings = settings
        self._lambda = lambda_client
        self._sqs = sqs_client
        self._clock = clock

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        """Invoke the phase now, or queue it for ``delay`` seconds; the message carries ``sequence``."""
        message = AdvanceMessage(
            job_id=job_id, owner=self.owner, pipeline=self.pipeline.name, phase=phase, sequence=sequence
        )
        if delay > 0:
            self.queue(message.model_copy(update={"not_before": self._clock() + int(delay * 1000)}))
        else:
            self.invoke_now(message)

    def schedule_wake(self, job_id: str, *, pipeline: str, phase: str, sequence: int | None) -> None:
        """Invoke the phase of a job of any pipeline of this owner now (one waiting for its owner's share).

        A job of this scheduler's pipeline is advanced as any; another pipeline's phase runs in the function
        its name gives (``<prefix><pipeline>-<phase>``).
        """
        if pipeline == self.pipeline.name:
            self.schedule_advance(job_id, phase=phase, sequence=sequence)
            return
        message = AdvanceMessage(job_id=job_id, owner=self.owner, pipeline=pipeline, phase=phase, sequence=sequence)
        invoke_phase(message, pipeline=None, settings=self.settings, lambda_client=self._lambda)

    def schedule_item(self, job_id: str, *, phase: str, fan_out: str, item: int, delay: float = 0.0) -> None:
        """Invoke the item phase's function for one item of a map now, or queue it for ``delay`` seconds."""
        message = AdvanceMessage(
            job_id=job_id, owner=self.owner, pipeline=self.pipeline.name, phase=phase, fan_out=fan_out, item=item
        )
        if delay > 0:
            self.queue(message.model_copy(update={"not_before": self._clock() + math.ceil(delay * 1000)}))
        else:
            self.invoke_now(message)

    def invoke_now(self, message: AdvanceMessage) -> None:
        """Invoke the phase's function for ``message`` asynchronously."""
        invoke_phase(message, pipeline=self.pipeline, settings=self.settings, lambda_client=self._lambda)

    def queue(self, message: AdvanceMessage) -> None:
        """Send a delayed advance to the delay queue."""
        if self._sqs is None or not self.settings.delay_queue_url:
            raise SchedulingError("A delayed advance needs the delay queue (CAIRN_DELAY_QUEUE_URL)")
        remaining = ((message.not_before or 0) - self._clock()) / 1000
        seconds = max(0, min(MAX_QUEUE_DELAY_SECONDS, math.ceil(remaining)))
        try:
            self._sqs.send_message(
                QueueUrl=self.settings.delay_queue_url,
                MessageBody=json.dumps(message.to_wire()),
                DelaySeconds=seconds,
            )
        except (ClientError, BotoCoreError) as exc:
            raise SchedulingError(f"Cannot queue the advance of {message.job_id}: {exc}", retryable=True) from exc


def invoke_phase(
    message: AdvanceMessage, *, pipeline: Pipeline[Any] | None, settings: Settings, lambda_client: LambdaInvoker
) -> None:
    """Invoke the function of ``message.phase`` asynchronously (the scheduler's, for an unknown phase).

    Without ``pipeline`` (a job of another pipeline, woken) the function is the one the names give.
    """
    if pipeline is None:
        target, payload = settings.phase_function(message.pipeline, message.phase), message.to_wire()
    else:
        target, payload = invocation_for(message, pipeline, settings)
    try:
        lambda_client.invoke(FunctionName=target, InvocationType="Event", Payload=json.dumps(payload).encode())
    except (ClientError, BotoCoreError) as exc:
        raise SchedulingError(f"Cannot invoke {target} for job {message.job_id}: {exc}", retryable=True) from exc
