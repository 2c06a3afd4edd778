"""cairn dev's DynamoDB stream source: a table's changes delivered to its function as Lambda delivers them."""

from __future__ import annotations

import io
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

import pytest

from cairn.dev import moto_streams
from cairn.dev.coverage import detach_event_sources
from cairn.dev.environments import Outcome
from cairn.dev.event_filters import FilterError, parse
from cairn.dev.event_filters import passes as delivered
from cairn.dev.lambda_service import LambdaService
from cairn.dev.logs import DevLog
from cairn.dev.models import StreamSource
from cairn.dev.moto_streams import bounded_streams
from cairn.dev.stream_poller import StreamPoller
from tests.aws import REGION, SESSION, dynamodb_client, shared_moto, sqs_client

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

ACCOUNT = "123456789012"
"""moto's account."""
JOBS_ONLY = '{"dynamodb": {"Keys": {"sk": {"S": ["JOB"]}}}}'
HISTORY = '{"dynamodb": {"Keys": {"sk": {"S": [{"prefix": "H#"}]}}}}'
ABOVE_TWO = '{"dynamodb": {"NewImage": {"n": {"N": [{"numeric": [">", 2]}]}}}}'

Handler = Callable[[dict[str, Any]], Outcome]


@dataclass
class RecordingLambdas:
    """The local Lambda as a stream poller sees it: each event recorded, answered by ``handler``."""

    handler: Handler = lambda event: Outcome(None)
    events: list[dict[str, Any]] = field(default_factory=list)
    log: DevLog = field(default_factory=lambda: DevLog(io.StringIO()))
    region: str = REGION
    account: str = ACCOUNT
    sqs: Any = None
    delivered: threading.Event = field(default_factory=threading.Event)

    def invoke(self, name: str, payload: Any) -> Outcome:
        assert name == "counter"
        self.events.append(payload)
        self.delivered.set()
        return self.handler(payload)

    def function_arn(self, name: str) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account}:function:{name}"


@dataclass
class Table:
    client: DynamoDBClient
    name: str
    stream_arn: str

    def put(self, sk: str, status: str, pk: str = "JOB#alice#j1") -> None:
        self.client.put_item(TableName=self.name, Item={"pk": {"S": pk}, "sk": {"S": sk}, "status": {"S": status}})

    def delete(self, sk: str, pk: str = "JOB#alice#j1") -> None:
        self.client.delete_item(TableName=self.name, Key={"pk": {"S": pk}, "sk": {"S": sk}})


@pytest.fixture
def table() -> Iterator[Table]:
    """A table with a stream of new and old images, on moto in-process."""
    with shared_moto():
        client = dynamodb_client()
        name = f"cairn-stream-{uuid.uuid4().hex[:12]}"
        created = client.create_table(
            TableName=name,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )
        yield Table(client, name, created["TableDescription"]["LatestStreamArn"])
        client.delete_table(TableName=name)


def poller(table: Table, lambdas: RecordingLambdas, **settings: Any) -> StreamPoller:
    values: dict[str, Any] = {
        "stream_arn": table.stream_arn,
        "starting_position": "TRIM_HORIZON",
        "batch_size": 100,
        "report_batch_item_failures": True,
        "filters": (JOBS_ONLY,),
        **settings,
    }
    streams = SESSION.client("dynamodbstreams", region_name=REGION)
    return StreamPoller(streams, StreamSource(**values), "counter", cast("LambdaService", lambdas), threading.Event())


def sequence_numbers(event: dict[str, Any]) -> list[str]:
    return [record["dynamodb"]["SequenceNumber"] for record in event["Records"]]


