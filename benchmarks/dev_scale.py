"""``cairn dev`` at 10,000 jobs: the first page, a filtered page and a job view, beside a 100-job stack.

Two ``cairn dev`` stacks run side by side, one seeded with ``--jobs`` jobs, the other with 100. The jobs
carry real histories: each kind ran once on the memory store (2 to 16 writes, both pipelines of the bundle, some
of them failed), and each job is a copy of one of those under its own id, written in bulk through the
DynamoDB store (:func:`seed_stack`, which ``make console-scale`` uses too). Then each
stack runs a document-intake job that maps ``--map-items`` pages (300) to its end, with the sweep once a day:
the phase after the map starts when the last item is done, or the run fails. Then, run after run, each
stack answers ``GET /jobs?limit=50``, ``GET /jobs?limit=50&status=error``,
``GET /jobs?limit=50&pipeline=...``, the map job's view and lanes and ``GET /jobs/{id}``, timed round-robin;
the table prints the median (min-max) of the runs. The issue's target: under 2 s each at 10,000 jobs.

Run ``python -m benchmarks.dev_scale [--jobs N] [--repeats N] [--map-items N] [--quick]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from benchmarks.common import Result, Summary, Table, Target, git_commit, machine, versions, write_result
from cairn import Done, InlineScheduler, Next, PhaseContext, Pipeline, advance_phase, run_pipeline
from cairn.aws.api_auth import owner_key, principal_key
from cairn.aws.dynamodb.storage import DynamoDBStorage
from cairn.client.http import ApiClient
from cairn.core.models import HistoryItem, Job
from cairn.dev.process import DevProcess, dev_process
from cairn.storage.memory import MemoryStorage

SUITE = "dev_scale"
SMALL = 100
"""The jobs of the stack the large one is measured beside."""
TARGET_SECONDS = 2.0
"""The issue's bound on each answer at 10,000 jobs."""
PIPELINES = ("document-intake", "research-brief")
"""The bundle's pipelines (a listing filters by a pipeline the API knows)."""
WRITERS = 8
MAP_ITEMS = 300
"""Pages of the map job each stack runs: the bundle's document-intake maps ``extract_page`` over them."""
MAP_CONCURRENCY = 10
MAP_JOB = "map-job"
MAP_WITHIN = 900.0
"""How long a map job may take before the run says its map never moved on (the sweep runs once a day)."""
TERMINAL = {"complete", "error", "cancelled"}
PAGES = {
    "first page": "/jobs?limit=50",
    "failed page": "/jobs?limit=50&status=error",
    "pipeline page": f"/jobs?limit=50&pipeline={PIPELINES[1]}",
}


@dataclass(frozen=True)
class Kind:
    """One kind of job: its pipeline, how many steps it loops, whether it fails at the end."""

    pipeline: str
    steps: int
    fails: bool


KINDS = [Kind(PIPELINES[n % 2], 1 + n % 15, n % 7 == 3) for n in range(30)]
"""Histories of 2 to 16 writes over both pipelines; one kind in seven fails."""


def _pipeline(kind: Kind) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline(kind.pipeline)

    @pipeline.phase(name="step")
    def step(ctx: PhaseContext[Any]) -> Next | Done:
        done = int(ctx.state["done"]) + 1
        if done < kind.steps:
            return Next("step", {**ctx.state, "done": done})
        if kind.fails:
            raise ValueError(f"step {done} of {kind.steps} failed")
        return Done({**ctx.state, "done": done})

    return pipeline


def _history(storage: MemoryStorage, job: Job) -> list[HistoryItem]:
    """The job's history, oldest first, from its head back."""
    items = storage._history(job.job_id)
    chain: list[HistoryItem] = []
    token = job.history_head
    while token is not None:
        item = items[token]
        chain.append(item)
        token = item.prev
    return chain[::-1]


def _advance(
    pipeline: Pipeline[Any], storage: MemoryStorage, scheduler: InlineScheduler, job_id: str, **advance: Any
) -> None:
    advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, **advance)


def templates() -> list[tuple[Job, list[HistoryItem]]]:
    """Each kind of job run once on the memory store: the job and its history."""
    storage = MemoryStorage()
    logging.disable(logging.ERROR)  # the failing kinds' tracebacks: expected
    try:
        return [_ran(storage, number, kind) for number, kind in enumerate(KINDS)]
    finally:
        logging.disable(logging.NOTSET)


