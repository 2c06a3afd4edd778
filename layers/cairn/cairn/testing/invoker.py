"""Lambda on a laptop: functions run in-process, async invokes queue up, failures go to their destination.

``LocalLambda`` answers the same ``invoke`` call a boto3 Lambda client does,
so the direct driver's scheduler and the API use it unchanged. An async
(``Event``) invoke is queued and run by :meth:`LocalLambda.drain`, as Lambda's
own queue would run it; a function that fails (raises, or its process dies) is
tried again up to its ``max_retries`` (queued behind what is queued, as Lambda
waits before a retry), then sends Lambda's on-failure record to the function's
destination: another function (an async invoke of it) or an SQS queue
(:class:`QueueDestination`: the record's JSON as the message), as the SAM
template configures them (phase functions: no retries, the scheduler; the
scheduler: 2 retries, its dead-letter queue).

Each invocation belongs to a chain, as Lambda traces it: an invoke made while
a function runs (and, through :class:`LocalStack`, a message it sends to SQS)
carries the running invocation's trace header, whose lineage counts how often
each function ran in the chain. Lambda's recursive loop detection stops the
invocation that would run a function a 17th time in one chain unless the
function's ``RecursiveLoop`` is ``Allow``; so does :meth:`LocalLambda.run`
(the stopped invocations are kept in :attr:`LocalLambda.stopped`).
"""

from __future__ import annotations

import io
import json
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Literal, Protocol

from ..core.errors import CairnError
from ..core.failures import describe
from .faults import SimulatedCrash

LambdaHandler = Callable[[dict[str, Any], Any], Any]
RecursiveLoop = Literal["Allow", "Terminate"]
"""A function's recursive loop setting (``RecursiveLoop`` of AWS::Lambda::Function; Lambda's default: Terminate)."""

MAX_CHAIN_INVOCATIONS = 16
"""How often a function with ``RecursiveLoop: Terminate`` may run in one chain; the next invocation is stopped."""


@dataclass(frozen=True)
class Chain:
    """One traced chain of requests: its root, and how often each function ran in it (the trace's lineage)."""

    root: str = field(default_factory=lambda: f"1-{uuid.uuid4().hex[:8]}-{uuid.uuid4().hex[:24]}")
    lineage: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def count(self, function: str) -> int:
        """How many times ``function`` ran in this chain."""
        return self.lineage.get(function, 0)

    def entering(self, function: str) -> Chain:
        """The chain once ``function`` runs in it once more."""
        return Chain(self.root, MappingProxyType({**self.lineage, function: self.count(function) + 1}))

    @property
    def header(self) -> str:
        """The chain as a trace header (``Root=...;Lineage=<function>:<count>|...``)."""
        lineage = "|".join(f"{name}:{count}" for name, count in sorted(self.lineage.items()))
        return f"Root={self.root};Lineage={lineage}"

    @classmethod
    def parse(cls, header: str | None) -> Chain:
        """The chain a trace header names; a new chain without one."""
        if not header:
            return cls()
        fields = dict(part.split("=", 1) for part in header.split(";") if "=" in part)
        entries = (entry.rsplit(":", 1) for entry in fields.get("Lineage", "").split("|") if ":" in entry)
        return cls(fields.get("Root") or cls().root, MappingProxyType({name: int(count) for name, count in entries}))


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
    """One queued async invoke; ``attempt`` counts its runs (2 and 3 are Lambda's retries)."""

    function: str
    payload: dict[str, Any]
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    chain: Chain = field(default_factory=Chain)
    attempt: int = 1


class MessageSender(Protocol):
    """What a queue destination needs of an SQS client."""

    def send_message(self, *, QueueUrl: str, MessageBody: str) -> Any:
        """Send one message (boto3's ``sqs.send_message``)."""


@dataclass(frozen=True)
class QueueDestination:
    """An SQS queue as an on-failure destination: the on-failure record's JSON is sent to it."""

    queue_url: str
    sqs: MessageSender

    def send(self, record: dict[str, Any]) -> None:
        """Send ``record`` to the queue, as Lambda sends it (the JSON object as the message body)."""
        self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=json.dumps(record))


Destination = str | QueueDestination
"""An on-failure destination: a function's name, or a queue."""
MAX_ASYNC_RETRIES = 2
"""The most retries Lambda makes of a failed async invoke (``MaximumRetryAttempts``: 0 to 2)."""


@dataclass
class FunctionSpec:
    """A registered function: its handler, how often a failed async invoke is retried and where it then goes."""

    handler: LambdaHandler
    on_failure: Destination | None = None
    recursive_loop: RecursiveLoop = "Terminate"
    max_retries: int = 0


