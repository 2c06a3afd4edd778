"""What a page dearest first costs on many jobs, metered as DynamoDB bills it (every entry a Query evaluates):
printed, and held to the listing's target (0.2 read units a job listed) where no filter thins the entries.

``make test-long`` seeds 2,000 jobs (moto queries an index of 10,000 items slowly: about 160 s for this file);
``make cost-order-proof`` (``CAIRN_COST_ORDER_PROOF=1``) the 10,000 that docs/SCALE.md's figures come from. A page
without a filter reads the same at any size.

The 10,000 job items are copies of one real job's item (so each index entry has a real entry's size), each
with its own id, shard, creation time, status and cost, written in batches: what the indexes then hold is
what 10,000 runs would leave.
"""

from __future__ import annotations

import itertools
import os
import random
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from benchmarks.dynamodb_meter import DynamoDBMeter, Figures
from cairn import Done, JobStatus, PhaseContext, Pipeline, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage, schema
from cairn.aws.listing import JobFilter
from cairn.dev.moto_speedups import proportional_moto
from tests.functional.conftest import Moto
from tests.support import FakeClock, make_scheduler

OWNER = "priced"
JOBS = 10_000 if os.environ.get("CAIRN_COST_ORDER_PROOF") == "1" else 2_000
RARE_EVERY = 100  # one job in a hundred failed: a filter that matches 1%


def one_job(storage: DynamoDBStorage) -> dict[str, Any]:
    """The item of a real job that ran to its end, as the store wrote it."""
    pipeline: Pipeline[Any] = Pipeline("billed")

    @pipeline.phase
    def only(ctx: PhaseContext[Any]) -> Done:
        ctx.add_usage(lambda_requests=1)
        return Done({"ok": True})

    scheduler = make_scheduler(pipeline, storage)
    run_pipeline("model-job", pipeline, storage=storage, scheduler=scheduler, initial_state={"doc": "a"})
    scheduler.drain()
    table = storage._table  # the item as stored, to copy
    item = table.client.get_item(TableName=table.name, Key=table.key("model-job"))["Item"]
    return dict(item)


def copies(storage: DynamoDBStorage, model: dict[str, Any], clock: FakeClock) -> Iterator[dict[str, Any]]:
    randomly = random.Random(45)
    codec = storage._table.codec
    for number in range(JOBS):
        job_id = f"job-{number:05d}"
        item = dict(model)
        cost = {"N": str(Decimal(randomly.randrange(1, 10**9)) / Decimal(10**12))}
        failed = number % RARE_EVERY == 0
        item |= {
            "pk": {"S": codec.pk(job_id)},
            "jobId": {"S": job_id},
            "owner": {"S": codec.owner_key(job_id)},
            "createdAt": {"N": str(clock.now_ms - JOBS + number)},
            "status": {"S": JobStatus.ERROR.value if failed else JobStatus.COMPLETE.value},
            schema.COST_ATTRIBUTE: cost,
            schema.LISTED_COST_ATTRIBUTE: cost,
        }
        yield item


@pytest.fixture(scope="module")
def priced(moto_module: Moto) -> DynamoDBStorage:
    """JOBS jobs of one owner, their costs spread at random over six orders of magnitude."""
    clock = FakeClock()
    storage = DynamoDBStorage(moto_module.table, owner=OWNER, client=moto_module.dynamodb, clock=clock)
    model = one_job(storage)
    client = moto_module.dynamodb
    items = copies(storage, model, clock)
    while batch := list(itertools.islice(items, 25)):
        client.batch_write_item(RequestItems={moto_module.table: [{"PutRequest": {"Item": item}} for item in batch]})
    return storage


@pytest.fixture(scope="module")
def moto_module() -> Iterator[Moto]:
    from tests.aws import delete_bucket, delete_table, dynamodb_client, new_bucket, new_table, s3_client, shared_moto

    with shared_moto(), proportional_moto():
        dynamodb, s3 = dynamodb_client(), s3_client()
        made = Moto(dynamodb, s3, new_table(dynamodb), new_bucket(s3))
        yield made
        delete_table(dynamodb, made.table)
        delete_bucket(s3, made.bucket)


def metered(storage: DynamoDBStorage, action: Any) -> tuple[Any, Figures]:
    meter = DynamoDBMeter(storage._table.client)
    try:
        meter.take()
        result = action()
        return result, meter.take()
    finally:
        meter.detach()


def test_a_page_dearest_first_reads_no_job_and_at_most_0_2_units_a_job(
    priced: DynamoDBStorage, capsys: pytest.CaptureFixture[str]
) -> None:
    cursor = None
    last: float | None = None
    for number in (1, 2, 3):
        page, figures = metered(priced, lambda cursor=cursor: priced.cost_page(limit=50, cursor=cursor))
        costs = [summary.cost_usd for summary in page.jobs]
        assert len(costs) == 50
        assert costs == sorted(costs, reverse=True)
        assert last is None or costs[0] <= last
        last, cursor = costs[-1], page.cursor
        assert figures.dynamodb["BatchGetItem"] == 0  # no job item read
        assert figures.read_units / 50 <= 0.2
        with capsys.disabled():
            print(
                f"\ndearest first, page {number} of 50 of {JOBS:,} jobs: {figures.read_units} read units "
                f"({figures.read_units / 50:.3f} a job), {figures.read_requests} requests"
            )


def test_a_filtered_page_dearest_first_reads_what_its_filter_passes_over(
    priced: DynamoDBStorage, capsys: pytest.CaptureFixture[str]
) -> None:
    where = JobFilter(status=JobStatus.ERROR)  # 1 job in 100
    page, figures = metered(priced, lambda: priced.cost_page(limit=50, where=where))
    assert page.jobs
    assert all(summary.status == JobStatus.ERROR for summary in page.jobs)
    costs = [summary.cost_usd for summary in page.jobs]
    assert costs == sorted(costs, reverse=True)
    assert figures.dynamodb["BatchGetItem"] == 0
    # bounded: at most MAX_ROUNDS rounds of 250 entries a shard, about 40 KB (5 read units) a shard a round
    assert figures.read_units <= 8 * 4 * 5
    with capsys.disabled():
        print(
            f"\ndearest first, status error (1% of {JOBS:,}): {len(page.jobs)} jobs for {figures.read_units} read "
            f"units, {figures.read_requests} requests"
        )


def test_the_newest_first_page_reads_each_jobs_cost_in_one_batch(
    priced: DynamoDBStorage, capsys: pytest.CaptureFixture[str]
) -> None:
    def listed() -> dict[str, dict[str, float]]:
        page = priced.list_page(limit=50)
        return priced.job_usages([summary.job_id for summary in page.jobs])

    usages, figures = metered(priced, listed)
    assert len(usages) == 50
    assert figures.dynamodb["BatchGetItem"] == 1
    assert figures.read_units <= 2.5 + 50 * 0.5  # the entries, then half a unit a job item of up to 4 KB
    with capsys.disabled():
        print(
            f"\nnewest first with costs, page of 50: {figures.read_units} read units, {figures.read_requests} requests"
        )
