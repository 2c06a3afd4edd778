"""Lambda on localhost: the template's functions, invoked synchronously or asynchronously, in worker processes.

An asynchronous invocation is queued and run as Lambda's async queue runs it: a failure
(an error, a timeout, a dead worker) is retried ``maximum_retry_attempts`` times (after 1 then
2 minutes, as Lambda waits), then its on-failure record goes to the function's destination: an
async invocation of its ``on_failure`` function, or a message to its ``on_failure_queue`` (the record's
JSON, as Lambda sends it to an SQS destination). Invocations of one function run at most ``concurrency``
at a time.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections import Counter
from collections.abc import Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ..testing.invoker import failure_record
from .environments import FunctionPool, Outcome
from .logs import DevLog

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from .models import FunctionConfig

ASYNC_RETRY_DELAYS = (60.0, 120.0)
"""Seconds Lambda waits before the first and the second retry of a failed async invocation."""
MAX_ASYNC_PAYLOAD = 256 * 1024
"""The largest payload of an asynchronous invocation (bytes)."""
MAX_SYNC_PAYLOAD = 6 * 1024 * 1024
"""The largest payload of a synchronous invocation (bytes)."""


class FunctionNotFound(LookupError):
    """No function of that name is deployed."""


class LambdaService:
    """The deployed functions and their pools; what the local Lambda API and the event sources call."""

    def __init__(
        self,
        functions: Mapping[str, FunctionConfig],
        environment: Mapping[str, str],
        log: DevLog,
        *,
        region: str,
        account: str,
        concurrency: int = 4,
        sqs: SQSClient | None = None,
    ) -> None:
        self.functions = dict(functions)
        self.sqs = sqs
        """The SQS client of the local stack: what sends an on-failure record to a queue destination."""
        self.log = log
        self.region = region
        self.account = account
        self.pools = {
            name: FunctionPool(
                function,
                {**environment, **function_environment(function, region), **_pinned(environment)},
                log.function_output,
                concurrency=concurrency,
            )
            for name, function in functions.items()
        }
        self._executor = ThreadPoolExecutor(
            max_workers=max(8, concurrency * len(functions)), thread_name_prefix="async"
        )
        self._pending = 0
        self._invoking: Counter[str] = Counter()
        self._started: Counter[str] = Counter()
        self._idle = threading.Condition()
        self._timers: list[threading.Timer] = []
        self._closed = False

    def function_arn(self, name: str) -> str:
        """The ARN of function ``name``."""
        return f"arn:aws:lambda:{self.region}:{self.account}:function:{name}"

    def resolve(self, reference: str) -> str:
        """The function a ``FunctionName`` names (a name, a full or partial ARN, a qualifier); FunctionNotFound."""
        parts = reference.split(":")
        if reference.startswith("arn:"):
            name = parts[6] if len(parts) > 6 else reference
        elif len(parts) >= 3 and parts[1] == "function":
            name = parts[2]
        else:
            name = parts[0]
        if name not in self.pools:
            raise FunctionNotFound(f"Function not found: {self.function_arn(name)}")
        return name

    def invoke(self, name: str, payload: Any, *, request_id: str | None = None) -> Outcome:
        """Run ``name`` with ``payload`` now and return what it returned."""
        with self._idle:
            self._invoking[name] += 1
            self._started[name] += 1
        try:
            outcome = self.pools[name].invoke(payload, request_id)
        finally:
            with self._idle:
                self._invoking[name] -= 1
        if outcome.failed:
            message = outcome.payload.get("errorMessage") if isinstance(outcome.payload, dict) else outcome.payload
            self.log.say(self.log.short_name(name), f"failed: {message}", "ERROR")
        return outcome

    def invoke_async(self, name: str, payload: Any) -> str:
        """Queue an asynchronous invocation of ``name``; returns its request id."""
        request_id = str(uuid.uuid4())
        self._submit(name, payload, request_id, 1)
        return request_id

    def _submit(self, name: str, payload: Any, request_id: str, attempt: int) -> None:
        with self._idle:
            if self._closed:
                return
            self._pending += 1
        self._executor.submit(self._run_async, name, payload, request_id, attempt)

    def _run_async(self, name: str, payload: Any, request_id: str, attempt: int) -> None:
        try:
            outcome = self.invoke(name, payload, request_id=request_id)
            if outcome.failed:
                self._after_failure(name, payload, request_id, attempt, outcome)
        except Exception as exc:  # a pool shut down under it: nothing to deliver any more
            self.log.say("lambda", f"{self.log.short_name(name)}: invocation dropped: {exc}", "WARNING")
        finally:
            with self._idle:
                self._pending -= 1
                self._idle.notify_all()

    def _after_failure(self, name: str, payload: Any, request_id: str, attempt: int, outcome: Outcome) -> None:
        function = self.functions[name]
        if attempt <= min(function.maximum_retry_attempts, len(ASYNC_RETRY_DELAYS)):
            delay = ASYNC_RETRY_DELAYS[attempt - 1]
            self.log.say(self.log.short_name(name), f"async retry {attempt} in {delay:g}s", "WARNING")
            with self._idle:
                self._pending += 1  # the retry is pending while it waits
            timer = threading.Timer(delay, self._retry, args=(name, payload, request_id, attempt + 1))
            timer.daemon = True
            self._timers.append(timer)
            timer.start()
            return
        if function.on_failure:
            record = failure_record(self.function_arn(name), request_id, payload, outcome.payload, invoke_count=attempt)
            self.log.say(self.log.short_name(name), f"on-failure record to {self.log.short_name(function.on_failure)}")
            self.invoke_async(function.on_failure, record)
        elif function.on_failure_queue:
            self._to_queue(name, function.on_failure_queue, request_id, payload, outcome, attempt)

    def _to_queue(
        self, name: str, queue_url: str, request_id: str, payload: Any, outcome: Outcome, attempt: int
    ) -> None:
        """Send the on-failure record of a failed async invocation of ``name`` to the queue at ``queue_url``."""
        short, queue = self.log.short_name(name), queue_url.rsplit("/", 1)[-1]
        if self.sqs is None:
            self.log.say(short, f"on-failure record to {queue} dropped: no SQS client", "WARNING")
            return
        record = failure_record(self.function_arn(name), request_id, payload, outcome.payload, invoke_count=attempt)
        try:
            self.sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(record))
        except Exception as exc:  # the queue is gone, or the endpoint is shutting down: Lambda would drop it too
            self.log.say(short, f"on-failure record to {queue} dropped: {exc}", "WARNING")
            return
        self.log.say(short, f"on-failure record to the queue {queue}", "WARNING")

    def _retry(self, name: str, payload: Any, request_id: str, attempt: int) -> None:
        with self._idle:
            self._pending -= 1
        self._submit(name, payload, request_id, attempt)

    def running(self) -> list[dict[str, Any]]:
        """The invocations running now, oldest first."""
        running = [invocation for pool in self.pools.values() for invocation in list(pool.running.values())]
        return [invocation.describe() for invocation in sorted(running, key=lambda item: item.started)]

    def pending(self) -> int:
        """Asynchronous invocations queued, running or waiting for a retry."""
        with self._idle:
            return self._pending

    def started(self, excluding: Collection[str] = ()) -> int:
        """Invocations started so far (synchronous ones and runs of asynchronous ones), but of ``excluding``."""
        with self._idle:
            return sum(count for name, count in self._started.items() if name not in excluding)

    def busy(self, excluding: Collection[str] = ()) -> bool:
        """Whether an invocation runs now (but of ``excluding``), or an asynchronous one is queued or waiting."""
        with self._idle:
            return self._pending > 0 or any(count for name, count in self._invoking.items() if name not in excluding)

    def warm(self) -> dict[str, dict[str, Any]]:
        """Start one environment of each function, one per CPU at a time; the init error of each one that failed.

        Imports are CPU-bound: started all at once on a few CPUs, each would take as long as all of them
        and outlast Lambda's init timeout.
        """
        if not self.pools:
            return {}
        parallel = min(len(self.pools), os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="warm") as warming:
            errors = dict(zip(self.pools, warming.map(FunctionPool.warm, self.pools.values()), strict=True))
        return {name: error for name, error in errors.items() if error is not None}

    def retire(self) -> None:
        """Every function gets new environments for its next invocation (the code changed)."""
        for pool in self.pools.values():
            pool.retire()

    def hold(self) -> None:
        """Every function keeps to the environments of the code it runs (a change was refused), until retired."""
        for pool in self.pools.values():
            pool.hold()

    def close(self) -> None:
        """Stop every worker; queued invocations are dropped."""
        with self._idle:
            self._closed = True
        for timer in self._timers:
            timer.cancel()
        for pool in self.pools.values():
            pool.close()
        self._executor.shutdown(wait=False, cancel_futures=True)


PINNED_VARIABLES = ("AWS_ENDPOINT_URL",)
"""What the local stack sets for every function whatever the template says (the template's is for AWS)."""


def _pinned(environment: Mapping[str, str]) -> dict[str, str]:
    return {name: environment[name] for name in PINNED_VARIABLES if name in environment}


def function_environment(function: FunctionConfig, region: str) -> dict[str, str]:
    """The variables Lambda sets for a function, and the function's own (from the template)."""
    return {
        "AWS_LAMBDA_FUNCTION_NAME": function.name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function.name}",
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "LAMBDA_TASK_ROOT": str(function.code_uri),
        "_HANDLER": function.handler,
        **function.environment,
    }


def init_failure(function: FunctionConfig, error: Mapping[str, Any]) -> str:
    """A function whose worker did not start, with its handler and Lambda's init error, on one line."""
    message = " ".join(str(error.get("errorMessage", "")).split())
    return (
        f"function {function.logical_id} ({function.name}) does not start: its handler {function.handler} "
        f"in {function.code_uri} fails with {error.get('errorType', 'Runtime.InitError')}: {message}"
    )