def test_an_insert_a_modify_and_a_remove_arrive_as_lambdas_dynamodb_event(table: Table) -> None:
    lambdas = RecordingLambdas()
    table.put("JOB", "running")
    table.put("JOB", "succeeded")
    table.delete("JOB")

    assert poller(table, lambdas).poll_once() == 3

    (event,) = lambdas.events
    insert, modify, remove = event["Records"]
    assert [record["eventName"] for record in event["Records"]] == ["INSERT", "MODIFY", "REMOVE"]
    keys = {"pk": {"S": "JOB#alice#j1"}, "sk": {"S": "JOB"}}
    for record in event["Records"]:
        assert record["eventSource"] == "aws:dynamodb"
        assert record["eventVersion"] == "1.1"
        assert record["eventSourceARN"] == table.stream_arn
        assert record["awsRegion"] == REGION
        assert record["eventID"]
        assert record["dynamodb"]["Keys"] == keys
        assert record["dynamodb"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
        assert isinstance(record["dynamodb"]["ApproximateCreationDateTime"], int)
        assert record["dynamodb"]["SizeBytes"] > 0
    assert insert["dynamodb"]["NewImage"]["status"] == {"S": "running"}
    assert "OldImage" not in insert["dynamodb"]
    assert modify["dynamodb"]["OldImage"]["status"] == {"S": "running"}
    assert modify["dynamodb"]["NewImage"]["status"] == {"S": "succeeded"}
    assert remove["dynamodb"]["OldImage"]["status"] == {"S": "succeeded"}
    assert "NewImage" not in remove["dynamodb"]
    numbers = [int(number) for number in sequence_numbers(event)]
    assert numbers == sorted(numbers)


def test_records_the_filter_does_not_pass_are_passed_over_and_invoke_nothing(table: Table) -> None:
    lambdas = RecordingLambdas()
    reader = poller(table, lambdas)
    table.put("H#1#000000000001#t", "running")
    table.put("SAVE#t", "running")

    assert reader.poll_once() == 2  # read and done, without an invocation
    assert lambdas.events == []

    table.put("JOB", "running")
    table.put("INPUT#t", "running")
    reader.poll_once()
    (event,) = lambdas.events
    assert [record["dynamodb"]["Keys"]["sk"] for record in event["Records"]] == [{"S": "JOB"}]
    assert reader.poll_once() == 0  # nothing new


def test_a_batch_the_function_fails_on_is_delivered_again_whole(table: Table) -> None:
    answers = iter([Outcome({"errorMessage": "boom"}, error="Unhandled"), Outcome(None), Outcome(None)])
    lambdas = RecordingLambdas(handler=lambda event: next(answers))
    reader = poller(table, lambdas)
    table.put("JOB", "running", pk="JOB#alice#j1")
    table.put("JOB", "running", pk="JOB#alice#j2")

    assert reader.poll_once() == 0
    table.put("JOB", "running", pk="JOB#alice#j3")  # written while the batch waits for its retry
    assert reader.poll_once() == 2

    first, second = lambdas.events
    assert second == first
    reader.poll_once()
    assert [record["dynamodb"]["Keys"]["pk"]["S"] for record in lambdas.events[2]["Records"]] == ["JOB#alice#j3"]


def test_batch_item_failures_resume_at_the_first_failed_record(table: Table) -> None:
    def fail_the_second(event: dict[str, Any]) -> Outcome:
        numbers = sequence_numbers(event)
        if len(numbers) == 3:
            return Outcome({"batchItemFailures": [{"itemIdentifier": numbers[2]}, {"itemIdentifier": numbers[1]}]})
        return Outcome({"batchItemFailures": []})

    lambdas = RecordingLambdas(handler=fail_the_second)
    reader = poller(table, lambdas)
    for job in ("j1", "j2", "j3"):
        table.put("JOB", "running", pk=f"JOB#alice#{job}")

    assert reader.poll_once() == 0
    reader.poll_once()

    first, again = lambdas.events
    assert sequence_numbers(again) == sequence_numbers(first)[1:]
    assert reader.poll_once() == 0  # all done
    assert len(lambdas.events) == 2


def test_an_answer_naming_no_record_of_the_batch_fails_it_whole(table: Table) -> None:
    answers = iter([Outcome({"batchItemFailures": [{"itemIdentifier": "not-a-record"}]}), Outcome(None)])
    lambdas = RecordingLambdas(handler=lambda event: next(answers))
    reader = poller(table, lambdas)
    table.put("JOB", "running")

    reader.poll_once()
    reader.poll_once()

    assert lambdas.events[1] == lambdas.events[0]


def test_a_batch_failing_past_its_retries_is_given_up_with_its_record_in_the_queue(table: Table) -> None:
    sqs = sqs_client()
    with shared_moto():
        queue = sqs.create_queue(QueueName=f"cairn-failures-{uuid.uuid4().hex[:12]}")["QueueUrl"]
        lambdas = RecordingLambdas(handler=lambda event: Outcome({"errorMessage": "boom"}, error="Unhandled"), sqs=sqs)
        reader = poller(table, lambdas, maximum_retry_attempts=2, on_failure_queue=queue)
        table.put("JOB", "running")

        for _ in range(3):
            reader.poll_once()
        assert len(lambdas.events) == 3  # the first try and two retries
        (message,) = sqs.receive_message(QueueUrl=queue)["Messages"]
        table.put("JOB", "succeeded")
        reader.poll_once()

    assert len(lambdas.events) == 4
    assert [record["eventName"] for record in lambdas.events[3]["Records"]] == ["MODIFY"]
    info = json.loads(message["Body"])["DDBStreamBatchInfo"]
    assert info["streamArn"] == table.stream_arn
    assert info["startSequenceNumber"] == info["endSequenceNumber"] == sequence_numbers(lambdas.events[0])[0]


def test_the_poller_thread_delivers_and_stops_with_the_others(table: Table) -> None:
    lambdas = RecordingLambdas()
    reader = poller(table, lambdas)
    reader.thread.start()
    table.put("JOB", "running")
    assert lambdas.delivered.wait(60), "the stream was not delivered"
    reader.stop.set()
    reader.thread.join(60)
    assert not reader.thread.is_alive()


def test_moto_delivers_nothing_itself_once_its_mappings_are_detached(table: Table) -> None:
    from moto.dynamodb.models import dynamodb_backends

    with shared_moto():
        model = dynamodb_backends[ACCOUNT][REGION].get_table(table.name)
        model.lambda_event_source_mappings["arn:aws:lambda:us-east-1:123456789012:function:counter"] = object()
        detach_event_sources(REGION, ACCOUNT)
        assert model.lambda_event_source_mappings == {}
        table.put("JOB", "running")  # moto, with a mapping left, would invoke it and empty the stream

    lambdas = RecordingLambdas()
    assert poller(table, lambdas).poll_once() == 1


@pytest.mark.parametrize(
    ("pattern", "record", "passes"),
    [
        (JOBS_ONLY, {"dynamodb": {"Keys": {"sk": {"S": "JOB"}}}}, True),
        (JOBS_ONLY, {"dynamodb": {"Keys": {"sk": {"S": "JOBS"}}}}, False),
        (JOBS_ONLY, {"dynamodb": {}}, False),
        (
            '{"dynamodb": {"Keys": {"sk": {"S": [{"prefix": "H#"}]}}}}',
            {"dynamodb": {"Keys": {"sk": {"S": "H#1"}}}},
            True,
        ),
        (
            '{"dynamodb": {"Keys": {"sk": {"S": [{"prefix": "H#"}]}}}}',
            {"dynamodb": {"Keys": {"sk": {"S": "JOB"}}}},
            False,
        ),
        ('{"eventName": ["INSERT", "MODIFY"]}', {"eventName": "REMOVE"}, False),
        ('{"eventName": [{"anything-but": "REMOVE"}]}', {"eventName": "MODIFY"}, True),
        ('{"dynamodb": {"NewImage": {"error": [{"exists": false}]}}}', {"dynamodb": {"NewImage": {}}}, True),
        (
            '{"dynamodb": {"NewImage": {"n": {"N": [{"numeric": [">", 2]}]}}}}',
            {"dynamodb": {"NewImage": {"n": {"N": "3"}}}},
            True,
        ),
        (
            '{"dynamodb": {"NewImage": {"n": {"N": [{"numeric": [">", 2]}]}}}}',
            {"dynamodb": {"NewImage": {"n": {"N": "2"}}}},
            False,
        ),
        ('{"dynamodb": {"Keys": {"sk": {"S": ["JOB"]}}}}', {"dynamodb": {"Keys": {"sk": {"N": "1"}}}}, False),
    ],
)
def test_filter_patterns_match_as_lambdas_do(pattern: str, record: dict[str, Any], passes: bool) -> None:
    assert delivered([parse(pattern)], record) is passes


@pytest.mark.parametrize("pattern", ["not json", "[]", '{"sk": "JOB"}', '{"sk": [{"wildcard": "J*"}]}'])
def test_a_filter_pattern_it_cannot_read_is_refused(pattern: str) -> None:
    with pytest.raises(FilterError):
        parse(pattern)


def test_a_lost_iterator_is_asked_again_where_it_was_and_nothing_is_delivered_twice(table: Table) -> None:
    from moto.dynamodbstreams.models import dynamodbstreams_backends

    lambdas = RecordingLambdas()
    reader = poller(table, lambdas)
    table.put("JOB", "running")
    reader.poll_once()
    with shared_moto():
        dynamodbstreams_backends[ACCOUNT][REGION].shard_iterators.clear()  # as DynamoDB expires one
        table.put("JOB", "succeeded")
    with pytest.raises(KeyError):  # moto in-process: its error for an iterator it does not know
        reader.poll_once()
    reader.poll_once()

    names = [[record["eventName"] for record in event["Records"]] for event in lambdas.events]
    assert names == [["INSERT"], ["MODIFY"]]


def test_moto_keeps_a_streams_records_for_a_day_and_its_newest_iterators(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodbstreams.models import dynamodbstreams_backends

    with shared_moto(), bounded_streams():
        shard = dynamodb_backends[ACCOUNT][REGION].get_table(table.name).stream_shard
        assert shard is not None
        table.put("JOB", "running", pk="JOB#alice#old")
        (old,) = shard.items
        old.record["dynamodb"]["ApproximateCreationDateTime"] = datetime.now(UTC) - timedelta(hours=25)
        table.put("JOB", "running", pk="JOB#alice#new")
        (kept,) = shard.items
        assert kept.record["dynamodb"]["SequenceNumber"] == str(shard.starting_sequence_number)

        lambdas = RecordingLambdas()
        reader = poller(table, lambdas)
        monkeypatch.setattr(moto_streams, "KEPT_ITERATORS", 3)
        for _ in range(6):
            reader.poll_once()
        assert len(dynamodbstreams_backends[ACCOUNT][REGION].shard_iterators) == 3

    (event,) = lambdas.events
    assert [record["dynamodb"]["Keys"]["pk"]["S"] for record in event["Records"]] == ["JOB#alice#new"]
    assert sequence_numbers(event) == [kept.record["dynamodb"]["SequenceNumber"]]
