"""The document-intake demo on the local stack: `cairn dev`, its HTTP API, a real worker kill, a resume.

    python -m document_intake.stack_demo [--port PORT] [--driver direct|stepfunctions]

Starts ``cairn dev`` (moto, the template's functions in worker processes, the HTTP API) on
free ports, starts one job per shipped sample over HTTP, shows each job's progress by phase
and page, kills the worker running one job's ``extract`` with SIGKILL once two pages are
saved, shows that job in ``error`` with its checkpoint, retries it with ``resume`` through
the API, and ends with a summary table. The server's own log goes to ``.cairn/dev-demo.log``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import urllib.request
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cairn.client import ApiClient, RequestFailed
from cairn.dev.process import DevProcessError, dev_process, free_port

from .sources import SAMPLES_DIR

PIPELINE = "document-intake"
VICTIM = "contract"
KILL_AFTER_PAGES = 2
PAGE_SECONDS = {"contract": 0.4}
"""Seconds the demo asks ``extract`` to pause after each page of a sample, so that the kill lands mid-phase."""
DEFAULT_PAGE_SECONDS = 0.1
LOG = Path(".cairn/dev-demo.log")
TERMINAL = ("complete", "error", "cancelled")
JOB_TIMEOUT = 60.0


class DemoError(Exception):
    """What went wrong, said in one line."""


def running_invocations(base_url: str) -> list[dict[str, Any]]:
    """What ``cairn dev`` runs now (``GET /_cairn/invocations``): function, process id, job and phase."""
    with urllib.request.urlopen(f"{base_url}/_cairn/invocations", timeout=10) as response:
        found: list[dict[str, Any]] = json.loads(response.read())
        return found


class Watcher:
    """Polls the jobs over the API and prints each change of phase, page or status once."""

    def __init__(self, api: ApiClient, job_ids: Sequence[str]) -> None:
        self.api = api
        self.job_ids = list(job_ids)
        self.seen: dict[str, str] = {}
        self.views: dict[str, dict[str, Any]] = {}
        self.started = time.monotonic()

    def poll(self) -> None:
        """Read every job once; print what changed."""
        for job_id in self.job_ids:
            view = self.api.get(job_id, include_state=True)
            self.views[job_id] = view
            line = describe(view)
            if self.seen.get(job_id) != line:
                self.seen[job_id] = line
                say(f"  {time.monotonic() - self.started:5.1f}s  {job_id:<14} {line}")

    def until(self, done: Any, timeout: float = JOB_TIMEOUT) -> None:
        """Poll until ``done()`` holds; DemoError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            self.poll()
            if done():
                return
            if time.monotonic() > deadline:
                raise DemoError(f"timed out after {timeout:.0f}s: {self.seen}")
            time.sleep(0.15)

    def status(self, job_id: str) -> str:
        """The last status seen of ``job_id``."""
        return str(self.views.get(job_id, {}).get("status", "unknown"))

    def pages_saved(self, job_id: str) -> int:
        """Pages in the last checkpoint seen of ``job_id``."""
        state = self.views.get(job_id, {}).get("state") or {}
        return len(state.get("results") or [])


def describe(view: dict[str, Any]) -> str:
    """A job's progress in a few words: status, phase, pages."""
    status, phase = view["status"], view.get("nextPhase")
    state = view.get("state") or {}
    pages, done = len(state.get("pages") or []), len(state.get("results") or [])
    if status == "complete":
        return "complete"
    if status == "error":
        return f"error at {phase}: {view.get('error')}"
    if phase == "extract" and pages:
        return f"{status:<8} extract  page {done}/{pages} saved"
    return f"{status:<8} {phase or '-'}"


def say(text: str = "") -> None:
    """Print a line at once."""
    print(text, flush=True)


def kill_extract_worker(base_url: str, job_id: str) -> int:
    """SIGKILL the worker process running ``extract`` of ``job_id``; returns its pid."""
    for invocation in running_invocations(base_url):
        if invocation.get("jobId") == job_id and invocation.get("phase") == "extract":
            pid = int(invocation["pid"])
            os.kill(pid, signal.SIGKILL)
            return pid
    raise DemoError(f"no worker is running extract of {job_id} (it finished before the kill?)")