class LocalLambda:
    """Registered functions, an async invoke queue, on-failure destinations and recursive loop detection."""

    def __init__(self) -> None:
        self.functions: dict[str, FunctionSpec] = {}
        self.queue: deque[Invocation] = deque()
        self.failures: list[dict[str, Any]] = []
        self.stopped: list[Invocation] = []
        self.deepest: dict[str, int] = {}
        self._running: list[Chain] = []

    def register(
        self,
        name: str,
        handler: LambdaHandler,
        *,
        on_failure: Destination | None = None,
        recursive_loop: RecursiveLoop = "Terminate",
        max_retries: int = 0,
    ) -> None:
        """Deploy ``handler`` as function ``name``; a failed async invoke is retried ``max_retries`` times (0 to 2),
        then its on-failure record goes to ``on_failure`` (a function's name or a :class:`QueueDestination`)."""
        if not 0 <= max_retries <= MAX_ASYNC_RETRIES:
            raise ValueError(f"max_retries must be 0 to {MAX_ASYNC_RETRIES}, got {max_retries}")
        self.functions[name] = FunctionSpec(handler, on_failure, recursive_loop, max_retries)

    @property
    def current_chain(self) -> Chain | None:
        """The chain of the invocation running now (None outside any function)."""
        return self._running[-1] if self._running else None

    def allows(self, function: str, chain: Chain) -> bool:
        """Whether Lambda would run ``function`` in ``chain`` (recursive loop detection)."""
        spec = self.functions[function]
        return spec.recursive_loop == "Allow" or chain.count(function) < MAX_CHAIN_INVOCATIONS

    @contextmanager
    def running(self, function: str, chain: Chain | None) -> Iterator[Chain]:
        """Run inside ``chain`` (a new one when None) as ``function``: what it invokes or queues continues it."""
        entered = (chain or Chain()).entering(function)
        self.deepest[function] = max(self.deepest.get(function, 0), entered.count(function))
        self._running.append(entered)
        try:
            yield entered
        finally:
            self._running.pop()

    def call(self, name: str, event: dict[str, Any], *, chain: Chain | None = None) -> Any:
        """Run function ``name`` synchronously with ``event`` (a new chain unless one is given)."""
        with self.running(name, chain):
            return self.functions[name].handler(event, LocalContext(name))

    def invoke(self, *, FunctionName: str, InvocationType: str = "RequestResponse", Payload: Any = b"{}") -> Any:
        """Invoke a function as boto3's ``lambda.invoke`` does (async: queued; sync: run now).

        A synchronous invoke whose function raises answers as Lambda does: ``FunctionError`` ``Unhandled``
        and Lambda's error payload (``errorMessage``, ``errorType``, ``stackTrace``).
        """
        name = FunctionName.rsplit(":", 1)[-1] if FunctionName.startswith("arn:") else FunctionName
        if name not in self.functions:
            raise CairnError(f"Function not found: {FunctionName}")
        raw = Payload.encode() if isinstance(Payload, str) else bytes(Payload)
        payload = json.loads(raw or b"{}")
        if InvocationType == "Event":
            self.queue.append(Invocation(name, payload, chain=self.current_chain or Chain()))
            return {"StatusCode": 202}
        try:
            result = self.call(name, payload, chain=self.current_chain)
        except (Exception, SimulatedCrash) as exc:
            failed = json.dumps(error_payload(exc)).encode()
            return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": io.BytesIO(failed)}
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
        """Run one async invocation; a failure is retried (the same request, in the same chain, queued again)
        while the function's ``max_retries`` allow, then becomes an on-failure record for the destination.

        An invocation that recursive loop detection stops does not run; it is kept in :attr:`stopped`.
        """
        spec = self.functions[invocation.function]
        if not self.allows(invocation.function, invocation.chain):
            self.stopped.append(invocation)
            return None
        context = LocalContext(invocation.function, aws_request_id=invocation.request_id)
        with self.running(invocation.function, invocation.chain) as chain:
            try:
                return spec.handler(invocation.payload, context)
            except (Exception, SimulatedCrash) as exc:
                record = on_failure_record(invocation, context, exc)
        if invocation.attempt <= spec.max_retries:
            self.queue.append(replace(invocation, attempt=invocation.attempt + 1))
            return None
        self.failures.append(record)
        if isinstance(spec.on_failure, QueueDestination):
            spec.on_failure.send(record)
        elif spec.on_failure:
            self.queue.append(Invocation(spec.on_failure, record, chain=chain))
        return None


def on_failure_record(invocation: Invocation, context: LocalContext, exc: BaseException) -> dict[str, Any]:
    """The record Lambda sends to an on-failure destination after an async invoke failed."""
    return failure_record(
        context.invoked_function_arn,
        invocation.request_id,
        invocation.payload,
        error_payload(exc),
        invoke_count=invocation.attempt,
    )


def error_payload(exc: BaseException) -> dict[str, Any]:
    """What Lambda answers for a function that raised ``exc``: its message, type and the end of its stack."""
    return {
        "errorMessage": describe(exc),
        "errorType": type(exc).__name__,
        "stackTrace": traceback.format_exception(exc)[-3:],
    }


def failure_record(
    function_arn: str, request_id: str, payload: Any, error: dict[str, Any], *, invoke_count: int = 1
) -> dict[str, Any]:
    """Lambda's on-failure destination record of async invocation ``request_id`` that failed with ``error``."""
    return {
        "version": "1.0",
        "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "requestContext": {
            "requestId": request_id,
            "functionArn": f"{function_arn}:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": invoke_count,
        },
        "requestPayload": payload,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": error,
    }
