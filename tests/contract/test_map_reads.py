"""A map's reads per item do not grow with the map's size: counted, not timed, at 10 and at 100 items.

Every read through the storage port is counted in records returned (a job, a route, an item record, a
map's record; ``get_items`` counts each record it returns). On DynamoDB the items the service returned
(queries and gets) are counted too. ``benchmarks/map.py`` measures the same at up to 10,000 items.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from moto import mock_aws

from benchmarks.dynamodb_meter import DynamoDBMeter
from cairn import Cairn, Done, FileStorage, InlineScheduler, JobStatus, Map, MemoryStorage, Next, PhaseContext, Pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.core.storage_port import Storage
from cairn.storage.delegating import DelegatingStorage
from tests.aws import dynamodb_client, new_table
from tests.support import FakeClock

CONCURRENCY = 10
SIZES = (10, 100)
ITEM_READS = ("get_item", "get_items", "get_map")
_T = TypeVar("_T")


class CountingStorage(DelegatingStorage):
    """Counts the records each read returns, by the port's method."""

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


def _mapping(size: int) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("mapped")

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        return Map(list(range(size)), phase="item", then="total", max_concurrency=CONCURRENCY)

    @pipeline.phase
    def item(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state + 1)

    @pipeline.phase
    def total(ctx: PhaseContext[Any]) -> Done:
        assert ctx.results is not None
        return Done(sum(ctx.results))

    return pipeline


@pytest.fixture(params=["memory", "file", "dynamodb"])
def fresh_store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Callable[[], Storage]]:
    """A new, empty store for each map (on DynamoDB a new table, so moto's own costs stay alike)."""
    if request.param == "memory":
        yield lambda: MemoryStorage(clock=clock)
    elif request.param == "file":
        made = iter(range(100))
        yield lambda: FileStorage(tmp_path / f"jobs-{next(made)}", clock=clock)
    else:
        with mock_aws():
            client = dynamodb_client()
            yield lambda: DynamoDBStorage(new_table(client), client=client, clock=clock)


def _run_map(store: Storage, clock: FakeClock, size: int) -> tuple[Counter[str], int]:
    counting = CountingStorage(store)
    service_items = Counter[str]()
    client = store.client if isinstance(store, DynamoDBStorage) else None

    def count_service_items(parsed: dict[str, Any] | None = None, **_: Any) -> None:
        if parsed:
            service_items["items"] += len(parsed.get("Items", [])) + (1 if parsed.get("Item") else 0)

    if client is not None:
        client.meta.events.register("after-call.dynamodb", count_service_items, unique_id="map-reads")
    try:
        jobs = Cairn(
            _mapping(size), storage=counting, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep)
        )
        jobs.start("mapped", "mapped-1", state={})
        jobs.run_until_idle()
        done = jobs.get("mapped-1")
    finally:
        if client is not None:
            client.meta.events.unregister("after-call.dynamodb", unique_id="map-reads")
    assert done.status == JobStatus.COMPLETE, done.error
    assert done.result == sum(range(1, size + 1))
    return counting.records, service_items["items"]


def test_records_read_per_item_do_not_grow_from_10_to_100_items(
    fresh_store: Callable[[], Storage], clock: FakeClock
) -> None:
    measured = {size: _run_map(fresh_store(), clock, size) for size in SIZES}

    def item_reads(size: int) -> float:
        return sum(measured[size][0][name] for name in ITEM_READS) / size

    def all_reads(size: int) -> float:
        return sum(measured[size][0].values()) / size

    small, large = SIZES
    # an item reads its record to claim it (its finish writes on the version its claim wrote, and its successor
    # is scheduled unread); the last item of each slot reads the map's record; then reads every record once, and
    # the map's record: 2 per item, 1 per slot and 1 per map, whatever its size
    assert item_reads(small) == pytest.approx(2 + (CONCURRENCY + 1) / small)
    assert item_reads(large) == pytest.approx(2 + (CONCURRENCY + 1) / large)
    assert all_reads(large) <= all_reads(small)
    if measured[small][1]:  # DynamoDB: the items the service returned, per map item
        assert measured[large][1] / large <= measured[small][1] / small


