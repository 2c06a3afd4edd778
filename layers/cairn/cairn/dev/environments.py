"""Execution environments: each function's invocations run in worker processes, one invocation at a time.

An :class:`ExecutionEnvironment` is one worker process (:mod:`cairn.dev.worker`) with the
function's handler, code folder, environment and memory. An invocation that outlives the
function's timeout gets its process killed, as Lambda kills it ("Task timed out"); a process
that dies (``kill -9``, ``os._exit``) fails the invocation it was running ("Runtime exited")
and never the server. A :class:`FunctionPool` keeps a function's warm environments, starts new
ones up to its concurrency, and retires them all when the code changes (while a change is refused, it
holds: no new one starts while one that runs the code loaded before is alive).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any

from .runtimes import worker_launch
from .worker import error_payload

if TYPE_CHECKING:
    from .models import FunctionConfig

INIT_TIMEOUT = 10.0
"""Seconds a worker may take to import its handler (Lambda's init phase), not counted in the function's timeout."""

OutputSink = Callable[[str, str], None]
"""Receives ``(function name, line)`` for each line a worker prints."""


@dataclass(frozen=True)
class Outcome:
    """What an invocation returned: its result, or Lambda's error payload (``error`` names the kind)."""

    payload: Any
    error: str | None = None
    duration: float = 0.0

    @property
    def failed(self) -> bool:
        """Whether the function failed (raised, timed out or died)."""
        return self.error is not None


@dataclass
class Running:
    """An invocation being run now, for ``GET /_cairn/invocations``."""

    function: str
    request_id: str
    pid: int
    payload: Any
    started: float = field(default_factory=time.time)

    def describe(self) -> dict[str, Any]:
        """The invocation as JSON: its function, request id, process id, job id and age."""
        job = self.payload.get("jobId") if isinstance(self.payload, dict) else None
        phase = self.payload.get("phase") if isinstance(self.payload, dict) else None
        return {
            "function": self.function,
            "requestId": self.request_id,
            "pid": self.pid,
            "jobId": job,
            "phase": phase,
            "seconds": round(time.time() - self.started, 3),
        }


class WorkerGone(Exception):
    """The worker process died while idle: its request could not be sent."""


class ExecutionEnvironment:
    """One worker process for one function."""

    def __init__(self, function: FunctionConfig, environment: Mapping[str, str], output: OutputSink) -> None:
        self.function = function
        self.generation = 0
        requests_read, self._requests = os.pipe()
        self._responses, responses_write = os.pipe()
        launch, variables = worker_launch(function, environment)
        self.process = subprocess.Popen(
            [*launch, function.handler, str(requests_read), str(responses_write)],
            cwd=function.code_uri,
            env=variables,
            pass_fds=(requests_read, responses_write),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C in the terminal stops the server, which stops its workers
        )
        os.close(requests_read)
        os.close(responses_write)
        self._buffer = b""
        self._ended = False
        self._ready = False
        """Whether the worker closed its end of the responses pipe (it died)."""
        threading.Thread(target=self._forward, args=(self.process.stdout, output), daemon=True).start()

    @property
    def pid(self) -> int:
        """The worker's process id."""
        return self.process.pid

    @property
    def alive(self) -> bool:
        """Whether the worker process still runs."""
        return self.process.poll() is None

    def _forward(self, stream: IO[bytes] | None, output: OutputSink) -> None:
        if stream is None:
            return
        for raw in stream:
            output(self.function.name, raw.decode("utf-8", "replace").rstrip("\n"))

    def initialise(self) -> dict[str, Any] | None:
        """None once the handler is imported; else the error payload of a failed or overlong init."""
        if self._ready:
            return None
        line = self._read_line(time.monotonic() + INIT_TIMEOUT)
        if line is None:
            self.kill()
            return error_payload(TimeoutError(f"Init phase did not end within {INIT_TIMEOUT:g}s"), "Runtime.InitError")
        answer = json.loads(line)
        if "initError" in answer:
            self.kill()
            error: dict[str, Any] = answer["initError"]
            return error
        self._ready = True
        return None

    def invoke(self, request_id: str, payload: Any) -> Outcome:
        """Run one invocation; kill the worker when it outlives the function's timeout (init not counted)."""
        failed_init = self.initialise()
        if failed_init is not None:
            return Outcome(failed_init, "Unhandled")
        started = time.monotonic()
        request = {
            "requestId": request_id,
            "functionName": self.function.name,
            "memory": self.function.memory,
            "timeoutMs": int(self.function.timeout * 1000),
            "payload": payload,
        }
        try:
            os.write(self._requests, json.dumps(request).encode() + b"\n")
        except OSError as exc:
            raise WorkerGone(str(exc)) from exc
        deadline = started + self.function.timeout
        line = self._read_line(deadline)
        duration = time.monotonic() - started
        if line is None:
            if not self._ended:
                self.kill()
                stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
                message = f"{stamp} {request_id} Task timed out after {self.function.timeout:.2f} seconds"
                return Outcome({"errorMessage": message, "errorType": "Sandbox.Timedout"}, "Unhandled", duration)
            return Outcome(self._exit_error(), "Unhandled", duration)
        answer = json.loads(line)
        if "error" in answer:
            return Outcome(answer["error"], "Unhandled", duration)
        return Outcome(answer.get("ok"), None, duration)

    def _read_line(self, deadline: float) -> bytes | None:
        """The worker's next response line; None when it died or the deadline passed."""
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self._responses], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(self._responses, 1 << 16)
            if not chunk:
                self._ended = True
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _exit_error(self) -> dict[str, Any]:
        code = self.process.wait()
        if code < 0:
            name = signal.Signals(-code).name.removeprefix("SIG").lower().replace("kill", "killed")
            reason = f"signal: {name}"
        else:
            reason = f"exit status {code}"
        return error_payload(RuntimeError(f"Runtime exited with error: {reason}"), "Runtime.ExitError")

    def kill(self) -> None:
        """Kill the worker at once (SIGKILL), as Lambda ends an environment."""
        if self.alive:
            self.process.kill()
        self.process.wait()

    def close(self) -> None:
        """Stop the worker and release its pipes."""
        self.kill()
        for fd in (self._requests, self._responses):
            with contextlib.suppress(OSError):
                os.close(fd)


