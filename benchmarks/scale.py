"""Benchmark suite "scale": a load test of N jobs on moto that checks the measured side of docs/SCALE.md.

N jobs (10,000 by default) of a four-phase no-op pipeline run to completion on
:class:`~cairn.aws.dynamodb.DynamoDBStorage` on in-process moto (under
:func:`cairn.dev.moto_speedups.proportional_moto`, so moto's time per request does not grow with the
table), one owner, the inline scheduler,
each with 1 KB of incompressible state (random text). Every ``N / SAMPLES``-th job runs under
:class:`benchmarks.dynamodb_meter.DynamoDBMeter`: the write and read units of its start, its middle
transitions and its finish, index writes included. Then, at N jobs in the table:

- the index keys the jobs were spread over (the hottest key's share against an even spread);
- the first page of a listing (50 jobs): requests, read units per job listed, client CPU (this
  process's CPU outside moto's request handler) and CPU with moto's share;
- the first and second pages of two filters that match about 1% of the owner's jobs: the running
  ones (the ``STALLED`` left unclaimed) and pipeline ``RARE`` (every ``RARE_EVERY``-th job), the same
  figures each;
- a count of the owner's jobs per status: requests, read units, whether it was exact;
- the sweep over ``STALLED`` running jobs left unclaimed: read units per running job it reads;
- the throughput of this one process (jobs and transitions a second, the meter off).

From these figures and the published quotas, :mod:`benchmarks.scale_model` writes docs/SCALE.md.

Run: ``python -m benchmarks.scale [--jobs N]`` (``make scale``; ``make test`` runs a quick slice).
"""

from __future__ import annotations

import argparse
import functools
import secrets
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from benchmarks.common import Result, Table, Target, git_commit, machine, versions, write_result
from benchmarks.cost import PHASES, TABLE, measure_job, moto_backend, noop_pipeline, progress
from benchmarks.dynamodb_meter import DynamoDBMeter, Figures
from benchmarks.overhead import MotoClock
from benchmarks.scale_model import COUNT_READ_UNITS, FILTERED_CPU_MS, FILTERED_UNITS_PER_JOB, Measured, render
from cairn import InlineScheduler, JobStatus, Pipeline, advance_phase, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.listing import JobFilter
from cairn.dev.moto_speedups import proportional_moto

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

SUITE = "scale"
JOBS = 10_000
SAMPLES = 40
STALLED = 100
OWNER = "scale-owner"
STATE_BYTES = 1024
VERSIONED = ("boto3", "botocore", "moto")
#: The pipeline of one job in ``RARE_EVERY``: what the pipeline filter is measured on.
RARE = "rare-intake"
RARE_EVERY = 100


class Clock:
    """Milliseconds the stores read; the load test moves it past the sweep's idle time."""

    def __init__(self) -> None:
        self.now_ms = int(time.time() * 1000)

    def __call__(self) -> int:
        return self.now_ms


def incompressible_state(size: int = STATE_BYTES) -> dict[str, str]:
    """A state of ``size`` bytes as JSON of random hexadecimal text (4 bits a character: gzip keeps about half)."""
    overhead = len('{"blob":""}')
    return {"blob": secrets.token_hex(size)[: size - overhead]}


@dataclass
class StepCosts:
    """Write and read units per step, over the metered jobs (every figure kept, for its spread)."""

    start: list[float] = field(default_factory=list)
    middle: list[float] = field(default_factory=list)
    finish: list[float] = field(default_factory=list)
    reads: list[float] = field(default_factory=list)
    per_job: list[float] = field(default_factory=list)

    def add(self, start: Figures, middle: list[Figures], finish: Figures) -> None:
        self.per_job.append(start.write_units + sum(step.write_units for step in middle) + finish.write_units)
        self.start.append(start.write_units)
        self.middle.extend(step.write_units for step in middle)
        self.finish.append(finish.write_units)
        self.reads.extend(step.read_units for step in [start, *middle, finish])


