"""What a phase transition costs in DynamoDB write units, as DynamoDB bills them on demand.

The state is written once per transition, in the commit's history item; the job item stays small,
so its claim and its commit cost one write unit each, and the claim is followed by one read of
the state (at most one read unit up to 4 KB). A state of a few hundred bytes also travels in the job item,
within its one write unit: the claim returns it, and a transition is three requests with no read.

The benchmark's meter (``benchmarks/dynamodb_meter.py``) reads every written item before and after the
write through its own client and prices the table and index writes from the item sizes.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pytest

from benchmarks.cost import (
    CapturingScheduler,
    JobCost,
    document_state,
    incompressible_state,
    measure_job,
    noop_pipeline,
)
from benchmarks.dynamodb_meter import DynamoDBMeter, Figures, item_size, number_size
from cairn import Done, JobStatus, Next, PhaseContext, Pipeline, advance_phase, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from tests.functional.conftest import Moto

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KB = 1024
#: (state maker, state bytes as JSON) -> the most write units a middle transition may cost (2 + the state's
#: 1 KB units). Random base64 gzips to about 76%; states above 8 KB compressed (the break-even of S3 against
#: the item's write and read units: benchmarks/offload.py) go to S3 and the history item keeps a reference.
CEILINGS = {
    ("incompressible", 200): 3,
    ("incompressible", KB): 4,
    ("incompressible", 4 * KB): 7,
    ("incompressible", 10 * KB): 11,
    ("incompressible", KB * KB): 4,
    ("document", 200): 3,
    ("document", KB): 4,
    ("document", 4 * KB): 7,
    ("document", 10 * KB): 12,
    ("document", KB * KB): 4,
}
STATES = {"incompressible": incompressible_state, "document": document_state}
#: States small enough for the job item to keep them too, within its one write unit.
SMALL = {200}
SIZES = pytest.mark.parametrize(("kind", "size"), list(CEILINGS), ids=[f"{kind}-{size}B" for kind, size in CEILINGS])


def _run_job(moto: Moto, kind: str, size: int) -> JobCost:
    meter = DynamoDBMeter(moto.dynamodb, s3=moto.s3)
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3)
    try:
        return measure_job(storage, noop_pipeline(), meter, f"units-{kind}-{size}", STATES[kind](size))
    finally:
        meter.detach()


def _breakdown(figures: Figures) -> str:
    lines = [f"{figures.write_units} write units ({figures.table_units} table, {figures.index_units} index):"]
    lines += [
        f"  {record.operation} {record.key.get('sk', {}).get('S')}: {record.size_before} -> {record.size_after} B, "
        f"{record.table_units} table + {record.index_units} index ({record.index_writes} index writes)"
        for record in figures.records
    ]
    return "\n".join(lines)


def _records(figures: Figures, sk_prefix: str) -> list[Any]:
    return [record for record in figures.records if record.key.get("sk", {}).get("S", "").startswith(sk_prefix)]


@SIZES
def test_a_middle_transition_writes_the_state_once_and_reads_it_once(moto: Moto, kind: str, size: int) -> None:
    cost = _run_job(moto, kind, size)

    assert len(cost.middle) == 3
    for figures in cost.middle:
        (history,) = _records(figures, "H#")
        apart = _records(figures, "ENTRY#")  # the state, when the history item would make its read dearer
        claim, commit = _records(figures, "JOB")
        assert claim.table_units == commit.table_units == 1, _breakdown(figures)  # the job item stays small
        written = sum(math.ceil(record.size_after / KB) for record in [history, *apart])
        assert figures.write_units == 2 + written, _breakdown(figures)  # the state once
        assert figures.index_units == 0, _breakdown(figures)
        assert figures.write_units <= CEILINGS[(kind, size)], _breakdown(figures)
        held = apart[0] if apart else history
        if size in SMALL:  # the job item keeps it too: the claim returns it, and no other item is read
            assert dict(figures.dynamodb) == {"UpdateItem": 2, "PutItem": 1}
            assert figures.read_units == 0.0
        else:  # the state, read from the item that keeps it, after the claim: what that item costs
            assert figures.dynamodb["GetItem"] == 1
            assert figures.read_units == math.ceil(held.size_after / (4 * KB)), _breakdown(figures)
            assert figures.read_units <= max(1, math.ceil(size / (4 * KB)))


@SIZES
def test_the_finish_costs_its_seven_index_writes_more_than_a_middle_transition(
    moto: Moto, kind: str, size: int
) -> None:
    cost = _run_job(moto, kind, size)

    finish = cost.finish
    (history,) = _records(finish, "H#")
    (claim, commit) = _records(finish, "JOB")
    assert history.size_after < KB  # the finish enters no phase: its history item keeps no state
    assert claim.table_units == 1
    # The status changes: the job's Listing and PipelineListing entries are rewritten in place (their keys stay),
    # its StatusListing entry moves (a delete and a put) and it leaves Stalled; its CostListing entry moves too (its
    # cost at the finish is its key: a delete and a put).
    assert finish.index_units == 7, _breakdown(finish)
    assert [record.index_writes for record in (claim, commit)] == [0, 7], _breakdown(finish)
    assert finish.write_units == 2 + commit.table_units + finish.index_units, _breakdown(finish)
    # the start put the job's entry in Listing, StatusListing, PipelineListing, Stalled and CostListing
    assert cost.start.index_units == 5, _breakdown(cost.start)
    # at most 7 write units more than a middle transition: its index writes
    assert finish.write_units <= max(step.write_units for step in cost.middle) + 7, _breakdown(finish)


@SIZES
def test_the_input_is_not_rewritten_after_the_start(moto: Moto, kind: str, size: int) -> None:
    cost = _run_job(moto, kind, size)

    for figures in [*cost.middle, cost.finish]:
        rewritten = [record.operation for record in figures.records if "input" in record.attributes]
        assert not rewritten, f"writes after the start carry the input: {rewritten}"


def _logging_pipeline(lines: int) -> Pipeline[Any]:
    """``talk`` logs ``lines`` lines of 80 characters and hands the state on; ``listen`` returns it."""
    pipeline: Pipeline[Any] = Pipeline("state-read-cost")

    @pipeline.phase
    def talk(ctx: PhaseContext[Any]) -> Next:
        for number in range(lines):
            ctx.log(f"{number:06d} " + "x" * 73)
        return Next("listen", ctx.state)

    @pipeline.phase
    def listen(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    return pipeline


@pytest.mark.parametrize("size", [KB, 4 * KB - 512], ids=["1KB", "3.5KB"])
@pytest.mark.parametrize("lines", [0, 100, 1000])
def test_the_state_read_costs_what_the_state_costs_whatever_the_phase_before_logged(
    moto: Moto, lines: int, size: int
) -> None:
    meter = DynamoDBMeter(moto.dynamodb, s3=moto.s3)
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3)
    state = incompressible_state(size)
    pipeline = _logging_pipeline(lines)
    scheduler = CapturingScheduler()
    job_id = f"logged-{lines}-{size}"

    def advance() -> Figures:
        _, phase, sequence = scheduler.take()
        meter.take()
        advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, phase=phase, sequence=sequence)
        return meter.take()

    try:
        run_pipeline(job_id, pipeline, storage=storage, scheduler=scheduler, initial_state=state)
        talked = advance()  # talk: logs, enters listen
        listened = advance()  # listen: reads the state, finishes
    finally:
        meter.detach()
    job = storage.get_job(job_id)
    assert job is not None
    assert job.status == JobStatus.COMPLETE
    assert job.result == state
    assert len([entry for entry in job.log if entry.message.endswith("x" * 73)]) == lines
    assert listened.dynamodb["GetItem"] == 1
    assert listened.read_units == 1.0, _breakdown(listened)  # the state alone, however long the log before it
    assert talked.write_requests == 3  # the claim; the history, its state apart when the log is long; the commit
    apart = _records(talked, "ENTRY#")
    assert len(apart) == (1 if lines else 0)  # a log that would make the state's read dearer: the state apart
    history = _records(talked, "H#")[0]
    assert talked.write_units <= 2 + math.ceil(history.size_after / KB) + math.ceil(size / KB)


def test_the_job_item_stays_small_whatever_the_state(moto: Moto) -> None:
    cost = _run_job(moto, "incompressible", 4 * KB)

    for figures in cost.middle:
        jobs = [record for record in figures.records if record.key.get("sk", {}).get("S") == "JOB"]
        assert len(jobs) == 2, _breakdown(figures)  # the claim and the commit
        assert all(max(record.size_before, record.size_after) < KB for record in jobs), _breakdown(figures)


def _meter_table(client: DynamoDBClient, name: str = "meter-check") -> str:
    """A table with one GSI (``status``, ``createdAt``) that projects ``title``."""
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "status", "AttributeType": "S"},
            {"AttributeName": "createdAt", "AttributeType": "N"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "ByStatus",
                "KeySchema": [
                    {"AttributeName": "status", "KeyType": "HASH"},
                    {"AttributeName": "createdAt", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["title"]},
            }
        ],
    )
    return name


def test_the_meter_prices_writes_from_item_sizes_and_index_changes(moto: Moto) -> None:
    client = moto.dynamodb
    table = _meter_table(client)
    meter = DynamoDBMeter(client)
    key = {"pk": {"S": "item-1"}, "sk": {"S": "A"}}
    item = {**key, "status": {"S": "open"}, "createdAt": {"N": "20"}, "title": {"S": "hello"}}
    item["body"] = {"S": "x" * 2000}
    # name + value: pk 2+6, sk 2+1, status 6+4, createdAt 9+2 (one digit), title 5+5, body 4+2000
    assert item_size(item) == 8 + 3 + 10 + 11 + 10 + 2004 == 2046

    def update(expression: str, **extra: object) -> Figures:
        client.update_item(TableName=table, Key=key, UpdateExpression=expression, **extra)  # type: ignore[arg-type]
        return meter.take()

    client.put_item(TableName=table, Item=item)
    put = meter.take()
    assert (put.table_units, put.index_units) == (2, 1)  # 2046 B; the 42-byte entry enters the index
    assert put.records[0].attributes == set(item)

    title = update("SET title = :t", ExpressionAttributeValues={":t": {"S": "world!"}})
    assert (title.table_units, title.index_units) == (2, 1)  # 2047 B; a projected attribute changed
    assert title.records[0].attributes == {"title"}

    body = update("SET body = :b", ExpressionAttributeValues={":b": {"S": "y"}})
    assert (body.records[0].size_before, body.records[0].size_after) == (2047, 48)
    assert (body.table_units, body.index_units) == (2, 0)  # the larger of before and after; nothing projected

    status = {"#s": "status"}
    moved = update("SET #s = :s", ExpressionAttributeNames=status, ExpressionAttributeValues={":s": {"S": "x"}})
    assert (moved.table_units, moved.index_units) == (1, 2)  # the index key changed: a delete and a put
    assert moved.records[0].attributes == {"status"}

    left = update("REMOVE #s", ExpressionAttributeNames=status)
    assert (left.table_units, left.index_units) == (1, 1)  # leaves the index: one delete

    client.delete_item(TableName=table, Key=key)
    deleted = meter.take()
    assert (deleted.table_units, deleted.index_units) == (1, 0)

    unindexed = {**key, "createdAt": {"N": "20"}, "body": {"S": "z" * 1500}}
    client.transact_write_items(TransactItems=[{"Put": {"TableName": table, "Item": unindexed}}])
    transaction = meter.take()
    assert (transaction.table_units, transaction.index_units) == (4, 0)  # 2 units, twice in a transaction

    client.get_item(TableName=table, Key=key, ConsistentRead=True)
    read = meter.take()
    assert (read.read_requests, read.write_requests, read.read_units) == (1, 0, 1.0)
    assert sum(meter.take().dynamodb.values()) == 0  # the meter's own reads are not counted


def test_the_meter_bills_reads_on_whole_items_and_on_every_item_a_query_evaluates(moto: Moto) -> None:
    client = moto.dynamodb
    table = _meter_table(client, "meter-reads")
    meter = DynamoDBMeter(client)
    keys = [{"pk": {"S": "p"}, "sk": {"S": str(number)}} for number in (1, 2, 3)]
    for key in keys:
        item = {**key, "status": {"S": "open"}, "createdAt": {"N": "20"}, "title": {"S": "hello"}}
        client.put_item(TableName=table, Item={**item, "body": {"S": "x" * 5000}})
    # pk 2+1, sk 2+1, status 6+4, createdAt 9+2, title 5+5, body 4+5000: 2 units per 4 KB started
    assert item_size(client.get_item(TableName=table, Key=keys[0])["Item"]) == 5041
    meter.take()

    def bill(call: Any, **params: Any) -> Figures:
        call(**params)
        return meter.take()

    one = {"TableName": table, "Key": keys[0]}
    projected = bill(client.get_item, **one, ProjectionExpression="pk", ConsistentRead=True)
    assert (projected.consistent_read_units, projected.eventual_read_units) == (2.0, 0.0)  # the whole item
    assert bill(client.get_item, **one).eventual_read_units == 1.0  # eventually consistent: half
    missing = bill(client.get_item, TableName=table, Key={"pk": {"S": "none"}, "sk": {"S": "1"}}, ConsistentRead=True)
    assert missing.read_units == 1.0  # a read that finds nothing still costs a unit

    query: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "pk = :p",
        "FilterExpression": "title = :t",
        "ExpressionAttributeValues": {":p": {"S": "p"}, ":t": {"S": "none of them"}},
        "ConsistentRead": True,
    }
    filtered = bill(client.query, **query)
    assert filtered.consistent_read_units == 4.0  # 3 x 5041 B evaluated, summed, then rounded up: none returned
    assert bill(client.query, **query, Limit=2).consistent_read_units == 3.0  # 2 evaluated: 10,082 B
    page = client.query(**query, Limit=2)
    meter.take()
    rest = bill(client.query, **query, Limit=2, ExclusiveStartKey=page["LastEvaluatedKey"])
    assert rest.consistent_read_units == 2.0  # the last item alone
    on_index = bill(
        client.query,
        TableName=table,
        IndexName="ByStatus",
        KeyConditionExpression="#s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": "open"}},
    )
    assert (on_index.consistent_read_units, on_index.eventual_read_units) == (0.0, 0.5)  # 3 entries of 37 B
    scanned = bill(
        client.scan,
        TableName=table,
        FilterExpression="title = :t",
        ExpressionAttributeValues={":t": {"S": "none of them"}},
        ConsistentRead=True,
    )
    assert scanned.consistent_read_units == 4.0

    batch = {"Keys": [keys[0], keys[1], {"pk": {"S": "none"}, "sk": {"S": "1"}}], "ProjectionExpression": "sk"}
    assert bill(client.batch_get_item, RequestItems={table: batch}).eventual_read_units == 2.5  # 1 + 1 + 0.5
    transaction = [{"Get": {"TableName": table, "Key": keys[2], "ProjectionExpression": "sk"}}]
    assert bill(client.transact_get_items, TransactItems=transaction).consistent_read_units == 4.0  # twice 2
    assert sum(meter.take().dynamodb.values()) == 0  # the meter's own reads are not counted


def test_item_sizes_follow_dynamodb_rules() -> None:
    assert number_size("1700000000000") == 2  # leading and trailing zeros are trimmed
    assert number_size("-12.345") == 5  # five digits -> 3 bytes, +1, +1 when negative
    nested = {"m": {"M": {"a": {"N": "1"}, "bb": {"L": [{"S": "xy"}, {"BOOL": True}]}}}}
    # "m" + 3 + ("a" + 2 + 1) + ("bb" + (3 + (2 + 1) + (1 + 1)) + 1)
    assert item_size(nested) == 1 + 3 + 4 + 11 == 19
    assert item_size({"s": {"SS": ["ab", "c"]}, "b": {"B": b"\x00\x01"}, "n": {"NULL": True}}) == 4 + 3 + 2
