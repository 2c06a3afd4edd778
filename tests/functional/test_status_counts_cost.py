"""What kept counts cost as DynamoDB bills them, printed: the writes of applying the stream (per batch and per
status change) and a count's read, beside the re-read count of the same jobs. 200 jobs, each started, run and
finished (two status changes each, 3 records), delivered in batches of up to 100 records as Lambda delivers them."""

from __future__ import annotations

from typing import Any

from benchmarks.dynamodb_meter import DynamoDBMeter
from cairn import JobStatus
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.core.settings import Settings
from tests.functional.conftest import Moto
from tests.functional.test_status_counts import Stream, deliver, seed
from tests.support import FakeClock

JOBS = 200
BATCH = 100


def test_kept_counts_cost_a_write_a_batch_and_half_a_read_unit_a_count(moto: Moto, clock: FakeClock) -> None:
    settings = Settings(table_name=moto.table, status_counts="maintained")
    storage = DynamoDBStorage(moto.table, owner="busy", client=moto.dynamodb, clock=clock, settings=settings)
    stream = Stream(moto)
    seed(storage, clock, complete=1, running=0, name="first-")
    deliver(moto, clock, stream.records())  # the counts begin
    moto.dynamodb.delete_item(TableName=moto.table, Key=storage._table.key("first-done-000"))
    seed(storage, clock, complete=JOBS, running=0)
    records = [r for r in stream.records() if r["dynamodb"]["Keys"]["sk"]["S"] == "JOB"]  # the template's filter
    changes = sum(1 for r in records if _status(r, "NewImage") != _status(r, "OldImage"))

    meter = DynamoDBMeter(moto.dynamodb)
    try:
        meter.take()
        deliver(moto, clock, records, batch=BATCH)
        applying = meter.take()
        storage.count_jobs()  # the first count finds no older job left and notes it
        meter.take()
        kept = storage.count_jobs()
        counting = meter.take()
        reread = DynamoDBStorage(moto.table, owner="busy", client=moto.dynamodb, clock=clock, settings=Settings())
        recount = reread.count_jobs()
        recounting = meter.take()
    finally:
        meter.detach()

    batches = -(-len(records) // BATCH)
    print(
        f"\n{JOBS} jobs, {len(records)} records of job items ({changes} status changes) in {batches} batches:"
        f"\n  applying: {applying.write_units} write units, {applying.read_units} read units "
        f"({applying.write_units / batches:.2f} write units a batch, {applying.write_units / changes:.4f} a change)"
        f"\n  a count: {counting.read_units} read units kept, {recounting.read_units} re-read"
    )
    assert kept.counts[JobStatus.COMPLETE] == recount.counts[JobStatus.COMPLETE] == JOBS
    assert kept.maintained
    assert counting.read_units == 0.5
    assert applying.write_units <= 2 * batches  # one UpdateItem of the counts item per batch, at most 2 KB
    assert applying.read_units <= 1.0  # since is read once a process


def _status(record: dict[str, Any], image: str) -> str | None:
    status = record["dynamodb"].get(image, {}).get("status", {}).get("S")
    return status if isinstance(status, str) else None
