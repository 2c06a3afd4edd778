"""The own requests floor sends the very requests cairn's transitions made, for a copy of its job, and each lands."""

from __future__ import annotations

import io
from functools import partial
from typing import Any

from benchmarks import overhead
from benchmarks.cost import KB, MB, document_state, loop_pipeline, moto_backend
from benchmarks.own_requests import OwnRequests, Recorder, renamed
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.core.settings import Settings


def _job_partition(backend: Any, job: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = backend.dynamodb.query(
        TableName=backend.table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"JOB#default#{job}"}},
        ConsistentRead=True,
    )["Items"]
    return items


def _comparable(value: Any) -> Any:
    """``value`` with any request body read out (a body is a stream, equal only to itself)."""
    if isinstance(value, io.BytesIO):
        return value.getvalue()
    if isinstance(value, dict):
        return {key: _comparable(item) for key, item in value.items()}
    return value


def _replayed(size: int, transitions: int) -> None:
    with moto_backend() as backend:
        storage = DynamoDBStorage(
            backend.table, client=backend.dynamodb, bucket=backend.bucket, s3_client=backend.s3, settings=Settings()
        )
        start = partial(overhead._started, storage, loop_pipeline(), "own-a", document_state(size))
        clients = (backend.dynamodb, backend.s3)
        own = OwnRequests(clients, start, recorded_job="own-a", replayed_job="own-b", transitions=transitions)
        recorded = [[(call.method, _comparable(call.params)) for call in step] for step in reversed(own.steps)]
        assert all(recorded)

        for step in recorded:
            with Recorder(clients).recording() as sent:
                own.transition()  # a refused condition would raise here
            assert [(call.method, _comparable(call.params)) for call in sent] == step

        assert renamed(_job_partition(backend, "own-a"), "own-a", "own-b") == _job_partition(backend, "own-b")


def test_a_small_state_s_transitions_are_sent_again_request_for_request_and_the_copy_ends_as_cairn_s_job() -> None:
    _replayed(KB, 3)


def test_a_state_kept_in_s3_is_put_and_read_back_by_the_replay_too() -> None:
    _replayed(MB, 2)


def test_renaming_reaches_every_string_and_leaves_bytes_alone() -> None:
    value = {"pk": {"S": "JOB#default#own-a"}, "own-a": [b"own-a", "states/own-a/x"]}

    assert renamed(value, "own-a", "own-b") == {"pk": {"S": "JOB#default#own-b"}, "own-b": [b"own-a", "states/own-b/x"]}
