"""The template's event sources on localhost: SQS queues polled into their function, schedules on a timer.

An SQS source receives up to its batch size, invokes the function synchronously with Lambda's
SQS event, and deletes what succeeded (with ``ReportBatchItemFailures``, all but the failed
items; after an error, nothing: the messages come back after the visibility timeout). A
schedule sends EventBridge's ``Scheduled Event`` asynchronously every period.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .lambda_service import LambdaService

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from .models import Schedule, SqsSource

IDLE_POLL_SECONDS = 0.2


def poll_until_stopped(
    stop: threading.Event,
    working: Callable[[], AbstractContextManager[None]],
    poll_once: Callable[[], int],
    failed: Callable[[Exception], None],
) -> None:
    """Call ``poll_once`` (inside ``working``) until ``stop`` is set, idling :data:`IDLE_POLL_SECONDS` after a poll
    that delivered nothing; a failed poll (the endpoint shutting down, or moto hiccuping) is told to ``failed`` and
    tried again."""
    while not stop.is_set():
        try:
            with working():
                delivered = poll_once()
        except Exception as exc:
            if stop.is_set():
                return
            failed(exc)
            delivered = 0
        if not delivered:
            stop.wait(IDLE_POLL_SECONDS)


def sqs_record(message: dict[str, Any], source: SqsSource, region: str) -> dict[str, Any]:
    """The record of one SQS message in Lambda's SQS event."""
    body = str(message.get("Body", ""))
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": body,
        "attributes": message.get("Attributes", {}),
        "messageAttributes": message.get("MessageAttributes", {}),
        "md5OfBody": message.get("MD5OfBody") or hashlib.md5(body.encode(), usedforsecurity=False).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": source.queue_arn,
        "awsRegion": region,
    }


class SqsPoller:
    """Polls one queue into one function, on a thread, until stopped."""

    def __init__(
        self,
        sqs: SQSClient,
        source: SqsSource,
        function: str,
        lambdas: LambdaService,
        stop: threading.Event,
        working: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext,
    ) -> None:
        self.sqs = sqs
        self.source = source
        self.function = function
        self.lambdas = lambdas
        self.stop = stop
        self.working = working
        """Entered around each receive and what it delivers (the time skipper's, with ``--skip-waits``)."""
        self.thread = threading.Thread(target=self._loop, name=f"sqs-{function}", daemon=True)

    def _loop(self) -> None:
        poll_until_stopped(self.stop, self.working, self.poll_once, self._failed)

    def _failed(self, exc: Exception) -> None:
        self.lambdas.log.say("sqs", f"polling {self.source.queue_url} failed: {exc}", "WARNING")

    def poll_once(self) -> int:
        """Deliver one batch; returns how many messages it held."""
        received = self.sqs.receive_message(
            QueueUrl=self.source.queue_url,
            MaxNumberOfMessages=min(10, self.source.batch_size),
            WaitTimeSeconds=0,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages = received.get("Messages", [])
        if not messages:
            return 0
        records = [sqs_record(dict(message), self.source, self.lambdas.region) for message in messages]
        outcome = self.lambdas.invoke(self.function, {"Records": records})
        if outcome.failed:
            return len(messages)
        failed: set[str] = set()
        if self.source.report_batch_item_failures and isinstance(outcome.payload, dict):
            failed = {str(item.get("itemIdentifier")) for item in outcome.payload.get("batchItemFailures") or []}
        for message in messages:
            if message["MessageId"] not in failed:
                self.sqs.delete_message(QueueUrl=self.source.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return len(messages)


def scheduled_event(schedule: Schedule, region: str, account: str) -> dict[str, Any]:
    """EventBridge's event for one tick of a schedule."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": account,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:events:{region}:{account}:rule/{schedule.name}"],
        "detail": {},
    }


class ScheduleTimer:
    """Invokes a function with a scheduled event every ``period`` seconds, on a thread, until stopped."""

    def __init__(
        self, schedule: Schedule, function: str, lambdas: LambdaService, stop: threading.Event, period: float
    ) -> None:
        self.schedule = schedule
        self.function = function
        self.lambdas = lambdas
        self.stop = stop
        self.period = period
        self.thread = threading.Thread(target=self._loop, name=f"schedule-{schedule.name}", daemon=True)

    def _loop(self) -> None:
        while not self.stop.wait(self.period):
            event = scheduled_event(self.schedule, self.lambdas.region, self.lambdas.account)
            self.lambdas.invoke_async(self.function, event)
