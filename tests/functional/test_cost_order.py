"""Dearest first across the whole filter: through the store (DynamoDB on moto, and the memory store through the
same port), each page's costs follow on from the page before, every matching job comes once, and each is
listed at the cost its own view shows; a store of an earlier release refuses the order, saying so."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from cairn import ConfigurationError, Done, InvalidInputError, JobStatus, Next, Pipeline, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.listing import JobFilter
from cairn.core.context import PhaseContext
from cairn.core.engine import pause_job
from cairn.core.storage_port import Storage
from cairn.features.cost import cost_of
from cairn.features.prices import load_prices
from cairn.storage.memory import MemoryStorage
from tests.functional.api_client import ALICE, Api
from tests.functional.conftest import Moto
from tests.support import FakeClock, make_scheduler

_owners = itertools.count()


def priced(name: str) -> Pipeline[Any]:
    """A one-phase pipeline whose run meters ``state["requests"]`` Lambda requests: a cost set per job."""
    pipeline: Pipeline[Any] = Pipeline(name)

    @pipeline.phase
    def only(ctx: PhaseContext[Any]) -> Done:
        ctx.add_usage(lambda_requests=ctx.state["requests"])
        return Done()

    return pipeline


def run_jobs(storage: Storage, clock: FakeClock, jobs: list[tuple[str, str, int]]) -> None:
    """Run each ``(job id, pipeline, requests)`` to completion, a second apart."""
    for job_id, name, requests in jobs:
        clock.now_ms += 1000
        pipeline = priced(name)
        scheduler = make_scheduler(pipeline, storage)
        run_pipeline(job_id, pipeline, storage=storage, scheduler=scheduler, initial_state={"requests": requests})
        scheduler.drain()


def pages(storage: Storage, where: JobFilter | None, limit: int) -> list[list[tuple[str, float | None]]]:
    listed: list[list[tuple[str, float | None]]] = []
    cursor: str | None = None
    for _ in range(100):
        page = storage.cost_page(where=where, cursor=cursor, limit=limit)
        assert len(page.jobs) <= limit
        listed.append([(summary.job_id, summary.cost_usd) for summary in page.jobs])
        cursor = page.cursor
        if cursor is None:
            return listed
    raise AssertionError("the cost order never ends")


@pytest.fixture(params=["dynamodb", "memory"])
def store(request: pytest.FixtureRequest, clock: FakeClock) -> Storage:
    if request.param == "memory":
        return MemoryStorage(clock=clock)
    moto: Moto = request.getfixturevalue("moto")
    return DynamoDBStorage(moto.table, owner=f"cost-{next(_owners)}", client=moto.dynamodb, clock=clock)


def test_pages_dearest_first_follow_on_across_the_filter(store: Storage, clock: FakeClock) -> None:
    # costs deliberately out of creation order, and spread so that every page holds the newest and oldest alike
    requests = [7, 300, 2, 55, 120, 9, 480, 33, 1, 260, 75, 14, 190, 5, 400, 61]
    jobs = [(f"job-{n:02}", "billed" if n % 4 else "other", count) for n, count in enumerate(requests)]
    run_jobs(store, clock, jobs)
    where = JobFilter(pipeline="billed", status=JobStatus.COMPLETE)

    listed = pages(store, where, limit=3)

    assert len(listed) >= 4  # 12 matches, 3 a page
    costs = [[usd for _, usd in page] for page in listed]
    for page in costs:
        assert page == sorted(page, reverse=True)  # type: ignore[type-var]
    for before, after in itertools.pairwise(page for page in costs if page):
        assert after[0] <= before[-1]  # type: ignore[operator]  # page 2 starts where page 1 ended
    matching = [job_id for job_id, name, _ in jobs if name == "billed"]
    assert sorted(job_id for page in listed for job_id, _ in page) == sorted(matching)
    prices = load_prices()
    for job_id, usd in (entry for page in listed for entry in page):
        job = store.get_job(job_id)
        assert job is not None
        assert usd == pytest.approx(cost_of(job.usage, prices).usd, rel=1e-9, abs=1e-12)  # as its view shows it


def test_a_cursor_of_another_filter_or_order_is_refused(store: Storage, clock: FakeClock) -> None:
    run_jobs(store, clock, [(f"job-{n}", "billed", n + 1) for n in range(5)])
    cursor = store.cost_page(where=JobFilter(pipeline="billed"), limit=2).cursor
    assert cursor is not None
    with pytest.raises(InvalidInputError, match="cursor"):
        store.cost_page(where=JobFilter(pipeline="other"), cursor=cursor, limit=2)
    if isinstance(store, DynamoDBStorage):
        newest_first = store.list_page(limit=2).cursor
        with pytest.raises(InvalidInputError, match="cursor"):
            store.cost_page(cursor=newest_first, limit=2)


def test_a_pause_keeps_the_job_in_its_place_at_the_cost_it_had(moto: Moto, clock: FakeClock) -> None:
    storage = DynamoDBStorage(moto.table, owner=f"cost-{next(_owners)}", client=moto.dynamodb, clock=clock)
    pipeline: Pipeline[Any] = Pipeline("stepped")

    @pipeline.phase
    def first(ctx: PhaseContext[Any]) -> Next:
        ctx.add_usage(lambda_requests=1000)
        return Next("second", ctx.state)

    @pipeline.phase
    def second(ctx: PhaseContext[Any]) -> Done:
        return Done()

    run_jobs(storage, clock, [("cheap", "billed", 1)])
    scheduler = make_scheduler(pipeline, storage)
    run_pipeline("paused", pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)  # the first phase ran: the job is running, its cost is on its item
    pause_job("paused", storage=storage)

    listed = storage.cost_page(limit=10).jobs
    assert [summary.job_id for summary in listed] == ["paused", "cheap"]
    paused = storage.get_job("paused")
    assert paused is not None
    assert paused.status == JobStatus.PAUSED
    assert listed[0].cost_usd == pytest.approx(cost_of(paused.usage, load_prices()).usd)


class _NoCostOrder(MemoryStorage):
    """A store as an earlier release wrote it: no cost order of its own."""

    cost_page = Storage.cost_page


def test_a_store_without_a_cost_order_refuses_it_by_name(clock: FakeClock) -> None:
    with pytest.raises(ConfigurationError, match="dearest first"):
        _NoCostOrder(clock=clock).cost_page()


def _cost_pages(api: Api, query: dict[str, str]) -> list[list[tuple[str, float]]]:
    pages: list[list[tuple[str, float]]] = []
    cursor: str | None = None
    while True:
        answer = api.call(
            "list-jobs", caller=ALICE, query={**query, "sort": "cost", **({"cursor": cursor} if cursor else {})}
        )
        assert answer.status == 200, answer.body
        pages.append([(job["jobId"], job["costUsd"]) for job in answer.body["jobs"]])
        cursor = answer.body.get("cursor")
        if not cursor:
            return pages


def test_the_api_pages_dearest_first_across_the_filter_and_refuses_a_foreign_cursor(api: Api) -> None:
    api.create("api-dear", document="invoice.txt")
    api.create("api-cheap", document="missing.txt")
    api.run()
    api.create("api-new")  # started after the others ran: it has cost nothing yet
    api.create("other-job")  # the filter leaves it out

    pages = _cost_pages(api, {"idPrefix": "api-", "limit": "1"})

    assert all(len(page) <= 1 for page in pages)  # a page of one: the order is the API's, not the page's
    listed = [entry for page in pages for entry in page]
    assert [job_id for job_id, _ in listed] == ["api-dear", "api-cheap", "api-new"]  # across the pages
    for job_id, usd in listed:  # each at the cost its view shows (none of them running)
        assert usd == api.call("get-job", caller=ALICE, job_id=job_id).body["cost"]["usd"]
    assert listed[0][1] > listed[1][1] > listed[2][1] == 0

    newest_first = api.call("list-jobs", caller=ALICE, query={"limit": "1"}).body["cursor"]
    for cursor in (newest_first, "x" * 5000, "not a cursor"):
        answer = api.call("list-jobs", caller=ALICE, query={"sort": "cost", "cursor": cursor})
        assert answer.status == 400, answer.body
        assert len(str(answer.body)) < 2_000


def test_a_table_without_the_cost_index_refuses_the_order_saying_why(moto: Moto, clock: FakeClock) -> None:
    from cairn.aws.dynamodb.cost_listings import CostOrderUnavailable

    indexes = moto.dynamodb.describe_table(TableName=moto.table)["Table"]["GlobalSecondaryIndexes"]
    table = f"{moto.table}-before"
    kept = [index for index in indexes if index["IndexName"] != "CostListing"]
    moto.dynamodb.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            definition
            for definition in moto.dynamodb.describe_table(TableName=moto.table)["Table"]["AttributeDefinitions"]
            if definition["AttributeName"] != "listCost"
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {"IndexName": index["IndexName"], "KeySchema": index["KeySchema"], "Projection": index["Projection"]}
            for index in kept
        ],
    )
    try:
        storage = DynamoDBStorage(table, owner="before", client=moto.dynamodb, clock=clock)
        run_jobs(storage, clock, [("older", "billed", 3)])
        with pytest.raises(CostOrderUnavailable, match="CostListing index is missing or still being built") as refused:
            storage.cost_page()
        assert refused.value.retryable
        assert storage.list_page().jobs  # the newest-first listing is unaffected
    finally:
        moto.dynamodb.delete_table(TableName=table)
