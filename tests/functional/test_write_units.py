"""What a phase transition costs in DynamoDB write units, as DynamoDB bills them on demand.

The benchmark's meter (``benchmarks/dynamodb_meter.py``) reads every written item before and after the
write through its own client and prices the table and index writes from the item sizes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from benchmarks.cost import JobCost, document_state, measure_job, noop_pipeline
from benchmarks.dynamodb_meter import DynamoDBMeter, Figures, item_size, number_size
from cairn.aws.dynamodb import DynamoDBStorage
from tests.functional.conftest import Moto

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

SMALL_STATES = pytest.mark.parametrize("size", [200, 1024], ids=["200B", "1KB"])


def _run_job(moto: Moto, size: int) -> JobCost:
    meter = DynamoDBMeter(moto.dynamodb, s3=moto.s3)
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3)
    try:
        return measure_job(storage, noop_pipeline(), meter, f"units-{size}", document_state(size))
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


@SMALL_STATES
def test_a_middle_transition_costs_at_most_three_write_units_and_no_reads(moto: Moto, size: int) -> None:
    cost = _run_job(moto, size)

    assert len(cost.middle) == 3
    for figures in cost.middle:
        assert figures.read_requests == 0, dict(figures.dynamodb)
        assert figures.write_units <= 3, _breakdown(figures)


@SMALL_STATES
def test_the_input_is_not_rewritten_after_the_start(moto: Moto, size: int) -> None:
    cost = _run_job(moto, size)

    for figures in [*cost.middle, cost.finish]:
        rewritten = [record.operation for record in figures.records if "input" in record.attributes]
        assert not rewritten, f"writes after the start carry the input: {rewritten}"


def _meter_table(client: DynamoDBClient) -> str:
    """A table with one GSI (``status``, ``createdAt``) that projects ``title``."""
    client.create_table(
        TableName="meter-check",
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
    return "meter-check"


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


def test_item_sizes_follow_dynamodb_rules() -> None:
    assert number_size("1700000000000") == 2  # leading and trailing zeros are trimmed
    assert number_size("-12.345") == 5  # five digits -> 3 bytes, +1, +1 when negative
    nested = {"m": {"M": {"a": {"N": "1"}, "bb": {"L": [{"S": "xy"}, {"BOOL": True}]}}}}
    # "m" + 3 + ("a" + 2 + 1) + ("bb" + (3 + (2 + 1) + (1 + 1)) + 1)
    assert item_size(nested) == 1 + 3 + 4 + 11 == 19
    assert item_size({"s": {"SS": ["ab", "c"]}, "b": {"B": b"\x00\x01"}, "n": {"NULL": True}}) == 4 + 3 + 2