def index_spread(client: DynamoDBClient) -> dict[str, dict[str, float]]:
    """Per index key (``owner`` of ``Listing``, ``sweepKey`` of ``Stalled``): how many partitions the jobs use, the
    hottest one over the mean."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    paginator = client.get_paginator("scan")
    for page in paginator.paginate(
        TableName=TABLE, ProjectionExpression="sk, #o, sweepKey", ExpressionAttributeNames={"#o": "owner"}
    ):
        for item in page["Items"]:
            if item["sk"]["S"] != "JOB":
                continue
            for name in ("owner", "sweepKey"):
                if name in item:
                    counts[name][item[name]["S"]] += 1
    spread = {}
    for name, counter in counts.items():
        if counter:
            mean = statistics.mean(counter.values())
            spread[name] = {"keys": len(counter), "hottest_over_mean": max(counter.values()) / mean}
    return spread


def bound_scheduler(pipeline: Pipeline[Any], storage: DynamoDBStorage) -> InlineScheduler:
    """An inline scheduler that advances ``pipeline``'s jobs in ``storage``."""
    scheduler = InlineScheduler()
    scheduler.bind(
        lambda job_id, **advance: advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, **advance)
    )
    return scheduler


def timed_cpu(action: Callable[[], Any], moto: MotoClock) -> tuple[Any, float, float]:
    """``action``'s result, the CPU seconds this process spent on it, and those outside moto (the client's)."""
    started, inside = time.process_time(), moto.cpu
    result = action()
    spent = time.process_time() - started
    return result, spent, spent - (moto.cpu - inside)


def filtered_pages(
    storage: DynamoDBStorage, meter: DynamoDBMeter, moto: MotoClock, where: JobFilter, label: str
) -> list[dict[str, Any]]:
    """The first two pages of 50 of a filtered listing: what each cost (the meter on)."""
    pages: list[dict[str, Any]] = []
    cursor: str | None = None
    for number in (1, 2):
        meter.take()
        page, cpu, client_cpu = timed_cpu(
            functools.partial(storage.list_page, where=where, limit=50, cursor=cursor), moto
        )
        figures = meter.take()
        if not page.jobs or not all(where.matches(summary) for summary in page.jobs):
            raise RuntimeError(f"the {label} filter listed {len(page.jobs)} jobs, not all of them matching")
        pages.append(
            {
                "filter": label,
                "page": number,
                "jobs": len(page.jobs),
                "requests": figures.read_requests,
                "read_units": figures.read_units,
                "item_reads": figures.dynamodb["BatchGetItem"],
                "client_cpu_ms": client_cpu * 1000,
                "cpu_ms": cpu * 1000,
            }
        )
        cursor = page.cursor
        if cursor is None:
            break
    return pages