def _ran(storage: MemoryStorage, number: int, kind: Kind) -> tuple[Job, list[HistoryItem]]:
    """One job of ``kind`` run to its end on ``storage``: the job and its history."""
    pipeline = _pipeline(kind)
    scheduler = InlineScheduler()
    scheduler.bind(functools.partial(_advance, pipeline, storage, scheduler))
    job_id = f"kind-{number}"
    run_pipeline(job_id, pipeline, storage=storage, scheduler=scheduler, initial_state={"done": 0, "kind": number})
    scheduler.drain()
    job = storage.get_job(job_id)
    assert job is not None
    history = _history(storage, job)
    head = history[-1].token
    history[-1] = history[-1].model_copy(update={"entry": job.checkpoint})  # the job's state, as a loaded job's
    stored = job.model_copy(
        update={"sequence": len(history), "write_token": head, "history_head": head, "input_token": head}
    )
    return stored, history


def dev_storage(info: dict[str, Any]) -> DynamoDBStorage:
    """The store ``cairn dev``'s API reads for its default caller, on its local AWS endpoint."""
    client = boto3.client(
        "dynamodb",
        endpoint_url=info["awsEndpoint"],
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(max_pool_connections=WRITERS * 2, retries={"max_attempts": 5}),
    )
    return DynamoDBStorage(table_name=info["table"], owner=owner_key(principal_key(info["identity"])), client=client)


def seed_stack(info: dict[str, Any], jobs: int, *, prefix: str = "job") -> list[str]:
    """``jobs`` jobs with real histories in the stack ``info`` describes (``GET /_cairn/info``), created 1 ms apart,
    newest last; their ids."""
    storage = dev_storage(info)
    kinds = templates()
    now = int(time.time() * 1000)
    ids = [f"{prefix}-{number:05d}" for number in range(jobs)]

    def put(number: int) -> None:
        job, history = kinds[number % len(kinds)]
        created = now - (jobs - number)
        copy = job.model_copy(update={"job_id": ids[number], "created_at": created, "updated_at": created})
        storage.put_job(copy, history)

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        list(pool.map(put, range(jobs)))
    return ids


def run_map(base_url: str, job_id: str, items: int, *, within: float = MAP_WITHIN) -> float:
    """A document-intake job of ``items`` pages mapped ``MAP_CONCURRENCY`` at a time, run to complete through the
    stack's API: the seconds from its start. The stack's sweep runs once a day, so the phase after the map starts
    when the last item is done, or never (a RuntimeError then, as for a job that fails)."""
    api = ApiClient(base_url, timeout=120)
    text = "\f".join(
        f"Page {number}\nInvoice number: INV-{number:05d}\nTotal: {number}.00 EUR" for number in range(items)
    )
    started = time.monotonic()
    api.start("document-intake", {"text": text, "page_concurrency": MAP_CONCURRENCY}, job_id=job_id)
    while (status := str(api.get(job_id)["status"])) not in TERMINAL:
        if time.monotonic() - started > within:
            raise RuntimeError(f"{job_id}: its map of {items} items was still {status} after {within:.0f} s")
        time.sleep(0.25)
    if status != "complete":
        raise RuntimeError(f"{job_id}: its map of {items} items ended {status}")
    return time.monotonic() - started


