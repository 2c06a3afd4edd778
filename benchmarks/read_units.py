"""Benchmark suite "read_units": the read side of a job as DynamoDB bills it (issue 43), on in-process moto.

Every figure comes from :class:`benchmarks.dynamodb_meter.DynamoDBMeter`, which bills a ``GetItem`` on the
whole stored item and a ``Query`` on every item it evaluates:

- the meter itself against bills computed by hand (a projected and an eventually consistent ``GetItem``, a
  ``GetItem`` that finds nothing, a ``Query`` whose filter keeps none of the items it reads);
- the state read of a middle transition after the phase before it logged 0, 100 and 1,000 lines of 80
  characters, for a 1 KB and a 3.5 KB incompressible state;
- a retry (resume), a rerun from a phase and a start of a known id, after 10 and after 1,000 transitions;
- a map's items: read units per item at 10 and 1,000 items;
- the Step Functions driver: the state transitions its loop bills per phase, read from its state machine.

Run: ``python -m benchmarks.read_units [--quick]`` (``make bench`` runs every suite).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
from moto import mock_aws

from benchmarks.common import Result, Table, Target, git_commit, machine, versions, write_result
from benchmarks.cost import KB, REGION, CapturingScheduler, fake_credentials, incompressible_state, progress
from benchmarks.dynamodb_meter import DynamoDBMeter, Figures, item_size
from benchmarks.stepfunctions_loop import loop_states
from cairn import (
    Cairn,
    Done,
    InlineScheduler,
    JobExistsError,
    JobStatus,
    Map,
    Next,
    PhaseContext,
    Pipeline,
    advance_phase,
    run_pipeline,
)
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.dynamodb.schema import create_table
from cairn.dev.moto_speedups import proportional_moto

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

SUITE = "read_units"
VERSIONED = ("boto3", "botocore", "moto")
#: Issue 43's targets.
STATE_READ_UNITS = 1.0
RESTART_GROWTH = 1.5
MAP_ITEM_UNITS = 3.0
#: The Step Functions driver's billed state transitions per phase when issue 43 was filed.
SFN_TRANSITIONS_BEFORE = 6
LOG_LINES = (0, 100, 1_000)
STATE_SIZES = {"1 KB": KB, "3.5 KB": 4 * KB - 512}
TRANSITIONS = (10, 1_000)
MAP_SIZES = (10, 1_000)
QUICK_TRANSITIONS = (10, 100)
QUICK_MAP_SIZES = (10, 100)
MAP_CONCURRENCY = 10
RESTARTS: dict[str, dict[str, Any]] = {
    "retry (resume)": {},
    "rerun from a phase": {"retry_mode": "from", "initial_phase": "step"},
    "start of a known id": {"create_only": True},
}


@dataclass
class Moto:
    """A fresh table on in-process moto, a client and a meter on it."""

    client: DynamoDBClient
    table: str
    meter: DynamoDBMeter

    def storage(self) -> DynamoDBStorage:
        """cairn's store on the table."""
        return DynamoDBStorage(self.table, client=self.client)


@contextmanager
def fresh_table(name: str) -> Iterator[Moto]:
    """In-process moto (proportional: its time per request does not grow with the table) with one new table."""
    fake_credentials()
    with mock_aws(), proportional_moto():
        client = boto3.client("dynamodb", region_name=REGION)
        create_table(client, name)
        meter = DynamoDBMeter(client)
        try:
            yield Moto(client, name, meter)
        finally:
            meter.detach()


# -- the meter against hand-computed bills ---------------------------------------------------------------------


def meter_bills() -> list[tuple[str, float, float]]:
    """(request, the meter's bill, the bill computed by hand) for a few reads of items of known size."""
    with fresh_table("meter-check") as moto:
        keys = [{"pk": {"S": "p"}, "sk": {"S": str(number)}} for number in (1, 2, 3)]
        for key in keys:
            moto.client.put_item(TableName=moto.table, Item={**key, "body": {"S": "x" * 5000}})
        size = item_size({**keys[0], "body": {"S": "x" * 5000}})  # pk 2+1, sk 2+1, body 4+5000
        moto.meter.take()

        def bill(call: Callable[..., Any], **params: Any) -> float:
            call(TableName=moto.table, **params)
            return moto.meter.take().read_units

        per_item = math.ceil(size / (4 * KB))
        query = {
            "KeyConditionExpression": "pk = :p",
            "FilterExpression": "body = :none",
            "ExpressionAttributeValues": {":p": {"S": "p"}, ":none": {"S": "none"}},
        }
        return [
            (
                "GetItem of a 5 KB item projecting its key, consistent",
                bill(moto.client.get_item, Key=keys[0], ProjectionExpression="pk", ConsistentRead=True),
                float(per_item),
            ),
            ("GetItem of the same item, eventually consistent", bill(moto.client.get_item, Key=keys[0]), per_item / 2),
            (
                "GetItem that finds nothing, consistent",
                bill(moto.client.get_item, Key={"pk": {"S": "none"}, "sk": {"S": "1"}}, ConsistentRead=True),
                1.0,
            ),
            (
                "Query reading 3 such items, its filter keeping none, consistent",
                bill(moto.client.query, ConsistentRead=True, **query),
                float(math.ceil(3 * size / (4 * KB))),
            ),
        ]