def measure(jobs: int, samples: int, stalled: int) -> Measured:
    """Run the load test: ``jobs`` jobs, ``samples`` of them metered, ``stalled`` left running for the sweep."""
    clock = Clock()
    pipeline = noop_pipeline()
    rare = noop_pipeline(RARE)
    every = max(1, jobs // max(1, samples))
    costs = StepCosts()
    moto = MotoClock()
    with proportional_moto(), moto_backend() as aws, moto.installed():
        client = aws.dynamodb
        storage = DynamoDBStorage(TABLE, owner=OWNER, client=client, clock=clock)
        meter = DynamoDBMeter(client)
        meter.enabled = False
        unmetered_seconds, unmetered_jobs = 0.0, 0
        for number in range(jobs):
            job_id = f"job-{number:06d}"
            state = incompressible_state()
            if number % every == 0:
                meter.enabled = True
                cost = measure_job(storage, pipeline, meter, job_id, state)
                meter.enabled = False
                costs.add(cost.start, cost.middle, cost.finish)
            else:
                started = time.perf_counter()
                kind = rare if number % RARE_EVERY == RARE_EVERY // 2 else pipeline
                scheduler = bound_scheduler(kind, storage)
                run_pipeline(job_id, kind, storage=storage, scheduler=scheduler, initial_state=state)
                scheduler.drain()
                unmetered_seconds += time.perf_counter() - started
                unmetered_jobs += 1
            clock.now_ms += 10
            if number and number % max(1, jobs // 10) == 0:
                progress(f"scale: {number:,} of {jobs:,} jobs")
        for number in range(stalled):  # started, never advanced: running, with no claim
            run_pipeline(
                f"stalled-{number:04d}",
                pipeline,
                storage=storage,
                scheduler=InlineScheduler(),
                initial_state=incompressible_state(),
            )
        spread = index_spread(client)
        meter.enabled = True
        meter.take()
        page, listing_cpu, listing_client_cpu = timed_cpu(lambda: storage.list_page(limit=50), moto)
        listing = meter.take()
        counted = storage.count_jobs()
        counting = meter.take()
        filtered = [
            *filtered_pages(storage, meter, moto, JobFilter(status=JobStatus.RUNNING), "status running"),
            *filtered_pages(storage, meter, moto, JobFilter(pipeline=RARE), f"pipeline {RARE}"),
        ]
        clock.now_ms += 3_600_000
        swept, sweep_cpu, _ = timed_cpu(lambda: storage.stalled_jobs(idle_seconds=600, limit=stalled + 10), moto)
        sweep = meter.take()
        meter.enabled = False
        meter.detach()
        done = storage.list_page(status=JobStatus.COMPLETE, limit=1)
    if len(page.jobs) != 50 or len(swept) != stalled or not done.jobs:
        raise RuntimeError(f"listing {len(page.jobs)} of 50, sweep {len(swept)} of {stalled}")
    return Measured(
        jobs=jobs,
        phases=len(PHASES),
        state_bytes=STATE_BYTES,
        metered_jobs=len(costs.start),
        start_units=costs.start,
        middle_units=costs.middle,
        finish_units=costs.finish,
        read_units_per_step=costs.reads,
        per_job_units=costs.per_job,
        jobs_per_second=unmetered_jobs / unmetered_seconds if unmetered_seconds else 0.0,
        index_spread=spread,
        listing_requests=listing.read_requests,
        listing_read_units=listing.read_units,
        listing_jobs=len(page.jobs),
        listing_cpu_ms=listing_cpu * 1000,
        listing_client_cpu_ms=listing_client_cpu * 1000,
        listing_item_reads=listing.dynamodb["BatchGetItem"],
        count_requests=counting.read_requests,
        count_read_units=counting.read_units,
        count_total=counted.total,
        count_exact=counted.exact,
        sweep_running=stalled,
        sweep_read_units=sweep.read_units,
        sweep_requests=sweep.read_requests,
        sweep_cpu_ms=sweep_cpu * 1000,
        filtered_listings=filtered,
    )


def build_result(measured: Measured) -> Result:
    """The suite's result: the measured figures as one table, the model's text in the data."""
    rows = [
        ["jobs run", f"{measured.jobs:,}", f"{measured.metered_jobs} metered"],
        ["write units, start", *_spread(measured.start_units)],
        ["write units, middle transition", *_spread(measured.middle_units)],
        ["write units, finish", *_spread(measured.finish_units)],
        ["read units per step", *_spread(measured.read_units_per_step)],
        [
            "listing, first page of 50",
            f"{measured.listing_read_units:.1f} read units",
            f"{measured.listing_requests} requests, {measured.listing_client_cpu_ms:.0f} ms client CPU "
            f"({measured.listing_cpu_ms:.0f} ms with moto's)",
        ],
        *(
            [
                f"listing, {page['filter']}, page {page['page']}",
                f"{page['read_units'] / page['jobs']:.2f} read units a job",
                f"{page['read_units']:g} read units for {page['jobs']}, {page['requests']} requests, "
                f"{page['client_cpu_ms']:.0f} ms client CPU",
            ]
            for page in measured.filtered_listings
        ),
        [
            "count per status",
            f"{measured.count_read_units:.1f} read units",
            f"{measured.count_requests} requests, {measured.count_total:,} jobs, "
            f"{'exact' if measured.count_exact else 'a lower bound'}",
        ],
        [
            "sweep of running jobs",
            f"{measured.sweep_read_units / measured.sweep_running:.2f} read units a job",
            f"{measured.sweep_requests} requests for {measured.sweep_running}",
        ],
        [
            "this process",
            f"{measured.jobs_per_second:.1f} jobs/s",
            f"{measured.jobs_per_second * measured.phases:.0f} transitions/s",
        ],
    ]
    result = Result(SUITE, "Scale", "A load test of many jobs on moto: the per-job costs the scale model uses.")
    result.tables.append(Table("Measured at scale", ["Figure", "Value", "Detail"], rows))
    result.targets.extend(targets(measured))
    result.data = {"measured": asdict(measured)}
    result.versions = {**versions(*VERSIONED), "git": git_commit()}
    result.data["machine"] = machine()
    return result


def targets(measured: Measured) -> list[Target]:
    """Issue 43's targets at this many jobs: each filter's pages, and the count per status."""
    found = []
    for name in dict.fromkeys(page["filter"] for page in measured.filtered_listings):
        pages = [page for page in measured.filtered_listings if page["filter"] == name]
        units = max(page["read_units"] / page["jobs"] for page in pages)
        cpu = max(page["client_cpu_ms"] for page in pages)
        met = units <= FILTERED_UNITS_PER_JOB and cpu <= FILTERED_CPU_MS
        found.append(
            Target(
                f"Filtered listing, {name}, at {measured.jobs:,} jobs",
                f"at most {FILTERED_UNITS_PER_JOB:g} read units a job listed and {FILTERED_CPU_MS:.0f} ms of client "
                "CPU a page, every page (issue 43)",
                f"{units:.2f} read units a job, {cpu:.0f} ms (worst of {len(pages)} pages)",
                met,
                "" if met else f"{units / FILTERED_UNITS_PER_JOB:.2f}x the units, {cpu / FILTERED_CPU_MS:.2f}x the CPU",
            )
        )
    units = measured.count_read_units
    met = units <= COUNT_READ_UNITS
    found.append(
        Target(
            f"Count per status at {measured.jobs:,} jobs",
            f"at most {COUNT_READ_UNITS:g} read units whatever the number of jobs (issue 43: maintained counts)",
            f"{units:.1f} read units, {measured.count_requests} requests, "
            f"{'exact' if measured.count_exact else 'a lower bound'}",
            met,
            ""
            if met
            else f"{units / COUNT_READ_UNITS:.1f}x over: counts are not maintained; a count reads each shard's "
            "listing entries (up to 1,000 a shard), so its units grow with the jobs",
        )
    )
    return found


def _spread(values: list[float]) -> list[str]:
    if not values:
        return ["-", "-"]
    return [f"{statistics.median(values):g}", f"min {min(values):g}, max {max(values):g}, {len(values)} figures"]


def main(argv: list[str] | None = None) -> int:
    """Measure, write ``benchmarks/results/latest/scale.json`` and docs/SCALE.md (``--doc`` elsewhere)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=JOBS, help=f"jobs to run (default {JOBS:,})")
    parser.add_argument("--samples", type=int, default=SAMPLES, help=f"jobs metered (default {SAMPLES})")
    parser.add_argument("--stalled", type=int, default=STALLED, help=f"running jobs the sweep finds ({STALLED})")
    parser.add_argument("--doc", default=None, help="where to write the model (default docs/SCALE.md)")
    arguments = parser.parse_args(argv)
    if arguments.jobs < 60 or arguments.samples < 2 or arguments.stalled < 1:
        parser.error("at least 60 jobs, 2 samples and 1 stalled job")
    started = time.perf_counter()
    measured = measure(arguments.jobs, arguments.samples, arguments.stalled)
    result = build_result(measured)
    write_result(result, started)
    render(measured, seconds=time.perf_counter() - started, path=arguments.doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