def show_checkpoint(view: dict[str, Any]) -> None:
    """The errored job and its checkpoint, as the API shows them."""
    state = view.get("state") or {}
    written = view.get("checkpointCreatedAt")
    when = datetime.fromtimestamp(written / 1000, tz=UTC).isoformat(timespec="milliseconds") if written else "-"
    say(f"  status      {view['status']}: {view.get('error')}")
    say(f"  nextPhase   {view.get('nextPhase')}")
    say(f"  state       {len(state.get('results') or [])} of {len(state.get('pages') or [])} pages extracted")
    say(f"  createdAt   {written} ({when})")


def summary(views: dict[str, dict[str, Any]]) -> list[str]:
    """The summary table: job, status, phases, attempts, duration, checkpoint writes."""
    header = ("job", "status", "phases", "attempts", "duration", "checkpoint writes")
    rows = [header]
    for job_id, view in views.items():
        phases = view.get("phases") or []
        names = " > ".join(record["phase"] for record in phases)
        duration = (view["updatedAt"] - view["createdAt"]) / 1000
        rows.append(
            (job_id, view["status"], names, str(len(phases)), f"{duration:.1f}s", str(view.get("sequence", "")))
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    return ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]


def run(port: int, driver: str) -> int:
    """The demo; 0 when every job completed."""
    base_url = f"http://127.0.0.1:{port}"
    api = ApiClient(base_url)
    samples = sorted(path.stem for path in SAMPLES_DIR.glob("*.txt"))
    say(f"document-intake on the local stack: cairn dev ({driver} driver) at {base_url}, its log in {LOG}")
    started = time.monotonic()
    root = Path(__file__).resolve().parents[2]
    arguments = [
        "--driver",
        driver,
        "--no-reload",
        "--stack-name",
        "cairn-demo",
        "--template",
        str(root / "template.yaml"),
    ]
    with dev_process(LOG, *arguments, cwd=root, port=port):
        say(f"  cairn dev is up after {time.monotonic() - started:.1f}s")
        say()
        say(f"Starting {len(samples)} jobs with POST /jobs")
        job_ids = []
        for sample in samples:
            state = {"document": f"{sample}.txt", "page_seconds": PAGE_SECONDS.get(sample, DEFAULT_PAGE_SECONDS)}
            view = api.start(PIPELINE, state=state, job_id=f"demo-{sample}")
            job_ids.append(view["jobId"])
        victim = f"demo-{VICTIM}"
        watcher = Watcher(api, job_ids)
        watcher.until(lambda: watcher.pages_saved(victim) >= KILL_AFTER_PAGES or watcher.status(victim) in TERMINAL)
        pid = kill_extract_worker(base_url, victim)
        say(f"  kill -9 {pid}: the worker running extract of {victim}, after page {watcher.pages_saved(victim)}")
        watcher.until(lambda: watcher.status(victim) in TERMINAL)
        if watcher.status(victim) != "error":
            raise DemoError(f"{victim} ended {watcher.status(victim)}, not error, after its worker was killed")
        say()
        say(f"{victim} is in error; its checkpoint (GET /jobs/{victim}?includeState=true):")
        show_checkpoint(watcher.views[victim])
        say()
        say(f'Retrying {victim} with POST /jobs/{victim}/retry {{"mode": "resume"}}')
        api.retry(victim, mode="resume")
        watcher.until(lambda: all(watcher.status(job_id) in TERMINAL for job_id in job_ids))
        say()
        for line in summary({job_id: watcher.views[job_id] for job_id in job_ids}):
            say(line)
        failed = [job_id for job_id in job_ids if watcher.status(job_id) != "complete"]
    say()
    say(f"Done in {time.monotonic() - started:.1f}s; cairn dev stopped.")
    if failed:
        raise DemoError(f"not complete: {', '.join(failed)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 on success, 1 with the reason on stderr."""
    parser = argparse.ArgumentParser(prog="python -m document_intake.stack_demo", description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0, help="the API's port (default: a free one)")
    parser.add_argument("--driver", choices=("direct", "stepfunctions"), default="direct")
    arguments = parser.parse_args(argv)
    try:
        return run(arguments.port or free_port(), arguments.driver)
    except (DemoError, RequestFailed, DevProcessError) as exc:
        print(f"demo failed: {exc}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