def _after_history(transitions: int, size: int) -> Pipeline[Any]:
    """``count`` loops ``transitions`` times (each a transition, each a history item), then maps ``size`` items."""
    pipeline: Pipeline[Any] = Pipeline("mapped")

    @pipeline.phase
    def count(ctx: PhaseContext[Any]) -> Next | Map:
        if ctx.state["n"] < transitions:
            return Next("count", state={"n": ctx.state["n"] + 1})
        return Map(list(range(size)), phase="item", then="total", max_concurrency=CONCURRENCY)

    @pipeline.phase
    def item(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    @pipeline.phase
    def total(ctx: PhaseContext[Any]) -> Done:
        return Done(len(ctx.results or []))

    return pipeline


def test_what_dynamodb_returns_per_map_item_does_not_grow_with_the_jobs_history(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each item advance reads its route, its records and the job's view, never the job's whole history."""
    size = 20
    # no worker dies here: the test kit's recovery pass (which reads each running job whole) is left out
    monkeypatch.setattr(Cairn, "recover", lambda self, **_: [])

    def returned_per_item(transitions: int) -> float:
        with mock_aws():
            client = dynamodb_client()
            store = DynamoDBStorage(new_table(client), client=client, clock=clock)
            jobs = Cairn(
                _after_history(transitions, size),
                storage=store,
                scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep),
            )
            jobs.start("mapped", "long-1", state={"n": 0})
            while (route := store.get_route("long-1")) is not None and route.next_phase == "count":  # not counted
                jobs.run_until_idle(max_steps=1)
            returned = Counter[str]()

            def count(parsed: dict[str, Any] | None = None, **_: Any) -> None:
                if parsed:
                    returned["items"] += len(parsed.get("Items", [])) + (1 if parsed.get("Item") else 0)
                    returned["items"] += sum(len(found) for found in parsed.get("Responses", {}).values())

            client.meta.events.register("after-call.dynamodb", count, unique_id="history-reads")
            jobs.run_until_idle()
            client.meta.events.unregister("after-call.dynamodb", unique_id="history-reads")
            assert jobs.get("long-1").result == size
            return returned["items"] / size

    short, long = returned_per_item(2), returned_per_item(120)
    assert long <= short * 1.1, f"{short:.2f} items returned per map item after 2 transitions, {long:.2f} after 120"


def _item_read_units(meter: DynamoDBMeter, store: Storage, clock: FakeClock, size: int) -> list[float]:
    """The read units of each item advance of one job mapping ``size`` items, as DynamoDB bills them."""
    scheduler = InlineScheduler(now=clock.monotonic, sleep=clock.sleep)
    jobs = Cairn(_mapping(size), storage=store, scheduler=scheduler)  # binds the scheduler to jobs.advance
    items: list[float] = []

    def metered(job_id: str, **message: Any) -> None:
        meter.take()
        jobs.advance(job_id, **message)
        if message.get("item") is not None:
            items.append(meter.take().read_units)

    scheduler.bind(metered)
    jobs.start("mapped", "mapped-1", state={})
    scheduler.drain()
    assert jobs.get("mapped-1").status == JobStatus.COMPLETE
    return items


def test_a_map_item_costs_two_read_units_on_dynamodb_as_it_bills_them(clock: FakeClock) -> None:
    """An item advance reads the job item (1 unit) and its own record to claim it (1 unit); its finish writes on
    the version its claim wrote, and its successor is scheduled unread. The last item of each of the map's slots
    also reads the map's record: 2 units per item plus 1 per slot, at 10 items as at 100."""
    with mock_aws():
        client = dynamodb_client()
        meter = DynamoDBMeter(client)
        try:
            per_item = {}
            for size in SIZES:
                store = DynamoDBStorage(new_table(client), client=client, clock=clock)
                items = _item_read_units(meter, store, clock, size)
                assert len(items) == size
                per_item[size] = sum(items) / size
        finally:
            meter.detach()
    assert per_item == {size: 2 + CONCURRENCY / size for size in SIZES}
