"""The load tests' and ``cairn dev``'s moto shims answer every request as moto does: same items, errors, rollbacks."""

from __future__ import annotations

import inspect
import json
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.core.serialize import ResponseSerializer

from cairn.aws.dynamodb.schema import create_table
from cairn.dev.moto_responses import quick_moto_responses
from cairn.dev.moto_speedups import proportional_moto

if TYPE_CHECKING:
    from collections.abc import Iterator

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
    for job, created in (("d", "10"), ("e", "9"), ("f", "100"), ("g", "9.5"), ("h", "9.50")):  # another owner's
        client.put_item(TableName=TABLE, Item={**_item(f"JOB#{job}", "JOB", owner="o#1"), "createdAt": {"N": created}})
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
    for forward in (True, False):  # numbers in their order, not as text; the other owner's left out
        listing["ExpressionAttributeValues"] = {":o": {"S": "o#1"}}
        listing["ScanIndexForward"] = forward
        page = _answer(client.query, Limit=3, **listing)
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


@contextmanager
def _each_response_built_twice(mismatches: list[str]) -> Iterator[list[str]]:
    """Moto builds each response under the shim and again with moto's own lookup; a difference is recorded.

    The suite runs under the shim (tests/conftest.py): moto's own lookup is what the shim wraps.
    """
    own_lookup = inspect.unwrap(ResponseSerializer.get_value)
    assert own_lookup.__module__ == "moto.core.serialize"
    built: list[str] = []
    with quick_moto_responses():
        quick_lookup = ResponseSerializer.get_value
        quick_serialize = ResponseSerializer.serialize

        def serialize(self: ResponseSerializer, result: Any) -> Any:
            answer = quick_serialize(self, result)
            again = type(self)(self.operation_model, pretty_print=self.pretty_print, value_picker=self._value_picker)
            ResponseSerializer.get_value = own_lookup  # type: ignore[method-assign]
            try:
                expected = quick_serialize(again, result)
            finally:
                ResponseSerializer.get_value = quick_lookup  # type: ignore[method-assign]
            built.append(self.operation_name)
            if answer != expected:
                mismatches.append(f"{self.operation_name}: {answer!r} != {expected!r}")
            return answer

        ResponseSerializer.serialize = serialize  # type: ignore[method-assign]
        try:
            yield built
        finally:
            ResponseSerializer.serialize = quick_serialize  # type: ignore[method-assign]


_MACHINE = {"StartAt": "Pass", "States": {"Pass": {"Type": "Pass", "Result": {"done": True}, "End": True}}}


@pytest.mark.usefixtures("fake_credentials")
def test_cairn_devs_response_shim_builds_every_response_as_moto_does() -> None:
    mismatches: list[str] = []
    with mock_aws(), _each_response_built_twice(mismatches) as built:
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_table(dynamodb, TABLE)
        dynamodb_answers = _scenario(dynamodb)
        dynamodb.put_item(TableName=TABLE, Item={**_item("JOB#m", "JOB"), "blob": {"B": b"\x00\xff"}, "n": {"N": "3"}})
        dynamodb.get_item(TableName=TABLE, Key=_item("JOB#m", "JOB"), ReturnConsumedCapacity="TOTAL")
        _answer(dynamodb.get_item, TableName="missing", Key=_item("JOB#m", "JOB"))
        dynamodb.describe_table(TableName=TABLE)
        sqs = boto3.client("sqs", region_name="us-east-1")
        queue = sqs.create_queue(QueueName="shim", Attributes={"VisibilityTimeout": "5"})["QueueUrl"]
        sqs.send_message(
            QueueUrl=queue, MessageBody="one", MessageAttributes={"k": {"DataType": "String", "StringValue": "v"}}
        )
        sqs.receive_message(QueueUrl=queue, MessageAttributeNames=["All"], AttributeNames=["All"])
        sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["All"])
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        role = "arn:aws:iam::123456789012:role/shim"
        machine = sfn.create_state_machine(name="shim", definition=json.dumps(_MACHINE), roleArn=role)
        execution = sfn.start_execution(stateMachineArn=machine["stateMachineArn"], name="one", input="{}")
        sfn.describe_execution(executionArn=execution["executionArn"])
        sfn.list_executions(stateMachineArn=machine["stateMachineArn"])
        sfn.get_execution_history(executionArn=execution["executionArn"])

    assert mismatches == []
    assert dynamodb_answers == _answers(nullcontext())  # what the client reads, too
    for operation in ("Query", "TransactWriteItems", "GetItem", "ReceiveMessage", "DescribeExecution"):
        assert operation in built  # each went through the shim
