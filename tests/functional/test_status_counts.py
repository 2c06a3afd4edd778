"""Counts kept by the table's stream: the scheduler function receives Lambda's DynamoDB Streams event of the job
items and keeps each owner's counts, and ``GET /jobs/counts`` (``count_jobs``) reads them in one read instead of
re-reading up to 4,000 index entries. Through moto's real stream, the records delivered as Lambda delivers them
(again after a failure, longer on a retry), TTL's removals, and jobs made before the stream."""

from __future__ import annotations

from typing import Any, cast

import boto3
import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchmarks.dynamodb_meter import DynamoDBMeter, Figures
from cairn import JobStatus, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.dynamodb.status_counts import COUNTS_SK, MAX_MARKS, counts_key
from cairn.aws.runtime import Runtime
from cairn.aws.scheduler_handler import scheduler_handler
from cairn.core.engine import cancel_job
from cairn.core.errors import StorageError
from cairn.core.models import JobCounts
from cairn.core.settings import Settings
from cairn.core.storage_port import Storage
from cairn.testing.invoker import LocalContext
from pipelines import PIPELINES
from tests.functional.conftest import Moto
from tests.functional.test_job_counts import expected, two_pipelines
from tests.support import FakeClock, make_scheduler

OWNER = "counted"


class Stream:
    """The table's stream, read as Lambda's event source reads it: each shard in order, from where it left off."""

    def __init__(self, moto: Moto) -> None:
        answer = moto.dynamodb.update_table(
            TableName=moto.table, StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
        )
        self.arn = answer["TableDescription"]["LatestStreamArn"]
        self.client = boto3.client("dynamodbstreams", region_name=moto.dynamodb.meta.region_name)
        self.iterators: dict[str, str] = {}

    def records(self) -> list[dict[str, Any]]:
        """Every record written since the last read, as Lambda's event carries it."""
        records: list[dict[str, Any]] = []
        for shard in self.client.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"]:
            shard_id = shard["ShardId"]
            if shard_id not in self.iterators:
                self.iterators[shard_id] = self.client.get_shard_iterator(
                    StreamArn=self.arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            while page := self.client.get_records(ShardIterator=self.iterators[shard_id]):  # up to 1,000 a call
                self.iterators[shard_id] = page["NextShardIterator"]
                records += [{**record, "eventSourceARN": self.arn} for record in page["Records"]]
                if not page["Records"]:
                    break
        return records


@pytest.fixture
def stream(moto: Moto) -> Stream:
    return Stream(moto)


@pytest.fixture
def storage(moto: Moto, clock: FakeClock) -> DynamoDBStorage:
    settings = Settings(table_name=moto.table, status_counts="maintained")
    return DynamoDBStorage(moto.table, owner=OWNER, client=moto.dynamodb, clock=clock, settings=settings)


def seed(storage: Storage, clock: FakeClock, *, complete: int, running: int, paused: int = 0, name: str = "") -> None:
    """Jobs that finish and jobs that run on (``paused`` of them paused), one second apart, ids prefixed by ``name``."""
    done, looping = two_pipelines()
    for number in range(complete + running + paused):
        clock.advance(1)
        pipeline = done if number < complete else looping
        scheduler = make_scheduler(pipeline, storage, clock)
        job_id = f"{name}{pipeline.name}-{number:03d}"
        run_pipeline(job_id, pipeline, storage=storage, scheduler=scheduler, initial_state={})
        if pipeline is done:
            scheduler.drain()
        if number >= complete + running:
            from cairn.core.engine import pause_job

            pause_job(job_id, storage=storage)


def deliver(moto: Moto, clock: FakeClock, records: list[dict[str, Any]], *, batch: int = 100) -> list[dict[str, Any]]:
    """The scheduler function's answers to the records, ``batch`` a time, each through a fresh process."""
    runtime = Runtime(settings=Settings(table_name=moto.table), dynamodb=moto.dynamodb, clock=clock)
    handler = scheduler_handler(PIPELINES, runtime=runtime)
    context = cast(LambdaContext, LocalContext("cairn-scheduler"))
    return [handler({"Records": records[at : at + batch]}, context) for at in range(0, len(records), batch)]


def metered_count(moto: Moto, storage: DynamoDBStorage) -> tuple[JobCounts, Figures]:
    """A count of the store's jobs, and what it cost as DynamoDB bills it."""
    meter = DynamoDBMeter(moto.dynamodb)
    try:
        meter.take()
        counts = storage.count_jobs()
        return counts, meter.take()
    finally:
        meter.detach()


def test_the_stream_keeps_each_owners_counts_and_a_count_is_one_read(
    moto: Moto, stream: Stream, storage: DynamoDBStorage, clock: FakeClock
) -> None:
    seed(storage, clock, complete=1, running=0, name="first-")
    deliver(
        moto, clock, stream.records()
    )  # the counts begin: the first job was made before, so it is read from the index
    moto.dynamodb.delete_item(TableName=moto.table, Key=storage._table.key("first-done-000"))  # TTL removes it
    seed(storage, clock, complete=7, running=3, paused=2)
    cancel_job("looping-007", storage=storage)
    other = storage.for_owner("someone-else")
    seed(other, clock, complete=2, running=0, paused=0)

    answers = deliver(moto, clock, stream.records(), batch=10)
    assert all(answer == {"batchItemFailures": []} for answer in answers)

    counts, figures = metered_count(moto, storage)
    assert counts.counts == expected(complete=7, running=2, paused=2, cancelled=1)
    assert (counts.total, counts.exact, counts.maintained) == (12, True, True)
    assert other.count_jobs().counts == expected(complete=2)
    # the first count found no job from before the counts left (one query a shard), and noted it
    assert dict(figures.dynamodb) == {"GetItem": 1, "Query": 4, "UpdateItem": 1}
    again, figures = metered_count(moto, storage)
    assert again.counts == counts.counts
    assert dict(figures.dynamodb) == {"GetItem": 1}
    assert figures.read_units == 0.5


def test_a_batch_delivered_again_counts_once_and_a_longer_one_counts_only_what_is_new(
    moto: Moto, stream: Stream, storage: DynamoDBStorage, clock: FakeClock
) -> None:
    seed(storage, clock, complete=3, running=0, paused=0)
    first = stream.records()
    deliver(moto, clock, first)
    deliver(moto, clock, first)  # the response was lost: Lambda delivers the same batch again
    assert storage.count_jobs().counts == expected(complete=3)

    seed(storage, clock, complete=0, running=2, name="more-")
    longer = first + stream.records()  # failed after applying, then delivered from the same record, longer
    deliver(moto, clock, longer)
    deliver(moto, clock, longer)
    assert storage.count_jobs().counts == expected(complete=3, running=2)


def test_a_failed_write_fails_the_batch_from_its_first_record_and_the_retry_counts_each_change_once(
    moto: Moto, stream: Stream, storage: DynamoDBStorage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(storage, clock, complete=2, running=0, paused=0)
    seed(storage.for_owner("second"), clock, complete=1, running=0, paused=0)
    records = stream.records()
    from cairn.aws.dynamodb import status_counts

    applied = status_counts.StatusCounts.apply

    def second_fails(self: status_counts.StatusCounts, owner: str, changes: Any) -> None:
        if owner == "second":
            raise StorageError("throttled", retryable=True)
        applied(self, owner, changes)

    monkeypatch.setattr(status_counts.StatusCounts, "apply", second_fails)
    (answer,) = deliver(moto, clock, records)
    assert answer == {"batchItemFailures": [{"itemIdentifier": records[0]["dynamodb"]["SequenceNumber"]}]}
    monkeypatch.setattr(status_counts.StatusCounts, "apply", applied)
    (answer,) = deliver(moto, clock, records)
    assert answer == {"batchItemFailures": []}
    assert storage.count_jobs().counts == expected(complete=2)
    assert storage.for_owner("second").count_jobs().counts == expected(complete=1)


def test_jobs_made_before_the_stream_are_read_from_the_index_until_ttl_removes_them(
    moto: Moto, storage: DynamoDBStorage, clock: FakeClock
) -> None:
    seed(storage, clock, complete=4, running=1, name="old-")  # before the stream: no record of them
    stream = Stream(moto)
    seed(storage, clock, complete=0, running=2, name="early-")
    clock.advance(1)
    deliver(moto, clock, stream.records())  # the counts begin now: the two early jobs were made before, too
    counts = storage.count_jobs()
    assert counts.counts == expected(complete=4, running=3)
    assert (counts.exact, counts.maintained) == (True, True)

    seed(storage, clock, complete=2, running=0, name="new-")  # made after the counts began
    deliver(moto, clock, stream.records())
    assert storage.count_jobs().counts == expected(complete=6, running=3)

    # TTL removes the jobs made before the counts: the stream's removals leave the counts as they were
    old = [f"old-done-{n:03d}" for n in range(4)] + ["old-looping-004", "early-looping-000", "early-looping-001"]
    for job_id in old:
        moto.dynamodb.delete_item(TableName=moto.table, Key=storage._table.key(job_id))
    deliver(moto, clock, stream.records())
    counts = storage.count_jobs()
    assert counts.counts == expected(complete=2)
    item = moto.dynamodb.get_item(TableName=moto.table, Key=counts_key(OWNER))["Item"]
    assert item["sk"]["S"] == COUNTS_SK
    assert "oldDone" in item


def test_ttl_removing_a_counted_job_takes_it_out_and_other_items_are_never_counted(
    moto: Moto, stream: Stream, storage: DynamoDBStorage, clock: FakeClock
) -> None:
    seed(storage, clock, complete=3, running=0, paused=0)
    deliver(moto, clock, stream.records())
    storage.count_jobs()
    moto.dynamodb.delete_item(TableName=moto.table, Key=storage._table.key("done-001"))  # as TTL's REMOVE does
    records = stream.records()
    assert [r["eventName"] for r in records if r["dynamodb"]["Keys"]["sk"]["S"] == "JOB"] == ["REMOVE"]
    deliver(moto, clock, records)
    assert storage.count_jobs().counts == expected(complete=2)
    # a history item's record, a malformed record and an unknown status: none breaks the batch
    junk: list[dict[str, Any]] = [
        {"eventSource": "aws:dynamodb", "eventID": "x1", "dynamodb": {"Keys": {"pk": {"S": "JOB#counted#j"}}}},
        {"eventSource": "aws:dynamodb", "eventID": "x2", "dynamodb": "not a change"},
        {
            "eventSource": "aws:dynamodb",
            "eventID": "x3",
            "dynamodb": {
                "Keys": {"pk": {"S": "JOB#counted#odd"}, "sk": {"S": "JOB"}},
                "NewImage": {"status": {"S": "sideways"}, "createdAt": {"N": str(clock())}},
                "SequenceNumber": "1",
            },
        },
    ]
    assert deliver(moto, clock, junk) == [{"batchItemFailures": []}]
    counts = storage.count_jobs()
    assert counts.counts == expected(complete=2)
    assert counts.unreadable == 1


def test_old_marks_are_removed_so_the_counts_item_stays_small(
    moto: Moto, stream: Stream, storage: DynamoDBStorage, clock: FakeClock
) -> None:
    for number in range(MAX_MARKS + 6):
        seed(storage, clock, complete=0, running=1, name=f"n{number}-")
        deliver(moto, clock, stream.records(), batch=1)
    item = moto.dynamodb.get_item(TableName=moto.table, Key=counts_key(OWNER))["Item"]
    assert len([name for name in item if name.startswith("m_")]) <= MAX_MARKS
    assert storage.count_jobs().counts[JobStatus.RUNNING] == MAX_MARKS + 6
