"""Redrive the scheduler's dead-letter queue: each event the scheduler failed on for good, given to it again.

The scheduler is the on-failure destination of every phase function and the target of the sweep; an
async event it fails on three times (Lambda's two retries) goes, as Lambda's on-failure record, to its
dead-letter queue (template.yaml: ``SchedulerDeadLetterQueue``). :func:`redrive` receives those records
(10 at a time), invokes the scheduler synchronously with each one's ``requestPayload`` (the event it
failed on) and deletes the message once the scheduler took it; a message the scheduler fails on again,
and one that is no on-failure record, stays in the queue (visible again once the run ends) and is reported.

A message that will never succeed (an event for a pipeline the stack no longer runs, say) can be discarded
instead, by its message id, with a reason: the scheduler is invoked with ``{"action": "discard", ...}``, and
writes the audit entry (who, why, what the message was about) to its log group, then the message is
deleted. A discard the scheduler did not record deletes nothing.

A repeat is harmless, which is what makes a redrive safe to run at any time, twice included: a crash
report names the claim it is about and changes nothing unless that claim is still the job's current
one; an advance carries the job's sequence and does nothing once the job moved past it.

boto3 is never imported here: the clients are given (any boto3-shaped SQS, Lambda and CloudFormation
clients: the local stack's ``LocalLambda`` in tests). The command is :mod:`cairn.client.ops`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

BATCH: Final = 10
"""The most messages one receive returns (SQS's limit)."""
VISIBILITY_SECONDS: Final = 900
"""How long a received batch stays hidden from other readers: ten invokes of the scheduler (60 s each at
most in template.yaml), with room to spare. Messages a run leaves in the queue are made visible again
when it ends; those of a run that was killed come back after this long."""
WAIT_SECONDS: Final = 1
"""The receive's long poll: a short poll may miss messages of a small queue; a long one asks every server."""
QUEUE_OUTPUT: Final = "SchedulerDeadLetterQueueUrl"
FUNCTION_OUTPUT: Final = "SchedulerFunctionName"
COUNTED: Final = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")

Outcome = Literal["redriven", "discarded", "failed", "malformed", "listed"]


class RedriveUsageError(Exception):
    """The redrive cannot start: no queue or function named, or a stack without the outputs that name them."""


class DeadLetterQueue(Protocol):
    """What a redrive needs of an SQS client (boto3's)."""

    def receive_message(
        self, *, QueueUrl: str, MaxNumberOfMessages: int = ..., VisibilityTimeout: int = ..., WaitTimeSeconds: int = ...
    ) -> Any:
        """Receive up to ``MaxNumberOfMessages`` messages, hidden for ``VisibilityTimeout`` seconds."""

    def delete_message(self, *, QueueUrl: str, ReceiptHandle: str) -> Any:
        """Delete one received message."""

    def change_message_visibility(self, *, QueueUrl: str, ReceiptHandle: str, VisibilityTimeout: int) -> Any:
        """Hide a received message for ``VisibilityTimeout`` more seconds (0: visible now)."""

    def get_queue_attributes(
        self,
        *,
        QueueUrl: str,
        AttributeNames: Sequence[Literal["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]],
    ) -> Any:
        """The queue's counts."""


class FunctionInvoker(Protocol):
    """What a redrive needs of a Lambda client (boto3's, or the local stack's ``LocalLambda``)."""

    def invoke(self, *, FunctionName: str, InvocationType: Literal["RequestResponse"], Payload: bytes) -> Any:
        """Invoke a function and wait for its answer (``FunctionError`` set when it failed)."""


class StackReader(Protocol):
    """What a redrive needs of a CloudFormation client (boto3's)."""

    def describe_stacks(self, *, StackName: str) -> Any:
        """The stack, with its outputs."""


@dataclass(frozen=True)
class Target:
    """The dead-letter queue to redrive and the scheduler function its events go to."""

    queue_url: str
    function: str


def target_of_stack(cloudformation: StackReader, stack_name: str) -> Target:
    """The queue and the function the stack's outputs name; RedriveUsageError naming the outputs it lacks."""
    stacks = cloudformation.describe_stacks(StackName=stack_name).get("Stacks") or []
    if not stacks:
        raise RedriveUsageError(f"stack {stack_name!r} does not exist")
    outputs = {str(item.get("OutputKey")): str(item.get("OutputValue")) for item in stacks[0].get("Outputs") or []}
    missing = [name for name in (QUEUE_OUTPUT, FUNCTION_OUTPUT) if not outputs.get(name)]
    if missing:
        raise RedriveUsageError(
            f"stack {stack_name!r} has no output {' and no output '.join(missing)}: deploy the template with the "
            "scheduler's dead-letter queue, or name them with --queue-url URL --function NAME"
        )
    return Target(outputs[QUEUE_OUTPUT], outputs[FUNCTION_OUTPUT])


@dataclass(frozen=True)
class DeadLetter:
    """One message of the dead-letter queue, read: the event the scheduler failed on, and what it was about."""

    message_id: str
    receipt_handle: str
    body: str
    event: dict[str, Any] | None
    """The record's ``requestPayload``: what the scheduler failed on. None: the message is no on-failure record."""
    problem: str = ""
    """Why the message is no on-failure record (when ``event`` is None)."""
    kind: str = "event"
    """``crash report``, ``sweep``, or the action of an ``{"action": ...}`` event (``advance``, ``start``...)."""
    job_id: str | None = None
    phase: str | None = None
    failed_at: str | None = None
    """When Lambda gave up (the record's ``timestamp``)."""
    why: str = ""
    """The scheduler's error (type and message), else the record's condition."""

    def describe(self) -> str:
        """What the message is about, on one line."""
        if self.event is None:
            return f"message {self.message_id}: {self.problem}"
        about = f"job {self.job_id}" if self.job_id else "no job"
        phase = f" phase {self.phase}" if self.phase else ""
        when = f" at {self.failed_at}" if self.failed_at else ""
        why = f": {self.why}" if self.why else ""
        return f"{self.kind} of {about}{phase} (message {self.message_id}), failed{when}{why}"


def read_dead_letter(message: Mapping[str, Any]) -> DeadLetter:
    """A received message as a :class:`DeadLetter` (``event`` None when it is not Lambda's on-failure record)."""
    message_id, handle, body = str(message.get("MessageId")), str(message.get("ReceiptHandle")), message.get("Body")
    text = body if isinstance(body, str) else ""
    try:
        record = json.loads(text)
    except ValueError:
        return DeadLetter(message_id, handle, text, None, "not JSON: not an on-failure record")
    event = record.get("requestPayload") if isinstance(record, dict) else None
    if not isinstance(event, dict):
        return DeadLetter(message_id, handle, text, None, "no requestPayload object: not an on-failure record")
    response, context = _mapping(record.get("responsePayload")), _mapping(record.get("requestContext"))
    error = ": ".join(str(part) for part in (response.get("errorType"), response.get("errorMessage")) if part)
    kind, about = _kind(event)
    return DeadLetter(
        message_id,
        handle,
        text,
        event,
        kind=kind,
        job_id=_text(about.get("jobId")),
        phase=_text(about.get("phase")),
        failed_at=_text(record.get("timestamp")),
        why=error or str(context.get("condition") or ""),
    )


def _kind(event: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """What kind of scheduler event ``event`` is, and the part of it that names the job."""
    if "requestContext" in event and "requestPayload" in event:
        return "crash report", _mapping(event.get("requestPayload"))
    if event.get("detail-type") == "Scheduled Event":
        return "sweep", {}
    action = event.get("action")
    return (str(action) if isinstance(action, str) and action else "event"), event


@dataclass(frozen=True)
class Handled:
    """What a redrive did with one message."""

    letter: DeadLetter
    outcome: Outcome
    detail: str = ""
    """The scheduler's answer (redriven), its error (failed), or nothing."""

    def line(self) -> str:
        """One line for the operator."""
        detail = f" -> {self.detail}" if self.detail else ""
        return f"{self.outcome}: {self.letter.describe()}{detail}"

    def to_json(self) -> dict[str, Any]:
        """The line's facts as JSON."""
        letter = self.letter
        return {
            "messageId": letter.message_id,
            "outcome": self.outcome,
            "kind": letter.kind if letter.event is not None else None,
            "jobId": letter.job_id,
            "phase": letter.phase,
            "failedAt": letter.failed_at,
            "why": letter.why or letter.problem,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Discard:
    """Discard the messages ``message_ids`` (not redrive them), because ``reason``, in the name of ``by``."""

    message_ids: frozenset[str]
    reason: str
    by: str


@dataclass
class Summary:
    """A redrive's outcome: each message handled, and how many are left in the queue."""

    handled: list[Handled] = field(default_factory=list)
    left: int | None = None
    dry_run: bool = False

    def count(self, outcome: Outcome) -> int:
        """How many messages had ``outcome``."""
        return sum(1 for item in self.handled if item.outcome == outcome)

    unseen: list[str] = field(default_factory=list)
    """Message ids asked to be discarded that the run did not receive."""

    @property
    def exit_status(self) -> int:
        """0 when every message was applied, discarded (or listed), 1 when some failed, are malformed or unseen."""
        return 1 if self.count("failed") or self.count("malformed") or self.unseen else 0

    def line(self) -> str:
        """``redriven 3, failed 0, malformed 0; the queue is empty``."""
        if self.dry_run:
            counts = f"listed {self.count('listed')} (dry run: nothing applied), malformed {self.count('malformed')}"
        else:
            counts = f"redriven {self.count('redriven')}, failed {self.count('failed')}, "
            counts += f"malformed {self.count('malformed')}"
            if self.count("discarded"):
                counts += f", discarded {self.count('discarded')}"
        if self.unseen:
            counts += f"; not found to discard: {', '.join(self.unseen)}"
        if self.left is None:
            return counts
        if self.left == 0:
            return f"{counts}; the queue is empty"
        return f"{counts}; {self.left} message{'s' if self.left != 1 else ''} left in the queue"

    def to_json(self) -> dict[str, Any]:
        """The summary as JSON."""
        return {
            "dryRun": self.dry_run,
            "redriven": self.count("redriven"),
            "failed": self.count("failed"),
            "malformed": self.count("malformed"),
            "listed": self.count("listed"),
            "discarded": self.count("discarded"),
            "notFound": self.unseen,
            "left": self.left,
            "messages": [item.to_json() for item in self.handled],
        }


def redrive(
    sqs: DeadLetterQueue,
    lambda_client: FunctionInvoker,
    target: Target,
    *,
    dry_run: bool = False,
    max_messages: int | None = None,
    report: Callable[[Handled], None] = lambda _: None,
    wait_seconds: int = WAIT_SECONDS,
    discard: Discard | None = None,
) -> Summary:
    """Give the scheduler again each event of its dead-letter queue (at most ``max_messages``); ``report`` each.

    A message is deleted once the scheduler took its event (answered without a ``FunctionError``); one it
    fails on again, a malformed one, and (``dry_run``) every one stays, visible again when the run ends.
    Each message is handled at most once per run.
    """
    summary = Summary(dry_run=dry_run)
    kept: dict[str, str] = {}  # message id -> its latest receipt handle: made visible again at the end
    try:
        while max_messages is None or len(summary.handled) < max_messages:
            wanted = BATCH if max_messages is None else min(BATCH, max_messages - len(summary.handled))
            received = sqs.receive_message(
                QueueUrl=target.queue_url,
                MaxNumberOfMessages=wanted,
                VisibilityTimeout=VISIBILITY_SECONDS,
                WaitTimeSeconds=wait_seconds,
            )
            fresh = []
            for message in received.get("Messages") or []:
                if message["MessageId"] in kept:  # handled already in this run: hidden again, released at the end
                    kept[message["MessageId"]] = message["ReceiptHandle"]
                else:
                    fresh.append(message)
            if not fresh:
                break
            for message in fresh:
                letter = read_dead_letter(message)
                if discard is not None and letter.message_id in discard.message_ids:
                    handled = _discard(sqs, lambda_client, target, letter, discard, dry_run=dry_run)
                else:
                    handled = _handle(sqs, lambda_client, target, letter, dry_run=dry_run)
                if handled.outcome not in ("redriven", "discarded"):
                    kept[handled.letter.message_id] = handled.letter.receipt_handle
                summary.handled.append(handled)
                report(handled)
    finally:
        for handle in kept.values():
            sqs.change_message_visibility(QueueUrl=target.queue_url, ReceiptHandle=handle, VisibilityTimeout=0)
    if discard is not None:
        seen = {item.letter.message_id for item in summary.handled}
        summary.unseen = sorted(discard.message_ids - seen)
    attributes = sqs.get_queue_attributes(QueueUrl=target.queue_url, AttributeNames=list(COUNTED))
    summary.left = sum(int((attributes.get("Attributes") or {}).get(name, 0)) for name in COUNTED)
    return summary


def _handle(
    sqs: DeadLetterQueue, lambda_client: FunctionInvoker, target: Target, letter: DeadLetter, *, dry_run: bool
) -> Handled:
    """Redrive one message (or, ``dry_run``, only list it)."""
    if letter.event is None:
        return Handled(letter, "malformed", "left in the queue")
    if dry_run:
        return Handled(letter, "listed")
    try:
        response = lambda_client.invoke(
            FunctionName=target.function,
            InvocationType="RequestResponse",
            Payload=json.dumps(letter.event).encode(),
        )
    except Exception as exc:  # throttled, no such function, no permission: the message stays for another run
        return Handled(letter, "failed", f"the invoke failed: {exc}; left in the queue")
    answer = _payload(response.get("Payload"))
    if response.get("FunctionError"):
        error = _mapping(answer)
        said = ": ".join(str(part) for part in (error.get("errorType"), error.get("errorMessage")) if part)
        return Handled(letter, "failed", f"the scheduler failed again ({said or answer}); left in the queue")
    try:
        sqs.delete_message(QueueUrl=target.queue_url, ReceiptHandle=letter.receipt_handle)
    except Exception as exc:
        return Handled(letter, "failed", f"applied, but not deleted ({exc}): a later redrive repeats it, harmlessly")
    return Handled(letter, "redriven", _answer(answer))


def _discard(
    sqs: DeadLetterQueue,
    lambda_client: FunctionInvoker,
    target: Target,
    letter: DeadLetter,
    discard: Discard,
    *,
    dry_run: bool,
) -> Handled:
    """Have the scheduler record the discard of one message (who, why, what), then delete it."""
    if dry_run:
        return Handled(letter, "listed", "would be discarded")
    audit = {
        "action": "discard",
        "messageId": letter.message_id,
        "by": discard.by,
        "reason": discard.reason,
        "kind": letter.kind if letter.event is not None else "malformed",
        "jobId": letter.job_id,
        "phase": letter.phase,
        "failedAt": letter.failed_at,
        "why": (letter.why or letter.problem)[:1000],
    }
    try:
        response = lambda_client.invoke(
            FunctionName=target.function, InvocationType="RequestResponse", Payload=json.dumps(audit).encode()
        )
    except Exception as exc:
        return Handled(letter, "failed", f"the discard was not recorded ({exc}); left in the queue")
    answer = _mapping(_payload(response.get("Payload")))
    if response.get("FunctionError") or answer.get("status") != "discarded":
        return Handled(letter, "failed", f"the scheduler did not record the discard ({answer}); left in the queue")
    try:
        sqs.delete_message(QueueUrl=target.queue_url, ReceiptHandle=letter.receipt_handle)
    except Exception as exc:
        return Handled(letter, "failed", f"recorded, but not deleted ({exc}): discard it again")
    return Handled(letter, "discarded", f"by {discard.by}: {discard.reason}")


def _payload(stream: Any) -> Any:
    """The invoke's answer: the payload's JSON (or its text)."""
    raw = stream.read() if hasattr(stream, "read") else stream
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return raw


def _answer(answer: Any) -> str:
    """The scheduler's answer in a few words (``status running``, ``revived 2``)."""
    values = _mapping(answer)
    if "status" in values:
        return f"status {values['status']}" + (f" ({values['error']})" if values.get("error") else "")
    if isinstance(values.get("revived"), list):
        return f"revived {len(values['revived'])}"
    return json.dumps(answer)[:200]


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
