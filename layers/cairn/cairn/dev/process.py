"""``cairn dev`` as a child process on a free port: for scripts, demos and integration tests.

    with dev_process(Path("dev.log"), "--driver", "stepfunctions") as dev:
        ApiClient(dev.base_url).start("my-pipeline", state={...})

The child's output goes to ``log``; the context waits until ``GET /health`` answers, and at the
end stops the child as Ctrl-C does (SIGINT), killing it only if it does not stop in time.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import CairnError

BANNER_MARK = " deployed as stack "
"""Part of the banner's first line (``cairn dev: template.yaml deployed as stack ...``)."""
START_TIMEOUT = 90.0
STOP_TIMEOUT = 20.0


class DevProcessError(CairnError):
    """``cairn dev`` exited, or did not answer, before it was ready."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (the OS's choice)."""
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@dataclass
class DevProcess:
    """A ``cairn dev`` child: its process, its API's URL and its log file."""

    process: subprocess.Popen[bytes]
    base_url: str
    log: Path

    def output(self) -> str:
        """What the server printed so far."""
        return self.log.read_text(errors="replace")

    def answers(self) -> bool:
        """Whether ``GET /health`` answers now."""
        try:
            with urllib.request.urlopen(f"{self.base_url}/health", timeout=5) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def wait_ready(self, timeout: float = START_TIMEOUT) -> float:
        """Seconds until the API answered and the banner was printed; DevProcessError (with the log's end) when
        the child died or hung. (The API answers a moment before the banner, which says what runs where.)"""
        started = time.monotonic()
        while not (self.answers() and BANNER_MARK in self.output()):
            if self.process.poll() is not None:
                tail = "\n".join(self.output().splitlines()[-20:])
                raise DevProcessError(f"cairn dev exited with status {self.process.returncode}:\n{tail}")
            if time.monotonic() - started > timeout:
                raise DevProcessError(f"cairn dev did not answer within {timeout:g}s (its log: {self.log})")
            time.sleep(0.1)
        return time.monotonic() - started

    def stop(self) -> int:
        """Stop the child as Ctrl-C does; its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return int(self.process.returncode)


@contextmanager
def dev_process(
    log: Path,
    *arguments: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    port: int | None = None,
    python: str | Path | None = None,
) -> Iterator[DevProcess]:
    """``cairn dev ARGUMENTS --port PORT`` (a free port by default) running until the block ends, on ``python``
    (default: this interpreter)."""
    port = port or free_port()
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [str(python or sys.executable), "-m", "cairn", "dev", "--port", str(port), *arguments]
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=cwd, env=dict(env) if env is not None else None, stdout=output, stderr=subprocess.STDOUT
        )
    dev = DevProcess(process, f"http://127.0.0.1:{port}", log)
    try:
        dev.wait_ready()
        yield dev
    finally:
        dev.stop()
