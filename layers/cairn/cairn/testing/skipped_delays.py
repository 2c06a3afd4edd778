"""A delay queue on a clock that skips time: a delayed advance waits no real time.

The direct driver sends a delayed advance (a retry backoff, a phase's delay) to SQS with
``DelaySeconds``, and moto would hold it that long in real time. :class:`SkippedDelays` sends it
visible at once and remembers when it is due; receiving it moves the clock to that moment, as if
the wait had passed. The scheduler function then finds the message due (or, past SQS's 15 minutes,
queues the rest of the wait again, which the next receive skips too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .clock import SkippingClock

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


class SkippedDelays:
    """An SQS client whose delayed messages are visible at once; receiving one moves ``clock`` to when it is due."""

    def __init__(self, client: SQSClient, clock: SkippingClock) -> None:
        self._client = client
        self._clock = clock
        self._due_ms: dict[str, int] = {}

    def send_message(self, **kwargs: Any) -> Any:
        """Send the message visible now; note when its ``DelaySeconds`` would have made it visible."""
        delay = int(kwargs.pop("DelaySeconds", 0) or 0)
        response = self._client.send_message(**kwargs)
        if delay > 0:
            self._due_ms[str(response["MessageId"])] = self._clock() + delay * 1000
        return response

    def receive_message(self, **kwargs: Any) -> Any:
        """Receive messages; the clock moves to the earliest moment one of them was due."""
        response = self._client.receive_message(**kwargs)
        due = [self._due_ms.pop(str(message["MessageId"]), 0) for message in response.get("Messages", [])]
        if due:
            self._clock.advance_to(min(due))
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)
