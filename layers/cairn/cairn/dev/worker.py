"""One Lambda execution environment: a process that imports a handler once and runs invocations one at a time.

    python -P path/to/cairn/dev/worker.py HANDLER REQUESTS_FD RESPONSES_FD

Once the handler is imported (Lambda's init phase) the worker writes ``{"ready": true}``
to ``RESPONSES_FD`` (``{"initError": ...}`` and exits when it cannot be imported). The parent
(:mod:`cairn.dev.environments`) then writes one JSON line per invocation to ``REQUESTS_FD``
and reads one JSON line back: ``{"ok": result}`` or ``{"error": {"errorMessage",
"errorType", "stackTrace"}}``. The handler's own
output (logs) goes to stdout and stderr, which the parent reads. The process
runs in the function's code folder with its environment, as Lambda starts one.
It imports nothing but the standard library, so it also runs on the runtime's Python with only a built
layer on the path (:mod:`cairn.dev.runtimes`).
A handler that cannot be imported fails the invocation waiting for it with
``Runtime.ImportModuleError``, as Lambda reports an init failure.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

Handler = Callable[[Any, Any], Any]


@dataclass
class WorkerContext:
    """The parts of Lambda's context object that handlers read, for one invocation."""

    function_name: str
    aws_request_id: str
    memory_limit_in_mb: int
    timeout_ms: int
    invoked_function_arn: str
    function_version: str = "$LATEST"
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        """Time left before the function's timeout."""
        return max(0, self.timeout_ms - int((time.monotonic() - self.started) * 1000))


def message(exc: BaseException) -> str:
    """``str(exc)``, else a placeholder when a handler's exception cannot be shown (as cairn.core.failures's;
    this module imports the standard library only)."""
    try:
        return str(exc)
    except Exception as error:
        return f"<unprintable {type(exc).__qualname__}: str() raised {type(error).__qualname__}>"


def error_payload(exc: BaseException, error_type: str | None = None) -> dict[str, Any]:
    """Lambda's error payload for an exception raised by (or while loading) a handler."""
    return {
        "errorMessage": message(exc) or type(exc).__name__,
        "errorType": error_type or type(exc).__name__,
        "stackTrace": traceback.format_exception(exc)[-3:],
    }


def load_handler(spec: str) -> Handler:
    """The function ``module.attribute`` names, imported from the current directory (the code folder)."""
    module_name, _, attribute = spec.rpartition(".")
    if not module_name:
        raise ImportError(f"Bad handler '{spec}': expected module.function")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    module = importlib.import_module(module_name)
    handler = getattr(module, attribute, None)
    if not callable(handler):
        raise ImportError(f"Handler '{attribute}' missing on module '{module_name}'")
    return handler  # type: ignore[no-any-return]


def _answer(responses: BinaryIO, message: dict[str, Any]) -> None:
    responses.write(json.dumps(message).encode() + b"\n")
    responses.flush()


def _run(handler: Handler, request: dict[str, Any]) -> dict[str, Any]:
    region = os.environ.get("AWS_REGION", "us-east-1")
    context = WorkerContext(
        request["functionName"],
        aws_request_id=request["requestId"],
        memory_limit_in_mb=int(request["memory"]),
        timeout_ms=int(request["timeoutMs"]),
        invoked_function_arn=f"arn:aws:lambda:{region}:{request.get('account', '000000000000')}:function:"
        f"{request['functionName']}",
    )
    try:
        result = handler(request["payload"], context)
    except Exception as exc:
        print(f"[ERROR] {type(exc).__name__}: {message(exc)}", file=sys.stderr)
        traceback.print_exc()
        return {"error": error_payload(exc)}
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    try:
        json.dumps(result)
    except (TypeError, ValueError) as exc:
        return {"error": error_payload(exc, "Runtime.MarshalError")}
    return {"ok": result}


def serve(spec: str, requests: BinaryIO, responses: BinaryIO) -> int:
    """Import the handler (init), say so, then answer invocations until the parent closes the requests pipe."""
    try:
        handler = load_handler(spec)
    except Exception as exc:
        traceback.print_exc()
        _answer(responses, {"initError": error_payload(exc, "Runtime.ImportModuleError")})
        return 1
    _answer(responses, {"ready": True})
    for line in requests:
        _answer(responses, _run(handler, json.loads(line)))
    return 0


def main(argv: list[str]) -> int:
    """Entry point: ``HANDLER REQUESTS_FD RESPONSES_FD``."""
    spec, requests_fd, responses_fd = argv
    with os.fdopen(int(requests_fd), "rb") as requests, os.fdopen(int(responses_fd), "wb") as responses:
        return serve(spec, requests, responses)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
