"""Benchmark: concurrency on the local stack (``cairn dev``), both drivers: jobs per second and per-phase latency.

``cairn dev`` runs the template on this machine (moto for DynamoDB, S3, SQS and Step Functions, each
function in up to ``--concurrency`` warm worker processes, the HTTP API). For each driver
(``direct``: each phase invokes the next; ``stepfunctions``: the template's state machine on moto's
engine) one stack is started, warmed with a few jobs, then 1, 10 and 100 jobs of the bundle's
``document-intake`` (fetch, split, extract, publish on one short page of inline text) are started at
once through the HTTP API by a thread pool, and polled (one listing a quarter second) until they end.

Jobs per second run from the first start request to the last job's completion (its ``updatedAt``).
Per-phase latency comes from the jobs' phase records: a phase's run is ``endedAt - startedAt``;
the hand-off before it is the gap from the previous phase's end (for the first phase, from the job's
creation) to its start: committing, scheduling, the Lambda invoke (or the state machine's step) and
the claim. Medians and 95th percentiles over the jobs of one run; timestamps are milliseconds.

Run: ``python -m benchmarks.concurrency`` (``--quick``: 1 and 5 jobs, direct driver only).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.common import Result, Table
from cairn.client import ApiClient, ApiError, ApiUnreachable
from cairn.dev.process import DevProcessError, dev_process

ROOT = Path(__file__).resolve().parents[1]
SUITE = "concurrency"
PIPELINE = "document-intake"
PHASES = ("fetch", "split", "extract", "publish")
TEXT = "Invoice INV-2041 from Acme Freight, dated 2024-06-01. Total due: EUR 1,250.00 within 30 days."
TERMINAL = ("complete", "error", "cancelled")
WORKERS = 4
"""``cairn dev --concurrency``: worker processes per function at most (its default)."""
START_THREADS = 32
START_ATTEMPTS = 5
POLL_SECONDS = 0.25
JOB_TIMEOUT = 150.0
WARM_UP_JOBS = 4


def say(message: str) -> None:
    """Progress on stderr."""
    print(f"[{SUITE}] {message}", file=sys.stderr, flush=True)


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile of ``values`` (linear between the nearest ranks; one value is itself)."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = fraction * (len(ordered) - 1)
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


@dataclass
class Spread:
    """Median and 95th percentile of some milliseconds, and how many there were."""

    median: float
    p95: float
    count: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread | None:
        """The spread of ``values``; None when there are none."""
        if not values:
            return None
        return cls(statistics.median(values), percentile(values, 0.95), len(values))


def spread_cell(spread: Spread | None) -> str:
    """``median / p95`` in milliseconds, or ``-``."""
    return "-" if spread is None else f"{spread.median:.0f} / {spread.p95:.0f}"


@dataclass
class Run:
    """What one run of ``jobs`` concurrent jobs on one driver measured."""

    driver: str
    jobs: int
    completed: int = 0
    failed: int = 0
    unfinished: int = 0
    wall_seconds: float = 0.0
    jobs_per_second: float = 0.0
    start_request_ms: Spread | None = None
    job_ms: Spread | None = None
    phase_ms: dict[str, Spread | None] = field(default_factory=dict)
    handoff_ms: dict[str, Spread | None] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    resets: int = 0


def start_job(api: ApiClient, job_id: str) -> tuple[float, int]:
    """Start one job; its request's ms (the last attempt's) and how many attempts were refused at the door.

    ``cairn dev``'s HTTP server (a ThreadingHTTPServer: a listen backlog of 5) can reset a connection
    when many arrive at once; such a start is sent again (a 409 then means the first one got through).
    """
    for attempt in range(START_ATTEMPTS):
        began = time.perf_counter()
        try:
            api.start(PIPELINE, {"text": TEXT}, job_id)
        except ApiUnreachable:
            if attempt + 1 == START_ATTEMPTS:
                raise
            time.sleep(0.1 * (attempt + 1))
            continue
        except ApiError as exc:
            if exc.status != HTTPStatus.CONFLICT or attempt == 0:
                raise
        return (time.perf_counter() - began) * 1000, attempt
    raise AssertionError("unreachable")


def start_jobs(api: ApiClient, job_ids: Sequence[str]) -> tuple[float, list[float], int]:
    """Start ``job_ids`` at once from a thread pool: the wall time before the first, each request's ms, resets."""
    threads = min(START_THREADS, len(job_ids))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        first = time.time()
        answers = list(pool.map(lambda job_id: start_job(api, job_id), job_ids))
    return first, [took for took, _ in answers], sum(resets for _, resets in answers)