class FunctionPool:
    """A function's execution environments: warm ones reused, new ones started up to ``concurrency``."""

    def __init__(
        self, function: FunctionConfig, environment: Mapping[str, str], output: OutputSink, *, concurrency: int
    ) -> None:
        self.function = function
        self.environment = dict(environment)
        self.output = output
        self.concurrency = concurrency
        self.generation = 0
        self.running: dict[str, Running] = {}
        self._idle: list[ExecutionEnvironment] = []
        self._started: list[ExecutionEnvironment] = []
        self._busy = 0
        self._closed = False
        self._held = False
        self._lock = threading.Condition()

    def _holding(self) -> bool:
        """Whether a new environment must wait: the pool is held and one of the current code still runs."""
        return self._held and any(started.alive and started.generation == self.generation for started in self._started)

    def _acquire(self) -> ExecutionEnvironment:
        with self._lock:
            while not self._idle and (self._busy >= self.concurrency or self._holding()) and not self._closed:
                self._lock.wait()
            if self._closed:
                raise RuntimeError(f"{self.function.name} is shut down")
            self._busy += 1
            while self._idle:
                environment = self._idle.pop()
                if environment.alive and environment.generation == self.generation:
                    return environment
                environment.close()
            generation = self.generation
        try:
            environment = ExecutionEnvironment(self.function, self.environment, self.output)
        except BaseException:
            self._release(None)
            raise
        environment.generation = generation
        with self._lock:
            self._started = [started for started in self._started if started.alive]
            self._started.append(environment)
        return environment

    def _release(self, environment: ExecutionEnvironment | None) -> None:
        with self._lock:
            self._busy -= 1
            if environment is not None:
                if environment.alive and environment.generation == self.generation and not self._closed:
                    self._idle.append(environment)
                else:
                    environment.close()
            self._lock.notify()

    def invoke(self, payload: Any, request_id: str | None = None) -> Outcome:
        """Run one invocation in a warm or a new environment (waits while ``concurrency`` are busy)."""
        request_id = request_id or str(uuid.uuid4())
        for _ in range(2):  # a worker that died while idle is replaced once
            environment = self._acquire()
            with self._lock:
                self.running[request_id] = Running(self.function.name, request_id, environment.pid, payload)
            try:
                outcome = environment.invoke(request_id, payload)
            except WorkerGone:
                environment.close()
                continue
            finally:
                with self._lock:
                    self.running.pop(request_id, None)
                self._release(environment)
            return outcome
        raise RuntimeError(f"{self.function.name}: could not start a worker")

    def warm(self) -> dict[str, Any] | None:
        """Start one environment and import its handler ahead of the first invocation.

        None when it is ready; else Lambda's error payload of the failed init (the handler does not
        import, or its process cannot start: no code folder, say).
        """
        try:
            environment = self._acquire()
        except OSError as exc:
            return error_payload(exc, "Runtime.InitError")
        try:
            return environment.initialise()
        finally:
            self._release(environment)

    def retire(self) -> None:
        """New invocations get new environments (new code); the idle ones stop now, busy ones when done."""
        with self._lock:
            self.generation += 1
            self._held = False
            idle, self._idle = self._idle, []
            self._lock.notify_all()
        for environment in idle:
            environment.close()

    def hold(self) -> None:
        """Start no new environment while one of the current code runs (the code on disk was refused):
        invocations wait for a warm one instead, until :meth:`retire`."""
        with self._lock:
            self._held = True

    def close(self) -> None:
        """Stop every environment, busy ones too; invocations waiting for one fail."""
        with self._lock:
            self._closed = True
            self._idle = []
            started, self._started = self._started, []
            self._lock.notify_all()
        for environment in started:
            environment.kill()