def _get(base_url: str, path: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(base_url + path, timeout=120) as response:
        response.read()
        if response.status != 200:
            raise RuntimeError(f"GET {path}: {response.status}")
    return time.perf_counter() - started


def _info(dev: DevProcess) -> dict[str, Any]:
    with urllib.request.urlopen(f"{dev.base_url}/_cairn/info", timeout=30) as response:
        found: dict[str, Any] = json.loads(response.read())
        return found


@dataclass(frozen=True)
class Stack:
    """A seeded ``cairn dev``: its URL, its job ids, the seconds the seeding took and its map job's start to end."""

    base_url: str
    ids: list[str]
    seeding_seconds: float
    map_seconds: float


@dataclass(frozen=True)
class Measured:
    """Seconds per answer, run by run, for each stack size (as text) and request; each stack's map job's seconds."""

    runs: dict[str, dict[str, list[float]]]
    maps: dict[str, float]
    map_items: int


@contextmanager
def _stacks(sizes: Sequence[int], folder: Path, map_items: int) -> Iterator[dict[int, Stack]]:
    """A ``cairn dev`` per size, seeded, then running a map job of ``map_items`` to its end."""
    with ExitStack() as stacks:
        seeded = {}
        for size in sizes:
            dev = stacks.enter_context(
                dev_process(folder / f"dev-{size}.log", "--no-reload", "--driver", "direct", "--sweep-seconds", "86400")
            )
            started = time.monotonic()
            ids = seed_stack(_info(dev), size)
            seeding = time.monotonic() - started
            print(f"{size:,} jobs written through the store in {seeding:.1f} s", flush=True)
            mapped = run_map(dev.base_url, MAP_JOB, map_items)
            print(f"{size:,} jobs: a map of {map_items} items ran to its end in {mapped:.1f} s", flush=True)
            seeded[size] = Stack(dev.base_url, ids, seeding, mapped)
        yield seeded


def measure(jobs: int, repeats: int, map_items: int = MAP_ITEMS) -> Measured:
    """Each request timed ``repeats`` times on each stack, round-robin, after each stack ran its map job."""
    sizes = [jobs, SMALL] if jobs != SMALL else [jobs]
    with tempfile.TemporaryDirectory() as folder, _stacks(sizes, Path(folder), map_items) as seeded:
        requests = {**PAGES, "map job view": f"/jobs/{MAP_JOB}", "map lanes": f"/jobs/{MAP_JOB}/maps"}
        runs: dict[str, dict[str, list[float]]] = {
            str(size): {name: [] for name in [*requests, "job view"]} for size in sizes
        }
        for stack in seeded.values():  # a first read of each, not timed: the functions' workers warm up
            _get(stack.base_url, PAGES["first page"])
        for _ in range(repeats):
            for size, stack in seeded.items():
                for name, path in requests.items():
                    runs[str(size)][name].append(_get(stack.base_url, path))
                runs[str(size)]["job view"].append(_get(stack.base_url, f"/jobs/{stack.ids[len(stack.ids) // 2]}"))
        return Measured(runs, {str(size): stack.map_seconds for size, stack in seeded.items()}, map_items)


def build_result(measured: Measured, jobs: int, repeats: int) -> Result:
    """The tables (median and spread per request, the stacks side by side; each map job) and the targets."""
    found = measured.runs
    sizes = list(found)
    names = list(found[sizes[0]])
    rows = [[name, *(Summary.of(found[size][name]).cell(3) for size in sizes)] for name in names]
    worst = max(Summary.of(found[str(jobs)][name]).median for name in names)
    columns = [f"{int(size):,} jobs" for size in sizes]
    table = Table(
        f"cairn dev: seconds per answer, {jobs:,} jobs beside {SMALL}",
        ["Request", *columns],
        rows,
        note=(
            f"Median (min-max) of {repeats} round-robin runs, each stack its own cairn dev (--driver direct) on one "
            "machine. Jobs: copies of 30 kinds run on the memory store (2-16 writes, two pipelines, one kind in "
            "seven failed), written through the DynamoDB store, and one document-intake job that mapped "
            f"{measured.map_items} pages. Job view: a job halfway down the list; map job view and lanes: the map job's."
        ),
    )
    maps = Table(
        f"cairn dev: a map of {measured.map_items} items, {MAP_CONCURRENCY} at a time, from start to complete (s)",
        ["Job", *columns],
        [["map job", *(f"{measured.maps[size]:.1f}" for size in sizes)]],
        note="One run per stack, after its seeding. The sweep runs once a day: the phase after the map started "
        "when the map's last item was done.",
    )
    target = Target(
        name=f"Slowest answer at {jobs:,} jobs (median)",
        goal=f"under {TARGET_SECONDS:g} s",
        measured=f"{worst:.3f} s",
        met=worst < TARGET_SECONDS,
    )
    moved_on = Target(
        name="A map whose items are done moves on without the sweep",
        goal="the map job completes on each stack",
        measured=", ".join(f"{measured.maps[size]:.1f} s at {int(size):,} jobs" for size in sizes),
        met=True,  # run_map raises when a map job does not complete
    )
    return Result(
        suite=SUITE,
        title="cairn dev at scale",
        summary=(
            f"cairn dev's API with {jobs:,} jobs of real histories beside one with {SMALL}: the first page, filtered "
            "pages, a job view and a map job's, side by side; a map job on each."
        ),
        tables=[table, maps],
        targets=[target, moved_on],
        data={
            "runs": found,
            "maps": measured.maps,
            "mapItems": measured.map_items,
            "jobs": jobs,
            "repeats": repeats,
            "machine": machine(),
        },
        versions={**versions("moto"), "git": git_commit()},
    )


def report(result: Result) -> None:
    """The tables on stdout."""
    for table in result.tables:
        print(table.title)
        print("  " + " | ".join(table.columns))
        for row in table.rows:
            print("  " + " | ".join(row))
    for target in result.targets:
        print(
            f"  target: {target.name}: {target.goal}; measured {target.measured} ({'met' if target.met else 'missed'})"
        )


def main(argv: list[str] | None = None) -> int:
    """Measure, print, write ``benchmarks/results/latest/dev_scale.json``."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000, help="jobs of the large stack (default 10,000)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each request (default 5)")
    parser.add_argument("--map-items", type=int, default=MAP_ITEMS, help=f"the map job's items (default {MAP_ITEMS})")
    parser.add_argument("--quick", action="store_true", help="a tiny run: 30 jobs beside 100, a map of 12, two runs")
    arguments = parser.parse_args(argv)
    started = time.perf_counter()
    jobs, repeats, items = (
        (30, 2, 12) if arguments.quick else (arguments.jobs, max(1, arguments.repeats), arguments.map_items)
    )
    result = build_result(measure(jobs, repeats, max(1, items)), jobs, repeats)
    write_result(result, started)
    report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
