"""``cairn dev`` in a child process on free ports, for the tests that drive it over HTTP."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cairn.client import ApiClient
from cairn.dev.process import DevProcess, dev_process

ROOT = Path(__file__).resolve().parents[2]
TERMINAL = ("complete", "error", "cancelled")
HUNG = 120.0
"""Seconds after which a wait here calls the stack hung: a safety net (a busy machine is slow, never this slow)."""


class DevStack(DevProcess):
    """A running ``cairn dev`` and what the tests ask of it: its API, its admin routes, its jobs."""

    @property
    def api(self) -> ApiClient:
        """An API client acting as the server's default identity."""
        return ApiClient(self.base_url)

    def admin(self, path: str) -> Any:
        """``GET /_cairn/<path>``, parsed."""
        with urllib.request.urlopen(f"{self.base_url}/_cairn/{path}", timeout=HUNG) as response:
            return json.loads(response.read())

    def wait_until(
        self, job_id: str, condition: Callable[[dict[str, Any]], bool], timeout: float = HUNG
    ) -> dict[str, Any]:
        """The job (with its state) once ``condition`` holds of it; fails the test after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        view: dict[str, Any] = {}
        while time.monotonic() < deadline:
            view = self.api.get(job_id, include_state=True)
            if condition(view):
                return view
            time.sleep(0.05)
        raise AssertionError(f"{job_id} still {view.get('status')} after {timeout}s:\n{self.output()[-3000:]}")

    def wait_for(self, job_id: str, statuses: Sequence[str] = TERMINAL, timeout: float = HUNG) -> dict[str, Any]:
        """The job once its status is one of ``statuses``; fails the test after ``timeout`` seconds."""
        return self.wait_until(job_id, lambda view: view["status"] in statuses, timeout)

    def phases(self, job_id: str) -> list[dict[str, Any]]:
        """Every phase record of the job's current run, oldest first, paged from ``GET /jobs/{id}/history``.

        A job's view holds only its newest records (its ``historyCursor`` reads on); this reads them all.
        """
        records: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            page = self.api.history(job_id, limit=50, cursor=cursor)
            records += [write["record"] for write in page["writes"] if write.get("record")]
            cursor = page.get("cursor")
            if cursor is None:
                return records[::-1]

    def running(self, job_id: str, phase: str, timeout: float = HUNG) -> dict[str, Any]:
        """The invocation running ``phase`` of ``job_id``, once one is."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for invocation in self.admin("invocations"):
                if invocation.get("jobId") == job_id and invocation.get("phase") == phase:
                    return dict(invocation)
            time.sleep(0.05)
        raise AssertionError(f"no worker ran {phase} of {job_id} within {timeout}s")


def environment() -> dict[str, str]:
    """This environment with cairn (only) on the path, by absolute path: the commands run in other folders."""
    return {**os.environ, "PYTHONPATH": str(ROOT / "layers" / "cairn")}


def cairn(
    *arguments: str, cwd: Path = ROOT, variables: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the ``cairn`` command (this interpreter's) with more environment ``variables``; what it printed."""
    command = [sys.executable, "-m", "cairn", *arguments]
    env = {**environment(), **(variables or {})}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


@contextmanager
def dev_stack(log: Path, *arguments: str, cwd: Path = ROOT) -> Iterator[DevStack]:
    """``cairn dev`` started with ``arguments`` (and ``--no-reload`` unless ``--reload``) on a free port."""
    reload = "--reload" in arguments
    options = [argument for argument in arguments if argument != "--reload"]
    with dev_process(log, *([] if reload else ["--no-reload"]), *options, cwd=cwd, env=environment()) as dev:
        yield DevStack(dev.process, dev.base_url, dev.log)


def scratch_project(folder: Path, pipelines: Sequence[str] = ("sleepy",)) -> Path:
    """A copy of this bundle with test ``pipelines`` added (its template synced by ``cairn template sync``).

    Each ``NAME`` is ``tests/local/NAME_pipeline.py``, copied as ``functions/NAME/pipeline.py``;
    ``layers`` and ``statemachine`` link to this bundle's (the layer's build, the state machine's definition).
    """
    shutil.copy(ROOT / "template.yaml", folder / "template.yaml")
    shutil.copytree(ROOT / "functions", folder / "functions", ignore=shutil.ignore_patterns("__pycache__"))
    registry = folder / "functions" / "pipelines.py"
    text = registry.read_text()
    anchor = "from document_intake.pipeline import pipeline as document_intake\n"
    for name in pipelines:
        package = folder / "functions" / name
        package.mkdir()
        (package / "__init__.py").write_text("")
        shutil.copy(Path(__file__).with_name(f"{name}_pipeline.py"), package / "pipeline.py")
        text = text.replace(anchor, f"{anchor}from {name}.pipeline import pipeline as {name}\n")
        text = text.replace("        document_intake,\n", f"        document_intake,\n        {name},\n")
    registry.write_text(text)
    synced = cairn("template", "sync", "--root", str(folder), cwd=folder)
    assert synced.returncode == 0, synced.stderr
    for shared in ("layers", "statemachine"):
        (folder / shared).symlink_to(ROOT / shared, target_is_directory=True)
    return folder
