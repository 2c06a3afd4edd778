"""moto's DynamoDB streams kept as bounded as DynamoDB keeps them, for a ``cairn dev`` that runs for days.

moto keeps every shard iterator it hands out and every record of a stream for good; a stream poller reads each
table's stream every fraction of a second, so both would grow for as long as ``cairn dev`` runs. DynamoDB expires
an iterator 15 minutes after it is handed out and a record 24 hours after it is written. :func:`bounded_streams`
keeps the newest :data:`KEPT_ITERATORS` iterators (a poller uses each once, right away) and drops the records
older than :data:`RECORD_RETENTION_SECONDS`, moving the shard's first sequence number past them (the others keep
theirs).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Final
from unittest import mock

from moto.dynamodb.models.table import StreamShard
from moto.dynamodbstreams.models import DynamoDBStreamsBackend

KEPT_ITERATORS: Final = 1000
"""Shard iterators kept per account and region: the newest; an older one reads as unknown."""
RECORD_RETENTION_SECONDS: Final = 24 * 3600
"""How long a stream keeps a record (DynamoDB's 24 hours)."""


def _bounded_iterators(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def call(backend: DynamoDBStreamsBackend, *args: Any, **kwargs: Any) -> Any:
        result = original(backend, *args, **kwargs)
        iterators = backend.shard_iterators
        for stale in list(iterators)[: max(0, len(iterators) - KEPT_ITERATORS)]:
            del iterators[stale]
        return result

    return call


def _retained(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def add(shard: StreamShard, *args: Any, **kwargs: Any) -> Any:
        result = original(shard, *args, **kwargs)
        trim(shard, datetime.now(UTC).timestamp() - RECORD_RETENTION_SECONDS)
        return result

    return add


def trim(shard: StreamShard, before: float) -> int:
    """Drop the records of ``shard`` written before ``before`` (epoch seconds); how many were dropped."""
    expired = 0
    for record in shard.items:
        created = record.record["dynamodb"]["ApproximateCreationDateTime"]
        if _seconds(created) >= before:
            break
        expired += 1
    if expired:
        del shard.items[:expired]
        shard.starting_sequence_number += expired
    return expired


def _seconds(moment: Any) -> float:
    if isinstance(moment, datetime):
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    return float(moment)


@contextmanager
def bounded_streams() -> Iterator[None]:
    """While entered, moto forgets stream records and shard iterators as DynamoDB expires them."""
    with (
        mock.patch.object(
            DynamoDBStreamsBackend,
            "get_shard_iterator",
            _bounded_iterators(DynamoDBStreamsBackend.get_shard_iterator),
        ),
        mock.patch.object(
            DynamoDBStreamsBackend, "get_records", _bounded_iterators(DynamoDBStreamsBackend.get_records)
        ),
        mock.patch.object(StreamShard, "add", _retained(StreamShard.add)),
    ):
        yield