# -- the state read after a phase that logged ------------------------------------------------------------------


def _logging_pipeline(lines: int) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("logged")

    @pipeline.phase
    def talk(ctx: PhaseContext[Any]) -> Next:
        for number in range(lines):
            ctx.log(f"{number:06d} " + "x" * 73)
        return Next("listen", ctx.state)

    @pipeline.phase
    def listen(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    return pipeline


def state_read_units(lines: int, size: int) -> float:
    """The read units of the transition after a phase that logged ``lines`` lines, the state ``size`` bytes."""
    with fresh_table(f"logged-{lines}-{size}") as moto:
        storage, pipeline, scheduler = moto.storage(), _logging_pipeline(lines), CapturingScheduler()
        state = incompressible_state(size)

        def advance() -> Figures:
            job_id, phase, sequence = scheduler.take()
            moto.meter.take()
            advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, phase=phase, sequence=sequence)
            return moto.meter.take()

        run_pipeline("logged", pipeline, storage=storage, scheduler=scheduler, initial_state=state)
        advance()  # talk: logs, then enters listen
        listened = advance()  # listen: reads the state, finishes
        with moto.meter.paused():
            job = storage.get_job("logged")
        if job is None or job.status != JobStatus.COMPLETE or job.result != state:
            raise RuntimeError(f"the logging job did not complete with its state: {job and job.status}")
        return listened.read_units


# -- retries, reruns and starts of a known id -------------------------------------------------------------------


def _counting_pipeline(transitions: int) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("counting")

    @pipeline.phase
    def step(ctx: PhaseContext[Any]) -> Next | Done:
        count = ctx.state["n"] + 1
        return Done({"n": count}) if count >= transitions else Next("step", {"n": count})

    return pipeline


def restart_read_units(transitions: int) -> dict[str, float]:
    """The read units of each restart of a job that ran ``transitions`` transitions to its end."""
    with fresh_table(f"restarts-{transitions}") as moto:
        storage, pipeline = moto.storage(), _counting_pipeline(transitions)
        scheduler = InlineScheduler()
        scheduler.bind(
            lambda job_id, **advance: advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, **advance)
        )
        with moto.meter.paused():
            run_pipeline("counted", pipeline, storage=storage, scheduler=scheduler, initial_state={"n": 0})
            scheduler.drain()
            job = storage.get_job("counted")
        if job is None or job.status != JobStatus.COMPLETE or len(job.phases) != transitions:
            raise RuntimeError(f"the counting job did not run {transitions} transitions: {job and job.status}")
        units = {}
        capturing = CapturingScheduler()  # a rerun's advance is kept, not run
        for kind, options in RESTARTS.items():
            moto.meter.take()
            with contextlib.suppress(JobExistsError):
                run_pipeline("counted", pipeline, storage=storage, scheduler=capturing, **options)
            units[kind] = moto.meter.take().read_units
        return units


# -- map items ---------------------------------------------------------------------------------------------------


def _mapping(size: int) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("mapped")

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        return Map(list(range(size)), phase="item", then="total", max_concurrency=MAP_CONCURRENCY)

    @pipeline.phase
    def item(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state + 1)

    @pipeline.phase
    def total(ctx: PhaseContext[Any]) -> Done:
        return Done(sum(ctx.results or []))

    return pipeline


def map_item_read_units(size: int) -> float:
    """The read units of a map's item advances, per item, for a map of ``size`` items."""
    with fresh_table(f"mapped-{size}") as moto:
        scheduler = InlineScheduler()
        jobs = Cairn(_mapping(size), storage=moto.storage(), scheduler=scheduler)
        items: list[float] = []

        def metered(job_id: str, **message: Any) -> None:
            moto.meter.take()
            jobs.advance(job_id, **message)
            if message.get("item") is not None:
                items.append(moto.meter.take().read_units)

        scheduler.bind(metered)
        jobs.start("mapped", "mapped", state={})
        scheduler.drain()
        done = jobs.get("mapped")
        if done.status != JobStatus.COMPLETE or done.result != sum(range(1, size + 1)) or len(items) != size:
            raise RuntimeError(f"the map of {size} items did not complete: {done.status}")
        return sum(items) / size


# -- the suite ---------------------------------------------------------------------------------------------------


