"""Benchmark suite "map_scaling": what one item of a ``Map`` costs as the map grows, 10 to 10,000 items.

One job maps N items (``max_concurrency`` 10) over a phase that returns ``Done``, then sums the results,
through the front door on the inline scheduler, on :class:`~cairn.storage.memory.MemoryStorage` and on
:class:`~cairn.aws.dynamodb.DynamoDBStorage` on in-process moto (a new table for every run, so each run's
table holds only its own map). Per run: the records read through the storage port (counted by a
wrapper: a job, a route, an item record, a map's record; ``get_items`` counts every record it returns),
on DynamoDB the requests and the items the service returned, and the time from the start to the
job's completion (on moto, the share inside moto's request handler is split off: it stands in for
the service). Item reads are ``get_item``, ``get_map`` and ``get_items``; an item's own transitions
read only its record, so the figure per item is flat, and ``then`` reads every record once.

Run: ``python -m benchmarks.map_scaling [--quick] [--repeats N] [--dynamodb-max N]`` (``make bench`` runs
every suite).
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from benchmarks.common import Result, Summary, Table, Target, git_commit, machine, versions, write_result
from benchmarks.cost import REGION, fake_credentials, progress
from benchmarks.overhead import MotoClock
from cairn import Cairn, Done, InlineScheduler, JobStatus, Map, MemoryStorage, PhaseContext, Pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.dynamodb.schema import create_table
from cairn.core.storage_port import Storage
from cairn.dev.moto_speedups import proportional_moto
from cairn.storage.delegating import DelegatingStorage

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

SUITE = "map_scaling"
SIZES = (10, 100, 1_000, 10_000)
QUICK_SIZES = (10, 100)
STORES = ("memory", "DynamoDB (moto)")
CONCURRENCY = 10
#: The largest map run on moto (under :func:`cairn.dev.moto_speedups.proportional_moto`, moto's time per
#: request does not grow with the table).
DYNAMODB_MAX = 10_000
#: Maps on moto at least this large run once, not once per repeat: each takes minutes.
ONCE_ON_MOTO = 10_000
ITEM_READS = ("get_item", "get_map", "get_items")
#: Records read per item may vary this much from the smallest map to the largest and still be flat.
FLAT = 1.05
VERSIONED = ("boto3", "botocore", "moto", "pydantic")
#: Issue 23's figures for the code before this change: item-record reads per item, and total time.
BEFORE_READS_PER_ITEM = {100: 302, 400: 1_202}
BEFORE_MEMORY_SECONDS = {10_000: 168}
BEFORE_DYNAMODB_100 = "404 queries returning 30,605 records, 115 s"
_T = TypeVar("_T")


class CountingStorage(DelegatingStorage):
    """Counts the records each read of the storage port returns, by method."""

    def __init__(self, inner: Storage) -> None:
        super().__init__(inner)
        self.records: Counter[str] = Counter()

    def around(self, name: str, operation: Callable[[], _T]) -> _T:
        result = operation()
        if name.startswith(("get_", "list_", "entered")):
            if isinstance(result, list):
                self.records[name] += len(result)
            elif result is not None:
                self.records[name] += 1
        return result


def mapping(size: int) -> Pipeline[Any]:
    """``split`` maps ``size`` numbers over ``item`` (10 at a time); ``total`` sums the results."""
    pipeline: Pipeline[Any] = Pipeline("mapped")

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        return Map(list(range(size)), phase="item", then="total", max_concurrency=CONCURRENCY)

    @pipeline.phase
    def item(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state + 1)

    @pipeline.phase
    def total(ctx: PhaseContext[Any]) -> Done:
        return Done(sum(ctx.results or []))

    return pipeline


@dataclass
class Run:
    """One map run: what it read and how long it took."""

    store: str
    size: int
    seconds: float
    records: dict[str, int]
    requests: dict[str, int] = field(default_factory=dict)
    service_items: int = 0
    moto_seconds: float = 0.0

    @property
    def item_reads_per_item(self) -> float:
        return sum(self.records.get(name, 0) for name in ITEM_READS) / self.size

    @property
    def reads_per_item(self) -> float:
        return sum(self.records.values()) / self.size


class ServiceCounter:
    """The DynamoDB requests a client makes, by operation, and the items the service returned."""

    def __init__(self, client: DynamoDBClient) -> None:
        self.client = client
        self.requests: Counter[str] = Counter()
        self.items = 0

    def _count(self, model: Any = None, parsed: dict[str, Any] | None = None, **_: Any) -> None:
        self.requests[model.name if model is not None else "?"] += 1
        if parsed:
            self.items += len(parsed.get("Items", [])) + (1 if parsed.get("Item") else 0)
            for response in parsed.get("Responses", {}).values():  # BatchGetItem
                self.items += len(response) if isinstance(response, list) else 0

    @contextmanager
    def counting(self) -> Iterator[ServiceCounter]:
        self.client.meta.events.register("after-call.dynamodb", self._count, unique_id="map-scaling")
        try:
            yield self
        finally:
            self.client.meta.events.unregister("after-call.dynamodb", unique_id="map-scaling")


def run_map(storage: Storage, store: str, size: int) -> Run:
    """Start one job mapping ``size`` items and run it to completion; what it read and how long it took."""
    counting = CountingStorage(storage)
    jobs = Cairn(mapping(size), storage=counting, scheduler=InlineScheduler())
    started = time.perf_counter()
    jobs.start("mapped", "mapped-1", state={})
    jobs.run_until_idle()
    seconds = time.perf_counter() - started
    done = jobs.get("mapped-1")
    if done.status != JobStatus.COMPLETE or done.result != sum(range(1, size + 1)):
        raise RuntimeError(f"the {size}-item map on {store} ended {done.status.value}: {done.error}")
    return Run(store, size, seconds, dict(counting.records))


def run_on_moto(client: DynamoDBClient, clock: MotoClock, size: int) -> Run:
    """One map run on a new table of its own (moto's costs grow with the table it works on)."""
    table = f"cairn-map-{uuid.uuid4().hex[:8]}"
    create_table(client, table)
    try:
        service = ServiceCounter(client)
        inside = clock.wall
        with service.counting():
            run = run_map(DynamoDBStorage(table, client=client), STORES[1], size)
        run.requests = dict(service.requests)
        run.service_items = service.items
        run.moto_seconds = clock.wall - inside
        return run
    finally:
        client.delete_table(TableName=table)


def measure(sizes: Sequence[int], repeats: int, dynamodb_max: int) -> list[Run]:
    """Every size on each store, ``repeats`` times, interleaved (each round runs every size on both).

    A map of ``ONCE_ON_MOTO`` items or more runs on moto in the first round only.
    """
    import boto3
    from moto import mock_aws

    fake_credentials()
    runs: list[Run] = []
    clock = MotoClock()
    with mock_aws(), proportional_moto(), clock.installed():
        client = boto3.client("dynamodb", region_name=REGION)
        for repeat in range(repeats):
            for size in sizes:
                run = run_map(MemoryStorage(), STORES[0], size)
                runs.append(run)
                progress(f"map_scaling: run {repeat + 1}/{repeats}: memory, {size:,} items: {_shown(run)}")
                if size <= dynamodb_max and (repeat == 0 or size < ONCE_ON_MOTO):
                    run = run_on_moto(client, clock, size)
                    runs.append(run)
                    progress(f"map_scaling: run {repeat + 1}/{repeats}: DynamoDB, {size:,} items: {_shown(run)}")
    return runs


def _shown(run: Run) -> str:
    return f"{run.seconds:.2f} s, {run.item_reads_per_item:.2f} item records read per item"


def _summary(values: Sequence[float]) -> Summary:
    return Summary.of(values)


def _runs_of(runs: Sequence[Run], store: str, size: int) -> list[Run]:
    return [run for run in runs if run.store == store and run.size == size]


def _spread(summary: Summary, digits: int) -> str:
    """``median (min-max)``, or the one figure when every run gave the same."""
    if summary.min == summary.max:
        return f"{summary.median:,.{digits}f}"
    return f"{summary.median:,.{digits}f} ({summary.min:,.{digits}f}-{summary.max:,.{digits}f})"


def _moto_shares(runs: Sequence[Run], sizes: Sequence[int]) -> str:
    """The median share of the time spent inside moto at each size measured on it (": 71% at 10 items, ...")."""
    shares = [
        f"{Summary.of([run.moto_seconds / run.seconds for run in group]).median:.0%} at {size:,} items"
        for size in sizes
        if (group := _runs_of(runs, STORES[1], size))
    ]
    return f": {', '.join(shares)}" if shares else ""


def build_result(runs: list[Run], sizes: Sequence[int], repeats: int, dynamodb_max: int) -> Result:
    """Tables, targets and notes from the runs."""
    table = Table(
        "Per map size and store: records read per item, and the map's time",
        [
            "Store",
            "Items",
            "Runs",
            "Item records read per item",
            "All records read per item",
            "DynamoDB requests per item",
            "DynamoDB items returned per item",
            "Total s",
            "ms per item",
            "ms per item outside moto",
        ],
        [],
        note=(
            "Median (min-max) over the runs; a single figure where every run gave the same. A run is one job "
            f"mapping N items, {CONCURRENCY} at a time, from its start to its completion. Item records: "
            "get_item (an item's claim and finish read its own record; a finished item its successor's), "
            "get_map (the map's record: its count of finished items, read by the items that end a slot) "
            "and get_items (every record once, for then's results). All records adds the job reads of each "
            "advance (the route an item advance checks, the job it returns). DynamoDB items returned counts "
            "what queries and gets answered, the job's own partition (job, history, input items) included."
        ),
    )
    data: dict[str, Any] = {"runs": [asdict(run) for run in runs], "sizes": list(sizes), "repeats": repeats}
    flat: dict[str, tuple[float, float, int, int]] = {}
    series_reads: dict[str, dict[str, list[float]]] = {}
    series_time: dict[str, dict[str, list[float]]] = {}
    for store in STORES:
        measured = [size for size in sizes if _runs_of(runs, store, size)]
        for size in measured:
            group = _runs_of(runs, store, size)
            item_reads = _summary([run.item_reads_per_item for run in group])
            all_reads = _summary([run.reads_per_item for run in group])
            total = _summary([run.seconds for run in group])
            per_item = total.scaled(1000 / size)
            on_moto = store != STORES[0]
            requests = _summary([sum(run.requests.values()) / size for run in group]) if on_moto else None
            returned = _summary([run.service_items / size for run in group]) if on_moto else None
            outside = _summary([(run.seconds - run.moto_seconds) * 1000 / size for run in group]) if on_moto else None
            table.rows.append(
                [
                    store,
                    f"{size:,}",
                    str(len(group)),
                    _spread(item_reads, 2),
                    _spread(all_reads, 2),
                    _spread(requests, 2) if requests else "-",
                    _spread(returned, 2) if returned else "-",
                    _spread(total, 3),
                    _spread(per_item, 2),
                    _spread(outside, 2) if outside else "-",
                ]
            )
            series_reads.setdefault(store, {"x": [], "y": []})
            series_reads[store]["x"].append(size)
            series_reads[store]["y"].append(item_reads.median)
            series_time.setdefault(store, {"x": [], "y": []})
            series_time[store]["x"].append(size)
            series_time[store]["y"].append(per_item.median)
            if on_moto and outside is not None:
                series_time.setdefault(f"{store}, outside moto", {"x": [], "y": []})
                series_time[f"{store}, outside moto"]["x"].append(size)
                series_time[f"{store}, outside moto"]["y"].append(outside.median)
        if len(measured) >= 2:
            smallest = max(run.item_reads_per_item for run in _runs_of(runs, store, measured[0]))
            largest = max(run.item_reads_per_item for run in _runs_of(runs, store, measured[-1]))
            flat[store] = (smallest, largest, measured[0], measured[-1])
    series_reads["before (issue 23's figures)"] = {
        "x": list(BEFORE_READS_PER_ITEM),
        "y": [float(value) for value in BEFORE_READS_PER_ITEM.values()],
    }
    result = Result(
        suite=SUITE,
        title="Map scaling",
        summary=(
            f"One job mapping 10 to {max(sizes):,} items ({CONCURRENCY} at a time) through the front door on the "
            "inline scheduler, on the memory store and on DynamoDB (in-process moto, a new table per run): the "
            f"records read per item and the map's total time; {repeats} interleaved runs per size."
        ),
        tables=[table],
        versions={**versions(*VERSIONED), "git": git_commit()},
    )
    for store, (first, last, small, large) in flat.items():
        result.targets.append(
            Target(
                name=f"Item records read per item, {store}",
                goal=f"flat: at {large:,} items at most {FLAT}x the figure at {small:,} (issue 23)",
                measured=f"{first:.2f} at {small:,} items, {last:.2f} at {large:,} ({last / first:.2f}x; worst run)",
                met=last <= first * FLAT,
                note="" if last <= first * FLAT else "the reads of an item grow with the map's size",
            )
        )
    if max(sizes) > dynamodb_max:
        result.notes.append(
            f"DynamoDB on moto is measured up to {dynamodb_max:,} items (--dynamodb-max), not {max(sizes):,}."
        )
    result.notes.append(
        "Moto runs under cairn.dev.moto_speedups.proportional_moto: in-process moto deep-copies every table a "
        "TransactWriteItems names (each item's finish is one) and sorts the whole table for every Query, so "
        "without it moto's own time per request grows with the table (the 1,000-item map took 181 s, 10,000 "
        "would take hours). The shim keeps a copy of only the items a transaction names, for its rollback, and "
        "lets a query on the table's key look only at its partition's items in the key range; what moto "
        "answers is unchanged (tests/benchmarks/test_moto_speedups.py). On DynamoDB, too, a GetItem, a "
        "two-item transaction and a query bounded by its key condition do not read the rest of the table."
        + (
            f" Maps of {ONCE_ON_MOTO:,} items or more run once on moto (minutes each)."
            if max(sizes) >= ONCE_ON_MOTO
            else ""
        )
    )
    result.notes += [
        "Each item: a claim (GetItem of its record, PutItem conditioned on its version), the phase, the finish "
        "(GetItem, then one TransactWriteItems: the record's put and one more finished item on the map's "
        "record, both or neither, so a finish sent again after a lost response is never counted twice), and "
        "either its slot's next item (GetItem of that record, then its schedule) or, for an item that ends a "
        "slot, one GetItem of the map's record: the one that finds every item done and takes the map's "
        "hand-off schedules then; last, the job's view (its item, its newest history item, its input: a "
        "read that does not grow with the job's history) for the advance's answer. Then reads every record "
        "once (one query) for the results.",
        "Time on moto: its share (wall time inside moto's request handler)"
        + _moto_shares(runs, sizes)
        + "; the time outside moto, cairn and botocore in the caller's process, is what a Lambda function would "
        "spend, and it does not grow with the map.",
        "Before this change (issue 23's figures): each item's claim, finish and hand-off read every record of "
        f"the map: {BEFORE_READS_PER_ITEM[100]} records read per item at 100 items, "
        f"{BEFORE_READS_PER_ITEM[400]:,} at 400; 10,000 items took {BEFORE_MEMORY_SECONDS[10_000]} s on the "
        f"memory store; a 100-item map on DynamoDB made {BEFORE_DYNAMODB_100}.",
    ]
    result.data = {
        **data,
        "machine": machine(),
        "git": git_commit(),
        "dynamodb_max": dynamodb_max,
        "before": {"reads_per_item": BEFORE_READS_PER_ITEM, "memory_seconds": BEFORE_MEMORY_SECONDS},
        "plots": {
            "reads": {
                "title": "Item records read per item, against the code before (issue 23)",
                "x": "items in the map",
                "y": "records per item",
                "log": True,
                "series": series_reads,
            },
            "time": {
                "title": "Milliseconds per item (start to completion / items)",
                "x": "items in the map",
                "y": "ms per item",
                "log": True,
                "series": series_time,
            },
        },
    }
    return result


def main(argv: list[str] | None = None) -> int:
    """Measure, write ``benchmarks/results/latest/map_scaling.json``; 0 when everything was measured."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 and 100 items only, two runs")
    parser.add_argument("--repeats", type=int, default=None, help="runs per size and store (default 3, quick 2)")
    parser.add_argument(
        "--dynamodb-max", type=int, default=DYNAMODB_MAX, help=f"the largest map run on moto (default {DYNAMODB_MAX})"
    )
    arguments = parser.parse_args(argv)
    started = time.perf_counter()
    repeats = max(1, arguments.repeats or (2 if arguments.quick else 3))
    sizes = QUICK_SIZES if arguments.quick else SIZES
    try:
        runs = measure(sizes, repeats, arguments.dynamodb_max)
    except Exception as exc:
        progress(f"map_scaling: could not measure: {type(exc).__name__}: {exc}")
        failed = Result(SUITE, "Map scaling", "What one item of a map costs as the map grows.")
        failed.unmeasured.append(f"{type(exc).__name__}: {exc}")
        failed.versions = {**versions(*VERSIONED), "git": git_commit()}
        write_result(failed, started)
        return 1
    write_result(build_result(runs, sizes, repeats, arguments.dynamodb_max), started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
