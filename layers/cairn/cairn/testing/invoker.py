"""Lambda on a laptop: functions run in-process, async invokes queue up, failures go to their destination.

``LocalLambda`` answers the same ``invoke`` call a boto3 Lambda client does,
so the direct driver's scheduler and the API use it unchanged. An async
(``Event``) invoke is queued and run by :meth:`LocalLambda.drain`, as Lambda's
own queue would run it; a function that fails (raises, or its process dies)
sends Lambda's on-failure record to the function's destination, with async
retries off, as the SAM template configures them.
"""

from __future__ import annotations

import io
import json
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..errors import CairnError
from .faults import SimulatedCrash

LambdaHandler = Callable[[dict[str, Any], Any], Any]


@dataclass
class LocalContext:
    """The parts of Lambda's context object that handlers read."""

    function_name: str
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    memory_limit_in_mb: int = 512
    timeout_ms: int = 900_000
    started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        """A function ARN in the local account."""
        return f"arn:aws:lambda:us-east-1:000000000000:function:{self.function_name}"

    @property
    def function_version(self) -> str:
        """Always ``$LATEST`` locally."""
        return "$LATEST"

    def get_remaining_time_in_millis(self) -> int:
        """Time left before the function's timeout."""
        return max(0, self.timeout_ms - int((time.monotonic() - self.started) * 1000))


@dataclass
class Invocation:
    """One queued async invoke."""

    function: str
    payload: dict[str, Any]
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))


@dataclass
class FunctionSpec:
    """A registered function: its handler and where its failures go."""

    handler: LambdaHandler
    on_failure: str | None = None


class LocalLambda:
    """Registered functions, an async invoke queue, and on-failure destinations."""

    def __init__(self) -> None:
        self.functions: dict[str, FunctionSpec] = {}
        self.queue: deque[Invocation] = deque()
        self.failures: list[dict[str, Any]] = []

    def register(self, name: str, handler: LambdaHandler, *, on_failure: str | None = None) -> None:
        """Deploy ``handler`` as function ``name``; failures of async invokes go to ``on_failure``."""
        self.functions[name] = FunctionSpec(handler, on_failure)

    def invoke(self, *, FunctionName: str, InvocationType: str = "RequestResponse", Payload: Any = b"{}") -> Any:
        """Invoke a function as boto3's ``lambda.invoke`` does (async: queued; sync: run now)."""
        name = FunctionName.rsplit(":", 1)[-1] if FunctionName.startswith("arn:") else FunctionName
        if name not in self.functions:
            raise CairnError(f"Function not found: {FunctionName}")
        raw = Payload.encode() if isinstance(Payload, str) else bytes(Payload)
        payload = json.loads(raw or b"{}")
        if InvocationType == "Event":
            self.queue.append(Invocation(name, payload))
            return {"StatusCode": 202}
        result = self.functions[name].handler(payload, LocalContext(name))
        return {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(result).encode())}

    def pending(self) -> int:
        """How many async invokes are queued."""
        return len(self.queue)

    def drain(self, *, max_steps: int | None = None) -> int:
        """Run queued async invokes in order until none are left; returns how many ran."""
        ran = 0
        while self.queue and (max_steps is None or ran < max_steps):
            self.run(self.queue.popleft())
            ran += 1
        return ran

    def run(self, invocation: Invocation) -> Any:
        """Run one async invocation; a failure becomes an on-failure record for the destination."""
        spec = self.functions[invocation.function]
        context = LocalContext(invocation.function, aws_request_id=invocation.request_id)
        try:
            return spec.handler(invocation.payload, context)
        except (Exception, SimulatedCrash) as exc:
            record = on_failure_record(invocation, context, exc)
            self.failures.append(record)
            if spec.on_failure:
                self.queue.append(Invocation(spec.on_failure, record))
            return None


def on_failure_record(invocation: Invocation, context: LocalContext, exc: BaseException) -> dict[str, Any]:
    """The record Lambda sends to an on-failure destination after an async invoke failed."""
    return {
        "version": "1.0",
        "timestamp": datetime.now(UTC).isoformat(),
        "requestContext": {
            "requestId": invocation.request_id,
            "functionArn": f"{context.invoked_function_arn}:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 1,
        },
        "requestPayload": invocation.payload,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {
            "errorMessage": str(exc) or type(exc).__name__,
            "errorType": type(exc).__name__,
            "stackTrace": traceback.format_exception(exc)[-3:],
        },
    }
