"""The AWS durable execution SDK's local test runner: a durable function of N ``context.step(...)`` no-ops.

``DurableFunctionTestRunner`` (``aws-durable-execution-sdk-python-testing``) runs the handler in-process
against its own checkpoint service and, by default (as here), its in-memory execution store: each step is a
checkpoint call to that service, nothing reaches a disk. Timed: ``runner.run(...)``, from the execution's
start to its result. Runs in ``.bench/venvs/aws``; see ``_harness.py``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Measure, main


@contextmanager
def session(_arguments: argparse.Namespace) -> Iterator[tuple[Measure, dict[str, Any]]]:
    """One local test runner, an execution per measurement."""
    from aws_durable_execution_sdk_python.context import DurableContext, durable_step
    from aws_durable_execution_sdk_python.execution import InvocationStatus, durable_execution
    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

    logging.disable(logging.WARNING)

    @durable_step
    def noop(_step_context: Any, index: int) -> int:
        return index

    @durable_execution
    def handler(event: dict[str, Any], context: DurableContext) -> int:
        steps = int(event["steps"])
        for index in range(steps):
            context.step(noop(index), name=f"s{index}")
        return steps

    with DurableFunctionTestRunner(handler=handler) as runner:

        def measure(steps: int) -> float:
            started = time.perf_counter()
            result = runner.run(
                input=json.dumps({"steps": steps}), execution_timeout=900, execution_name=uuid.uuid4().hex
            )
            elapsed = time.perf_counter() - started
            if result.status is not InvocationStatus.SUCCEEDED or json.loads(result.result) != steps:
                raise RuntimeError(f"durable execution SDK: unexpected {result.status} {result.result!r}")
            return elapsed

        yield measure, {"store": "InMemoryExecutionStore (the runner's default)"}


if __name__ == "__main__":
    raise SystemExit(
        main(
            __doc__ or "",
            session,
            packages=("aws-durable-execution-sdk-python", "aws-durable-execution-sdk-python-testing"),
        )
    )