def wait_for(api: ApiClient, job_ids: Sequence[str], timeout: float) -> dict[str, dict[str, Any]]:
    """The listing's summary of each job once all have ended, or when ``timeout`` has passed."""
    wanted = set(job_ids)
    deadline = time.monotonic() + timeout
    seen: dict[str, dict[str, Any]] = {}
    while True:
        for summary in api.list_all(limit=100)["jobs"]:
            if summary["jobId"] in wanted:
                seen[summary["jobId"]] = summary
        ended = [job_id for job_id in wanted if seen.get(job_id, {}).get("status") in TERMINAL]
        if len(ended) == len(wanted) or time.monotonic() > deadline:
            return seen
        time.sleep(POLL_SECONDS)


def phase_latencies(views: Sequence[dict[str, Any]]) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each phase's run times and the hand-offs before it (ms), over the complete jobs' phase records."""
    runs: dict[str, list[float]] = {phase: [] for phase in PHASES}
    handoffs: dict[str, list[float]] = {phase: [] for phase in PHASES}
    for view in views:
        previous_end = float(view["createdAt"])
        for record in view.get("phases") or []:
            phase = record["phase"]
            runs.setdefault(phase, []).append(float(record["endedAt"] - record["startedAt"]))
            handoffs.setdefault(phase, []).append(float(record["startedAt"]) - previous_end)
            previous_end = float(record["endedAt"])
    return runs, handoffs


def measure_run(api: ApiClient, driver: str, jobs: int) -> Run:
    """Start ``jobs`` jobs at once and wait for them: throughput and latencies."""
    run = Run(driver, jobs)
    job_ids = [f"bench-{driver[:2]}-{jobs}-{uuid.uuid4().hex[:8]}-{number:03d}" for number in range(jobs)]
    began = time.perf_counter()
    first_start, start_durations, run.resets = start_jobs(api, job_ids)
    summaries = wait_for(api, job_ids, JOB_TIMEOUT)
    run.wall_seconds = time.perf_counter() - began
    run.start_request_ms = Spread.of(start_durations)
    views = [api.get(job_id) for job_id in job_ids if summaries.get(job_id, {}).get("status") in TERMINAL]
    complete = [view for view in views if view["status"] == "complete"]
    run.completed = len(complete)
    run.failed = len(views) - len(complete)
    run.unfinished = jobs - len(views)
    run.errors = sorted({f"{view['jobId']}: {view.get('error')}" for view in views if view["status"] != "complete"})[:3]
    if complete:
        last = max(float(view["updatedAt"]) for view in complete) / 1000
        run.jobs_per_second = len(complete) / max(last - first_start, 1e-3)
        run.job_ms = Spread.of([float(view["updatedAt"] - view["createdAt"]) for view in complete])
        runs, handoffs = phase_latencies(complete)
        run.phase_ms = {phase: Spread.of(values) for phase, values in runs.items()}
        run.handoff_ms = {phase: Spread.of(values) for phase, values in handoffs.items()}
    return run


def dev_environment() -> dict[str, str]:
    """This environment with cairn (only) on the path, by absolute path."""
    return {**os.environ, "PYTHONPATH": str(ROOT / "layers" / "cairn")}


def measure_driver(driver: str, levels: Sequence[int], log_dir: Path) -> tuple[list[Run], float]:
    """One ``cairn dev`` with ``driver``, warmed up, then each level of concurrency: the runs, its start-up s."""
    arguments = ["--no-reload", "--driver", driver, "--concurrency", str(WORKERS)]
    began = time.perf_counter()
    runs: list[Run] = []
    with dev_process(log_dir / f"dev-{driver}.log", *arguments, cwd=ROOT, env=dev_environment()) as dev:
        ready = time.perf_counter() - began
        say(f"{driver}: cairn dev answered after {ready:.1f} s; warming up with {WARM_UP_JOBS} jobs")
        api = ApiClient(dev.base_url, timeout=60)
        warm = measure_run(api, driver, WARM_UP_JOBS)
        if warm.completed != WARM_UP_JOBS:
            raise RuntimeError(f"{driver}: the warm-up jobs did not complete: {warm.errors or 'timed out'}")
        for jobs in levels:
            run = measure_run(api, driver, jobs)
            say(
                f"{driver}: {jobs} jobs: {run.completed} complete, {run.failed} failed, {run.unfinished} unfinished "
                f"in {run.wall_seconds:.1f} s ({run.jobs_per_second:.1f} jobs/s)"
            )
            runs.append(run)
    return runs, ready


def throughput_table(runs: Sequence[Run]) -> Table:
    """Jobs per second and job latency, per driver and level."""
    rows = [
        [
            run.driver,
            str(run.jobs),
            f"{run.completed}/{run.jobs}" + (f" ({run.failed} failed)" if run.failed else ""),
            f"{run.jobs_per_second:.2f}",
            f"{run.wall_seconds:.1f}",
            spread_cell(run.start_request_ms),
            spread_cell(run.job_ms),
        ]
        for run in runs
    ]
    return Table(
        "Throughput: concurrent jobs of document-intake on cairn dev",
        ["driver", "jobs", "complete", "jobs/s", "wall s", "POST /jobs ms (median / p95)", "job ms (median / p95)"],
        rows,
        "jobs/s: complete jobs over the time from the first start request to the last completion (its updatedAt); "
        "wall s: from the first start to the poll that saw every job end; job ms: createdAt to updatedAt. "
        f"Each function runs in at most {WORKERS} worker processes (cairn dev --concurrency {WORKERS}).",
    )


def latency_table(runs: Sequence[Run]) -> Table:
    """Per-phase run time and the hand-off before each phase, median and p95."""
    rows = []
    for run in runs:
        for phase in PHASES:
            rows.append(
                [
                    run.driver,
                    str(run.jobs),
                    phase,
                    spread_cell(run.handoff_ms.get(phase)),
                    spread_cell(run.phase_ms.get(phase)),
                ]
            )
    return Table(
        "Per-phase latency (ms, median / p95)",
        ["driver", "jobs", "phase", "hand-off before it", "phase run"],
        rows,
        "From the phase records: run = endedAt - startedAt; hand-off = startedAt - the previous phase's endedAt "
        "(for fetch: - the job's createdAt): the commit, the next invoke (direct) or state machine step "
        "(stepfunctions), a worker and the claim. Millisecond timestamps, so a sub-millisecond run reads 0.",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, write ``benchmarks/results/latest/concurrency.json``; non-zero if something could not be measured."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 and 5 jobs, direct driver only (about 20 s)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    drivers = ["direct"] if args.quick else ["direct", "stepfunctions"]
    levels = [1, 5] if args.quick else [1, 10, 100]
    result = Result(
        SUITE,
        "Concurrency on the local stack",
        f"{', '.join(map(str, levels))} concurrent document-intake jobs on cairn dev, "
        f"{' and '.join(drivers)} driver{'s' if len(drivers) > 1 else ''}.",
    )
    result.versions = common.versions("moto", "boto3", "pydantic", "aws-lambda-powertools")
    runs: list[Run] = []
    startup: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="cairn-bench-concurrency-") as scratch:
        for driver in drivers:
            try:
                driver_runs, startup[driver] = measure_driver(driver, levels, Path(scratch))
            except (DevProcessError, RuntimeError, OSError, ApiError, ApiUnreachable) as exc:
                say(f"{driver}: could not measure: {exc}")
                result.unmeasured.append(f"{driver} driver: {str(exc).splitlines()[0]}")
                continue
            runs.extend(driver_runs)
            for run in driver_runs:
                if run.unfinished:
                    result.unmeasured.append(
                        f"{driver}, {run.jobs} jobs: {run.unfinished} did not end within {JOB_TIMEOUT:g} s"
                    )
                if run.resets:
                    result.notes.append(
                        f"{driver}, {run.jobs} jobs: cairn dev's HTTP server reset {run.resets} start connection(s) "
                        "(a ThreadingHTTPServer, listen backlog 5); they were sent again"
                    )
                if run.failed:
                    result.notes.append(f"{driver}, {run.jobs} jobs: {run.failed} failed: {'; '.join(run.errors)}")
    if runs:
        result.tables = [throughput_table(runs), latency_table(runs)]
    result.notes += [
        f"Machine: {common.machine()['cpus']} CPUs; cairn dev, its moto endpoint, the worker processes and this "
        "client share them, so these are figures of the local stack, not of Lambda.",
        f"Before each driver's runs, {WARM_UP_JOBS} jobs warm the workers up; a level above that starts more "
        f"workers (up to {WORKERS} a function), whose cold starts are in its figures.",
        "cairn dev start-up (s until GET /health answered): "
        + ", ".join(f"{driver} {seconds:.1f}" for driver, seconds in startup.items()),
    ]
    result.data = {
        "machine": common.machine(),
        "workers_per_function": WORKERS,
        "startup_seconds": startup,
        "runs": [
            {
                "driver": run.driver,
                "jobs": run.jobs,
                "completed": run.completed,
                "failed": run.failed,
                "unfinished": run.unfinished,
                "start_resets": run.resets,
                "wall_seconds": round(run.wall_seconds, 3),
                "jobs_per_second": round(run.jobs_per_second, 3),
                "job_ms": run.job_ms and vars(run.job_ms),
                "start_request_ms": run.start_request_ms and vars(run.start_request_ms),
                "phase_ms": {phase: spread and vars(spread) for phase, spread in run.phase_ms.items()},
                "handoff_ms": {phase: spread and vars(spread) for phase, spread in run.handoff_ms.items()},
            }
            for run in runs
        ],
    }
    result.notes.append(
        f"Load average (1 min) {load_before:.1f} at the start and {os.getloadavg()[0]:.1f} at the end "
        f"({common.machine()['cpus']} CPUs)."
    )
    common.write_result(result, started)
    return 1 if result.unmeasured else 0


if __name__ == "__main__":
    sys.exit(main())
