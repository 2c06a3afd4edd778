"""A DynamoDB stream event source on localhost: the table's stream read into its function as Lambda reads it.

Each shard is read in order, up to the batch size at a time, from ``TRIM_HORIZON`` (or ``LATEST``). The
records that pass the source's ``FilterCriteria`` are sent, synchronously, as Lambda's DynamoDB Streams event
(:func:`stream_record`); the others are passed over, as Lambda discards them. A batch the function fails on
is sent again, whole; with ``ReportBatchItemFailures`` the next batch starts at the first failed record
(the records before it are done). After ``maximum_retry_attempts`` retries (none when it is -1) the batch is
given up: logged, and an on-failure record naming its shard and sequence numbers goes to the source's
queue when it has one. A shard with nothing new is read again after :data:`IDLE_POLL_SECONDS`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import threading
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from . import event_filters
from .event_sources import poll_until_stopped
from .lambda_service import LambdaService

if TYPE_CHECKING:
    from .models import StreamSource

EVENT_VERSION = "1.1"
"""The ``eventVersion`` of the records Lambda sends from a DynamoDB stream."""


def attribute_value(value: Any) -> Any:
    """An attribute value as Lambda's JSON event holds it: binary (``B``, ``BS``) as base64 text."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Mapping):
        return {str(key): attribute_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [attribute_value(item) for item in value]
    return value


def stream_record(record: Mapping[str, Any], stream_arn: str, region: str) -> dict[str, Any]:
    """The record of one stream record (as ``GetRecords`` returns it) in Lambda's DynamoDB Streams event."""
    change = dict(record.get("dynamodb") or {})
    created = change.get("ApproximateCreationDateTime")
    dynamodb: dict[str, Any] = {
        "ApproximateCreationDateTime": int(created.timestamp()) if isinstance(created, datetime) else created,
        "Keys": attribute_value(change.get("Keys") or {}),
    }
    for image in ("NewImage", "OldImage"):
        if image in change:
            dynamodb[image] = attribute_value(change[image])
    dynamodb["SequenceNumber"] = str(change["SequenceNumber"])
    dynamodb["SizeBytes"] = int(change.get("SizeBytes") or len(json.dumps(dynamodb, default=str)))
    dynamodb["StreamViewType"] = str(change.get("StreamViewType", ""))
    return {
        "eventID": str(record.get("eventID") or uuid.uuid4().hex),
        "eventName": str(record["eventName"]),
        "eventVersion": EVENT_VERSION,
        "eventSource": "aws:dynamodb",
        "awsRegion": region,
        "dynamodb": dynamodb,
        "eventSourceARN": stream_arn,
    }


@dataclass
class _Shard:
    """Where the poller is in one shard: the records read and not yet done (a batch being retried)."""

    shard_id: str
    iterator: str | None = None
    read_to: str | None = None
    """The sequence number of the last record read: where a new iterator starts after it."""
    pending: list[dict[str, Any]] = field(default_factory=list)
    """Lambda's records of what was read and is not done, in the shard's order."""
    retries: int = 0
    closed: bool = False


class StreamPoller:
    """Reads one table's stream into one function, on a thread, until stopped."""

    def __init__(
        self,
        streams: Any,
        source: StreamSource,
        function: str,
        lambdas: LambdaService,
        stop: threading.Event,
        working: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext,
    ) -> None:
        self.streams = streams
        """A DynamoDB Streams client (boto3's) of the local stack."""
        self.source = source
        self.function = function
        self.lambdas = lambdas
        self.stop = stop
        self.working = working
        """Entered around each read and what it delivers (the time skipper's, with ``--skip-waits``)."""
        self.filters = [event_filters.parse(pattern) for pattern in source.filters]
        self.shards: dict[str, _Shard] = {}
        self.thread = threading.Thread(target=self._loop, name=f"stream-{function}", daemon=True)

    def _loop(self) -> None:
        poll_until_stopped(self.stop, self.working, self.poll_once, self._failed)

    def _failed(self, exc: Exception) -> None:
        self.lambdas.log.say("stream", f"reading {self.source.stream_arn} failed: {exc}", "WARNING")

    def poll_once(self) -> int:
        """Read (or retry) one batch of each shard; how many records were done (0: none, or a batch failed)."""
        described = self.streams.describe_stream(StreamArn=self.source.stream_arn)["StreamDescription"]
        done = 0
        for shard in described.get("Shards") or []:
            state = self.shards.setdefault(str(shard["ShardId"]), _Shard(str(shard["ShardId"])))
            if not state.closed:
                done += self._poll_shard(state)
        return done

    def _poll_shard(self, shard: _Shard) -> int:
        self._read(shard)
        if not shard.pending:
            return 0
        batch = [record for record in shard.pending if event_filters.passes(self.filters, record)]
        if not batch:  # nothing passes the filters: the records are done
            return self._done(shard, len(shard.pending))
        outcome = self.lambdas.invoke(self.function, {"Records": batch})
        first_failed = 0 if outcome.failed else self._first_failed(batch, outcome.payload)
        if first_failed is None:
            return self._done(shard, len(shard.pending))
        failed = batch[first_failed]
        done = self._done(shard, shard.pending.index(failed), retried=True)
        if 0 <= self.source.maximum_retry_attempts < shard.retries:
            self._give_up(shard, outcome.payload)
        return done

    def _read(self, shard: _Shard) -> None:
        """Read up to the batch size of records into ``shard.pending``."""
        wanted = self.source.batch_size - len(shard.pending)
        if wanted <= 0 or (shard.retries and shard.pending):  # a batch being retried is sent again as it was
            return
        if shard.iterator is None:
            position: dict[str, str] = {"ShardIteratorType": self.source.starting_position}
            if shard.read_to is not None:
                position = {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": shard.read_to}
            shard.iterator = self.streams.get_shard_iterator(
                StreamArn=self.source.stream_arn, ShardId=shard.shard_id, **position
            )["ShardIterator"]
        try:
            read = self.streams.get_records(ShardIterator=shard.iterator, Limit=wanted)
        except Exception:
            shard.iterator = None  # expired, say: the next read asks for a new one where this one was
            raise
        shard.iterator = read.get("NextShardIterator")
        shard.closed = shard.iterator is None
        region = self.lambdas.region
        shard.pending.extend(stream_record(record, self.source.stream_arn, region) for record in read["Records"])
        if shard.pending:
            shard.read_to = shard.pending[-1]["dynamodb"]["SequenceNumber"]

    def _first_failed(self, batch: list[dict[str, Any]], payload: Any) -> int | None:
        """The index in ``batch`` of the first record the function reported failed (None: all done).

        As Lambda: an answer naming no known record, or an empty identifier, fails the whole batch.
        """
        if not self.source.report_batch_item_failures or not isinstance(payload, Mapping):
            return None
        reported = payload.get("batchItemFailures") or []
        if not reported:
            return None
        positions = {record["dynamodb"]["SequenceNumber"]: index for index, record in enumerate(batch)}
        identifiers = [item.get("itemIdentifier") if isinstance(item, Mapping) else None for item in reported]
        if any(not identifier or str(identifier) not in positions for identifier in identifiers):
            return 0
        return min(positions[str(identifier)] for identifier in identifiers)

    def _done(self, shard: _Shard, count: int, *, retried: bool = False) -> int:
        """Drop the first ``count`` pending records (done); count a retry of the rest when ``retried``."""
        del shard.pending[:count]
        shard.retries = shard.retries + 1 if retried else 0
        return 0 if retried else count

    def _give_up(self, shard: _Shard, error: Any) -> None:
        """Drop the batch retried too often: log it, and send its on-failure record to the source's queue."""
        batch, shard.pending[:] = shard.pending[: self.source.batch_size], shard.pending[self.source.batch_size :]
        attempts, shard.retries = shard.retries, 0
        short = self.lambdas.log.short_name(self.function)
        first, last = batch[0]["dynamodb"]["SequenceNumber"], batch[-1]["dynamodb"]["SequenceNumber"]
        self.lambdas.log.say(short, f"stream records {first} to {last} given up after {attempts} tries", "ERROR")
        if self.source.on_failure_queue is None or self.lambdas.sqs is None:
            return
        record = on_failure_record(self.lambdas.function_arn(self.function), self.source, shard.shard_id, batch, error)
        record["requestContext"]["approximateInvokeCount"] = attempts
        self.lambdas.sqs.send_message(QueueUrl=self.source.on_failure_queue, MessageBody=json.dumps(record))


def on_failure_record(
    function_arn: str, source: StreamSource, shard_id: str, batch: list[dict[str, Any]], error: Any
) -> dict[str, Any]:
    """Lambda's on-failure record of a stream batch it gave up: the shard and the batch's sequence numbers."""
    created = [record["dynamodb"].get("ApproximateCreationDateTime") for record in batch]
    return {
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": function_arn,
            "condition": "RetryAttemptsExhausted",
            "approximateInvokeCount": 1,
        },
        "responseContext": {
            "statusCode": 200,
            "executedVersion": "$LATEST",
            "functionError": "Unhandled" if isinstance(error, Mapping) and "errorMessage" in error else "",
        },
        "version": "1.0",
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "DDBStreamBatchInfo": {
            "shardId": shard_id,
            "startSequenceNumber": batch[0]["dynamodb"]["SequenceNumber"],
            "endSequenceNumber": batch[-1]["dynamodb"]["SequenceNumber"],
            "approximateArrivalOfFirstRecord": _iso(created[0]),
            "approximateArrivalOfLastRecord": _iso(created[-1]),
            "batchSize": len(batch),
            "streamArn": source.stream_arn,
        },
    }


def _iso(seconds: Any) -> str | None:
    if not isinstance(seconds, int | float):
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