def measure(transitions: Sequence[int], map_sizes: Sequence[int]) -> dict[str, Any]:
    """Every figure of the suite."""
    progress("read_units: the meter against hand-computed bills")
    bills = meter_bills()
    state_reads = {}
    for label, size in STATE_SIZES.items():
        for lines in LOG_LINES:
            progress(f"read_units: the state read of a {label} state after {lines} log lines")
            state_reads[f"{label}, {lines} lines"] = state_read_units(lines, size)
    restarts = {}
    for count in transitions:
        progress(f"read_units: restarts after {count} transitions")
        restarts[count] = restart_read_units(count)
    maps = {}
    for size in map_sizes:
        progress(f"read_units: a map of {size} items")
        maps[size] = map_item_read_units(size)
    return {
        "meter": bills,
        "state_reads": state_reads,
        "restarts": restarts,
        "map_items": maps,
        "sfn_transitions_per_phase": len(loop_states()),
    }


def build_result(figures: dict[str, Any]) -> Result:
    """The suite's tables and issue 43's targets."""
    result = Result(SUITE, "Read units as DynamoDB bills them", (__doc__ or "").split("\n\n")[1].replace("\n", " "))
    bills: list[tuple[str, float, float]] = figures["meter"]
    result.tables.append(
        Table(
            "The meter against bills computed by hand",
            ["Request", "Meter", "By hand"],
            [[r, f"{m:g}", f"{h:g}"] for r, m, h in bills],
        )
    )
    result.targets.append(
        Target(
            "The meter bills reads as DynamoDB does",
            "every bill equal to the hand-computed one (whole items; every item a query evaluates)",
            f"{sum(m == h for _, m, h in bills)} of {len(bills)} equal",
            all(m == h for _, m, h in bills),
        )
    )
    reads: dict[str, float] = figures["state_reads"]
    result.tables.append(
        Table(
            "The state read after a logging phase",
            ["State, lines logged before", "Read units"],
            [[k, f"{v:g}"] for k, v in reads.items()],
        )
    )
    worst = max(reads.values())
    result.targets.append(
        Target(
            "The state read, whatever the phase before logged",
            f"at most {STATE_READ_UNITS:g} read unit for states up to 4 KB after 0, 100 and 1,000 log lines",
            f"at most {worst:g} ({len(reads)} cases)",
            worst <= STATE_READ_UNITS,
            "" if worst <= STATE_READ_UNITS else f"{worst / STATE_READ_UNITS:.1f}x",
        )
    )
    restarts: dict[int, dict[str, float]] = figures["restarts"]
    short, long = min(restarts), max(restarts)
    result.tables.append(
        Table(
            "Restarts of a finished job",
            ["Restart", *(f"after {count:,} transitions" for count in restarts)],
            [[kind, *(f"{restarts[count][kind]:g}" for count in restarts)] for kind in RESTARTS],
        )
    )
    growth = max(restarts[long][kind] / restarts[short][kind] for kind in RESTARTS)
    result.targets.append(
        Target(
            "Retries, reruns and starts of a known id",
            f"read units after {long:,} transitions at most {RESTART_GROWTH}x those after {short:,}",
            f"{growth:.2f}x at most ("
            + ", ".join(f"{kind} {restarts[short][kind]:g} / {restarts[long][kind]:g}" for kind in RESTARTS)
            + ")",
            growth <= RESTART_GROWTH,
        )
    )
    maps: dict[int, float] = figures["map_items"]
    result.tables.append(
        Table(
            "Map items",
            ["Items", "Read units per item"],
            [[f"{size:,}", f"{units:.2f}"] for size, units in maps.items()],
        )
    )
    largest = max(maps)
    result.targets.append(
        Target(
            "Map items",
            f"at most {MAP_ITEM_UNITS:g} read units per item at {largest:,} items, flat",
            ", ".join(f"{units:.2f} at {size:,}" for size, units in maps.items()),
            maps[largest] <= MAP_ITEM_UNITS and maps[largest] <= maps[min(maps)],
        )
    )
    transitions = figures["sfn_transitions_per_phase"]
    result.targets.append(
        Target(
            "Step Functions driver: billed state transitions per phase",
            f"fewer than the {SFN_TRANSITIONS_BEFORE} of the loop when issue 43 was filed (dollars: the cost suite)",
            f"{transitions}",
            transitions < SFN_TRANSITIONS_BEFORE,
        )
    )
    result.data = figures
    result.versions = {**versions(*VERSIONED), "git": git_commit()}
    result.data["machine"] = machine()
    return result


def main(argv: list[str] | None = None) -> int:
    """Measure and write ``benchmarks/results/latest/read_units.json``."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 transitions and 100 items at most")
    arguments = parser.parse_args(argv)
    started = time.perf_counter()
    figures = measure(
        QUICK_TRANSITIONS if arguments.quick else TRANSITIONS, QUICK_MAP_SIZES if arguments.quick else MAP_SIZES
    )
    write_result(build_result(figures), started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
