"""The load tests' moto shim answers every request as moto does: same items, same errors, same rollbacks."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from cairn.aws.dynamodb.schema import create_table
from cairn.dev.moto_speedups import proportional_moto

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TABLE = "speedups"


def _item(pk: str, sk: str, **extra: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}, **{name: {"S": value} for name, value in extra.items()}}


def _answer(call: Any, **request: Any) -> Any:
    """The response without its metadata, or the error code and the cancellation reasons."""
    try:
        response = dict(call(**request))
    except ClientError as error:
        reasons = [reason.get("Code") for reason in error.response.get("CancellationReasons", [])]
        return ("error", error.response["Error"]["Code"], reasons)
    response.pop("ResponseMetadata", None)
    return response


def _key_query(client: DynamoDBClient, partition: str, sort_key: str = "", **more: Any) -> Any:
    """A query on the table's key: one partition, and ``sort_key``'s condition when given."""
    values = {":p": {"S": partition}, **more.pop("ExpressionAttributeValues", {})}
    condition = f"pk = :p AND {sort_key}" if sort_key else "pk = :p"
    return _answer(
        client.query, TableName=TABLE, KeyConditionExpression=condition, ExpressionAttributeValues=values, **more
    )


def _scenario(client: DynamoDBClient) -> list[Any]:
    """Writes, cancelled and applied transactions, and queries on the key and on an index, in order."""
    answers: list[Any] = []
    for job in ("a", "b", "c"):
        for rank in range(5):
            client.put_item(TableName=TABLE, Item=_item(f"JOB#{job}", f"H#{rank:03d}"))
        client.put_item(TableName=TABLE, Item={**_item(f"JOB#{job}", "JOB", owner="o#0"), "createdAt": {"N": "5"}})
    cancelled: list[Any] = [
        {"Put": {"TableName": TABLE, "Item": _item("JOB#a", "H#new")}},
        {
            "Update": {
                "TableName": TABLE,
                "Key": _item("JOB#b", "H#001"),
                "UpdateExpression": "SET note = :n",
                "ExpressionAttributeValues": {":n": {"S": "changed"}},
            }
        },
        {"Delete": {"TableName": TABLE, "Key": _item("JOB#c", "H#002")}},
        {
            "ConditionCheck": {
                "TableName": TABLE,
                "Key": _item("JOB#c", "H#000"),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        },
    ]
    answers.append(_answer(client.transact_write_items, TransactItems=cancelled))
    answers.append(_answer(client.transact_write_items, TransactItems=cancelled[:1] * 2))  # the same item twice
    answers.append(_answer(client.transact_write_items, TransactItems=cancelled[:3]))  # applied
    for forward in (True, False):
        page = _key_query(client, "JOB#a", Limit=3, ScanIndexForward=forward)
        answers.append(page)
        answers.append(
            _key_query(client, "JOB#a", ScanIndexForward=forward, ExclusiveStartKey=page["LastEvaluatedKey"])
        )
    answers.append(_key_query(client, "JOB#c", "begins_with(sk, :s)", ExpressionAttributeValues={":s": {"S": "H#00"}}))
    answers.append(_key_query(client, "JOB#nobody"))
    answers.append(
        _answer(
            client.query,
            TableName=TABLE,
            IndexName="Listing",
            KeyConditionExpression="#o = :o",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":o": {"S": "o#0"}},
        )
    )
    for forward in (True, False):  # an index's pages, both ways
        listing = {
            "TableName": TABLE,
            "IndexName": "Listing",
            "KeyConditionExpression": "#o = :o",
            "ExpressionAttributeNames": {"#o": "owner"},
            "ExpressionAttributeValues": {":o": {"S": "o#0"}},
            "ScanIndexForward": forward,
        }
        page = _answer(client.query, Limit=2, **listing)
        answers.append(page)
        answers.append(_answer(client.query, ExclusiveStartKey=page["LastEvaluatedKey"], **listing))
    answers.append(_answer(client.scan, TableName=TABLE))
    return answers


def _answers(shim: AbstractContextManager[None]) -> list[Any]:
    with mock_aws(), shim:
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, TABLE)
        return _scenario(client)


@pytest.fixture
def fake_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)


@pytest.mark.usefixtures("fake_credentials")
def test_moto_answers_the_same_with_the_shim_as_without() -> None:
    plain = _answers(nullcontext())
    shimmed = _answers(proportional_moto())

    assert shimmed == plain
    cancelled, twice, applied = plain[:3]
    assert cancelled == ("error", "TransactionCanceledException", ["None", "None", "None", "ConditionalCheckFailed"])
    assert twice[:2] == ("error", "ValidationException")
    assert not isinstance(applied, tuple)  # applied, not refused
    scanned = {(item["pk"]["S"], item["sk"]["S"]): item for item in plain[-1]["Items"]}
    assert ("JOB#a", "H#new") in scanned  # the applied transaction only
    assert ("JOB#c", "H#002") not in scanned
    assert scanned[("JOB#b", "H#001")]["note"] == {"S": "changed"}


@pytest.mark.usefixtures("fake_credentials")
def test_a_cancelled_transaction_leaves_every_item_as_it_was_under_the_shim() -> None:
    with mock_aws(), proportional_moto():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, TABLE)
        client.put_item(TableName=TABLE, Item=_item("JOB#a", "JOB", note="before"))
        before = client.scan(TableName=TABLE)["Items"]
        refused: list[Any] = [
            {"Put": {"TableName": TABLE, "Item": _item("JOB#a", "JOB", note="after")}},
            {"Put": {"TableName": TABLE, "Item": _item("JOB#z", "JOB")}},
            {
                "ConditionCheck": {
                    "TableName": TABLE,
                    "Key": _item("JOB#a", "H#1"),
                    "ConditionExpression": "attribute_exists(pk)",
                }
            },
        ]
        with pytest.raises(ClientError, match="TransactionCanceled"):
            client.transact_write_items(TransactItems=refused)

        assert client.scan(TableName=TABLE)["Items"] == before
