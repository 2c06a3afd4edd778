"""DynamoDB storage: every state change is one conditional write on the job's item.

A claim, a save, a commit, a pause and a cancel are each one conditional
``UpdateItem`` that sets only what changes and returns the item; a start is one
conditional ``PutItem``. What a write adds to the job's history (log entries,
a phase record) is one plain ``PutItem`` made just before it, linked from the
job item only if the job write lands. Every write advances ``sequence``;
a claim is conditioned on the sequence its message carries, the claim holder's
writes on its claim (``leaseOwner`` and ``claimSequence``), a start on the
sequence it read. A condition failure is read from the returned old item: the
request's own write token means it had landed (a lost response); otherwise the
domain outcome follows. It never escapes as a ``ClientError``.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from ..core import lessons as lesson_rules
from ..core import recovery, transitions, ttl
from ..core.clock import Clock
from ..core.errors import (
    ClaimLostError,
    ConfigurationError,
    CorruptJobError,
    InvalidInputError,
    StorageError,
    VersionConflict,
)
from ..core.ids import JOB_ID_PATTERN, validate_owner
from ..core.models import (
    Checkpoint,
    FanOut,
    HistoryItem,
    Job,
    JobPage,
    JobStatus,
    JobSummary,
    Lesson,
    MapItem,
    MapMark,
    MapRecord,
    Signal,
)
from ..core.settings import Settings
from ..core.storage_port import Route, Storage
from ..core.transitions import Claim, Commit, Fence, Save, SignalDelivery, StartJob, WaitExpiry, Written, new_token
from . import dynamodb_memory as memory
from . import dynamodb_schema as schema
from .dynamodb_expressions import Expression
from .dynamodb_items import UNREADABLE, Item, ItemCodec, from_item, item_size, kept_object, location, to_item
from .payloads import ITEM_BUDGET, PayloadCodec

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

logger = logging.getLogger(__name__)

BATCH_GET_LIMIT = 100
#: The longest cursor ``list_page`` accepts (one it returns is a few hundred characters).
MAX_CURSOR_CHARS = 4096
_CURSOR_VERSION = 1
_CURSOR_END = "end"
_LARGEST_CREATED_AT = 10**15  # Unix ms, far beyond any real job
BATCH_WRITE_LIMIT = 25
_BATCH_ATTEMPTS = 5
_CLAIM_CONDITION = (
    "attribute_exists(#pk) AND #expiresAt > :nowSeconds AND #pipeline = :pipeline AND #status = :running "
    "AND attribute_exists(#checkpoint)"
)
_LEASE_FREE = "attribute_not_exists(#leaseOwner) OR #leaseExpiresAt <= :now"
_HOLDS_CLAIM = "#leaseOwner = :worker AND #claimSequence = :claimSequence AND #expiresAt > :nowSeconds"


class _Refused(Exception):
    """A conditional write whose condition no longer held, with nothing more to say about it."""


class _ConditionFailed(Exception):
    """The write's condition did not hold; ``old`` is the stored item (None when there is none)."""

    def __init__(self, old: Any) -> None:
        super().__init__("condition failed")
        self.old: Item | None = dict(old) if old else None


@dataclass(frozen=True)
class StalledJob:
    """A running job with no live claim that has not been written for a while."""

    owner: str
    job_id: str
    pipeline: str
    next_phase: str | None
    updated_at: int
    sequence: int = 0


class DynamoDBStorage(Storage):
    """Jobs of one ``owner`` in one DynamoDB table (see :mod:`cairn.aws.dynamodb_schema`).

    Clients are injected or built lazily once per process. Table and bucket
    default to the settings (``CAIRN_TABLE_NAME``, ``CAIRN_STATE_BUCKET``).
    """

    def __init__(
        self,
        table_name: str | None = None,
        *,
        owner: str = "default",
        client: DynamoDBClient | None = None,
        bucket: str | None = None,
        s3_client: S3Client | None = None,
        inline_limit: int | None = None,
        clock: Clock | None = None,
        settings: Settings | None = None,
    ) -> None:
        super().__init__(clock=clock)
        config = settings or Settings.from_env()
        name = table_name or config.table_name
        if not name:
            raise ConfigurationError("DynamoDBStorage needs a table name (argument or CAIRN_TABLE_NAME)")
        self.table_name = name
        self.owner = validate_owner(owner)
        self._client = client
        self.payloads = PayloadCodec(
            inline_limit=inline_limit or config.inline_state_limit,
            bucket=bucket or config.state_bucket,
            s3_client=s3_client,
            offload_from=config.offload_state_from,
        )
        self.codec = ItemCodec(self.owner, self.payloads)
        self._s3_keys: dict[str, set[str]] = {}
        self._item_sizes: dict[str, int] = {}

    def for_owner(self, owner: str) -> DynamoDBStorage:
        """The same table and clients, seen as another owner."""
        other = DynamoDBStorage.__new__(DynamoDBStorage)
        other.__dict__.update(self.__dict__)
        other.owner = validate_owner(owner)
        other.codec = ItemCodec(other.owner, self.payloads)
        other._s3_keys = {}
        other._item_sizes = {}
        return other

    @property
    def client(self) -> DynamoDBClient:
        """The DynamoDB client (the process-wide default unless one was injected)."""
        if self._client is None:
            from .clients import default_dynamodb_client

            self._client = default_dynamodb_client()
        return self._client

    # -- reads -------------------------------------------------------------------------------

    def get_job(self, job_id: str) -> Job | None:
        """The job with its input, log and phase records (one consistent query), or None if absent or expired."""
        now = self.clock()
        job_item: Item | None = None
        others: list[Item] = []
        for item in self._query_partition(job_id):
            if str(item["sk"].get("S", "")) == schema.JOB_SK:
                job_item = item
            else:
                others.append(item)
        if job_item is None or self._expired(job_item, now):
            return None
        job = self.codec.decode_job(job_item, partition=others)
        self._remember(job_id, job_item)
        return job

    def get_route(self, job_id: str) -> Route | None:
        """The job's pipeline, status, next phase and sequence: one small consistent read of the job item."""
        response = self._call(
            self.client.get_item,
            TableName=self.table_name,
            Key=self._key(job_id),
            ConsistentRead=True,
            **Expression().projection_kwargs("pipeline", "status", "nextPhase", "sequence", "expiresAt", "fanOut"),
        )
        item = response.get("Item")
        if not item or self._expired(item, self.clock()):
            return None
        values = from_item(item)
        try:
            fan_out = FanOut.model_validate_json(values["fanOut"]) if "fanOut" in values else None
            return Route(
                str(values["pipeline"]),
                JobStatus(values["status"]),
                values.get("nextPhase"),
                int(values["sequence"]),
                fan_out,
            )
        except (KeyError, TypeError, ValueError, ValidationError) as exc:
            raise CorruptJobError(f"{self.codec.pk(job_id)}/{schema.JOB_SK}", f"{type(exc).__name__}: {exc}") from exc

    def entered(self, job_id: str, phase: str) -> Checkpoint | None:
        """The entry checkpoint of ``phase`` kept in the job's history: the newest linked item with one."""
        now = self.clock()
        job_item: Item | None = None
        history: dict[str, HistoryItem] = {}
        items: dict[str, Item] = {}
        for item in self._query_partition(job_id):
            sk = str(item["sk"].get("S", ""))
            if sk == schema.JOB_SK:
                job_item = item
            elif sk.startswith(schema.HISTORY_PREFIX):
                try:
                    linked = HistoryItem.model_validate_json(from_item(item)["history"])
                except UNREADABLE:
                    continue  # an unreadable item ends the chain there, as when the job is read
                history[linked.token] = linked
                items[linked.token] = item
        if job_item is None or self._expired(job_item, now):
            return None
        head = from_item(job_item).get("historyHead")
        for linked in transitions.history_chain(history, head if isinstance(head, str) else None):
            where = f"{self.codec.pk(job_id)}/{schema.history_sk(linked.token)}"
            found = self.codec.decode_entry(items[linked.token], where=where)
            if found is not None and found.next_phase == phase:
                return found
        return None

    def get_items(self, job_id: str, fan_out: str) -> list[MapItem]:
        """The map's item records, in item order (one consistent query)."""
        items = self._query_partition(job_id, prefix=schema.map_items_prefix(fan_out))
        return [self.codec.decode_map_item(item) for item in items]

    def get_item(self, job_id: str, fan_out: str, index: int) -> MapItem | None:
        """One item record: one consistent GetItem by its key."""
        key = to_item({"pk": self.codec.pk(job_id), "sk": schema.map_item_sk(fan_out, index)})
        response = self._call(self.client.get_item, TableName=self.table_name, Key=key, ConsistentRead=True)
        item = response.get("Item")
        return self.codec.decode_map_item(item) if item else None

    def write_item(
        self,
        job_id: str,
        fan_out: str,
        item: MapItem,
        *,
        expected_version: int | None,
        expires_at: int,
        finishes: bool = False,
    ) -> bool:
        """One conditional put: on the version read (or on no record); False when it no longer holds.

        With ``finishes`` the put and the count on the map's record are one transaction (both or
        neither); its client token is the record's write token, so botocore sending it again after a
        lost response applies it once.
        """
        encoded, keys = self.codec.map_item(job_id, fan_out, item, expires_at=expires_at)
        expression = Expression()
        if expected_version is None:
            expression.require(f"attribute_not_exists({expression.name('pk')})")
        else:
            expression.require(f"{expression.name('version')} = {expression.value('expected', expected_version)}")
        put = {"TableName": self.table_name, "Item": encoded, **expression.condition_kwargs()}
        try:
            if finishes:
                self._put_counted(job_id, fan_out, put, token=item.write_token, expires_at=expires_at)
            else:
                self._call(self.client.put_item, **put)
        except _ConditionFailed:
            for key in keys:
                self.payloads.delete(key)
            return False
        return True

    def _put_counted(
        self, job_id: str, fan_out: str, put: dict[str, Any], *, token: str | None, expires_at: int
    ) -> None:
        """The item's put and one more finished item on its map's record, in one transaction.

        A map with no record yet (started before maps kept one) gets only a count, which reads as no record.
        """
        count = Expression()
        count.set_to("done", f"if_not_exists({count.name('done')}, {count.value('zero', 0)}) + {count.value('one', 1)}")
        count.set("expiresAt", expires_at)
        key = to_item({"pk": self.codec.pk(job_id), "sk": schema.map_record_sk(fan_out)})
        update = {"TableName": self.table_name, "Key": key, **count.update_kwargs()}
        request: dict[str, Any] = {"TransactItems": [{"Put": put}, {"Update": update}]}
        if token:
            request["ClientRequestToken"] = token

        def transact() -> Any:
            try:
                return self.client.transact_write_items(**request)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                    raise  # translated by _call, as every other error
                raise _Cancelled(_cancellation_reasons(exc)) from exc

        try:
            self._call(transact)
        except _Cancelled as cancelled:
            if cancelled.reasons[:1] == ["ConditionalCheckFailed"]:  # the item's version moved: not written
                raise _ConditionFailed(None) from cancelled
            # another transaction on the map's record at the same moment (TransactionConflict): nothing written
            raise StorageError(
                f"DynamoDB transaction cancelled ({', '.join(cancelled.reasons)})", retryable=True
            ) from cancelled

    def create_map(self, job_id: str, record: MapRecord, *, expires_at: int) -> None:
        """One put on no record: a put sent again (a lost response) leaves the first as it is."""
        encoded = self.codec.map_record(job_id, record, expires_at=expires_at)
        expression = Expression()
        expression.require(f"attribute_not_exists({expression.name('pk')})")
        try:
            self._call(self.client.put_item, TableName=self.table_name, Item=encoded, **expression.condition_kwargs())
        except _ConditionFailed:
            return

    def get_map(self, job_id: str, fan_out: str) -> MapRecord | None:
        """The map's record: one consistent GetItem by its key."""
        key = to_item({"pk": self.codec.pk(job_id), "sk": schema.map_record_sk(fan_out)})
        response = self._call(self.client.get_item, TableName=self.table_name, Key=key, ConsistentRead=True)
        item = response.get("Item")
        return self.codec.decode_map_record(item) if item else None

    def get_maps(self, job_id: str) -> list[MapRecord]:
        """The records of the job's maps: one consistent query of their prefix (no item record among them)."""
        found = [
            self.codec.decode_map_record(item)
            for item in self._query_partition(job_id, prefix=schema.MAP_RECORD_PREFIX)
        ]
        records = [record for record in found if record is not None]
        return sorted(records, key=lambda record: (record.created_at, record.sequence, record.fan_out.id))

    def mark_map(self, job_id: str, fan_out: str, mark: MapMark, token: str) -> bool:
        """One conditional update: the mark set to ``token`` if the record has none (or has this one)."""
        attribute = _MAP_MARKS[mark]
        expression = Expression()
        expression.set(attribute, token)
        held = expression.name(attribute)
        expression.require(
            f"attribute_exists({expression.name('map')}) AND "
            f"(attribute_not_exists({held}) OR {held} = {expression.value(attribute, token)})"
        )
        key = to_item({"pk": self.codec.pk(job_id), "sk": schema.map_record_sk(fan_out)})
        try:
            self._call(self.client.update_item, TableName=self.table_name, Key=key, **expression.update_kwargs())
        except _ConditionFailed:
            return False
        return True

    def remember(self, pipeline: str, lessons: Sequence[Lesson], *, expires_at: int) -> None:
        """Plain puts of the lessons (a batch for several): a lesson written again lands on its own item."""
        records = lesson_rules.stored(lessons, expires_at)
        if records:
            self._put_items([memory.lesson_item(self.owner, pipeline, record) for record in records])

    def recall(self, pipeline: str, limit: int) -> list[Lesson]:
        """The newest lessons: the partition read newest first, a page at a time, until ``limit`` are found."""
        wanted = lesson_rules.checked_limit(limit)
        found: list[lesson_rules.StoredLesson] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": to_item({":pk": memory.memory_pk(self.owner, pipeline)}),
            "ScanIndexForward": False,
            "Limit": wanted * 2,
        }
        now = self.clock()
        while True:
            page = self._call(self.client.query, **kwargs)
            found.extend(record for record in map(memory.decode_lesson, page.get("Items", [])) if record is not None)
            newest = lesson_rules.newest(found, now, wanted)
            start = page.get("LastEvaluatedKey")
            if len(newest) >= wanted or not start:
                return newest
            kwargs["ExclusiveStartKey"] = start

    def _query_partition(self, job_id: str, *, prefix: str | None = None) -> Iterator[Item]:
        """The job's items (consistent): without ``prefix``, the job and its history and input (not map items)."""
        start: dict[str, Any] | None = None
        while True:
            if prefix is None:
                condition, values = "pk = :pk AND sk < :items", {":items": schema.MAP_ITEM_PREFIX}
            else:
                condition, values = "pk = :pk AND begins_with(sk, :prefix)", {":prefix": prefix}
            kwargs: dict[str, Any] = {
                "TableName": self.table_name,
                "KeyConditionExpression": condition,
                "ExpressionAttributeValues": to_item({":pk": self.codec.pk(job_id), **values}),
                "ConsistentRead": True,
            }
            if start:
                kwargs["ExclusiveStartKey"] = start
            page = self._call(self.client.query, **kwargs)
            yield from page.get("Items", [])
            start = page.get("LastEvaluatedKey")
            if not start:
                return

    def list_jobs(self, *, status: JobStatus | None = None) -> list[Job]:
        """Every live job of this owner, newest first (reads each job; use ``list_page`` for listings).

        A job that cannot be read is left out and logged with its key, as ``FileStorage`` does.
        """
        jobs: list[Job] = []
        cursor: str | None = None
        while True:
            page = self.list_page(status=status, cursor=cursor, limit=100)
            for summary in page.jobs:
                if summary.corrupt:
                    continue  # logged by list_page
                try:
                    job = self.get_job(summary.job_id)
                except CorruptJobError as exc:
                    logger.warning("Left an unreadable job out of a listing: %s", exc, extra={"key": exc.location})
                    continue
                if job is not None and (status is None or job.status == status):
                    jobs.append(job)
            cursor = page.cursor
            if cursor is None:
                return sorted(jobs, key=lambda job: (job.created_at, job.job_id), reverse=True)

    def list_page(self, *, status: JobStatus | None = None, cursor: str | None = None, limit: int = 50) -> JobPage:
        """One page of this owner's live jobs, newest first: keys from a listing index, fields from the items.

        The owner's jobs are spread over ``LIST_SHARDS`` index partitions. A page
        queries each for up to ``limit`` keys, newest first, and merges them by
        ``(createdAt, jobId)`` descending, always taking the next key of a shard,
        so each shard is read in its own order; the cursor records, per shard,
        the last key taken (a shard nothing was taken from stays where it was).
        Paging therefore returns every job once, newest first.

        A job item that cannot be read is listed as a summary with ``corrupt``
        set and ``error`` saying why (and logged with its key); the rest of the
        page is unaffected. A cursor this listing did not return (another
        owner's, another status's, altered) is an InvalidInputError.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInputError(f"limit must be between 1 and 1000, got {limit!r}")
        index, key_name, scope = self._listing(status)
        positions = self._decode_cursor(cursor, index, scope) if cursor is not None else [None] * schema.LIST_SHARDS
        fetched: list[list[Item]] = []
        more: list[bool] = []
        for shard, position in enumerate(positions):
            if position == _CURSOR_END:
                fetched.append([])
                more.append(False)
                continue
            page = self._call(self.client.query, **self._shard_query(index, key_name, scope, shard, position, limit))
            fetched.append(list(page.get("Items", [])))
            more.append(bool(page.get("LastEvaluatedKey")))
        taken = _merge_newest_first(fetched, more, limit)
        summaries = self._summaries([item for _, item in taken], status)
        next_positions: list[Any] = []
        for shard, position in enumerate(positions):
            mine = [item for taken_shard, item in taken if taken_shard == shard]
            if not more[shard] and len(mine) == len(fetched[shard]):
                next_positions.append(_CURSOR_END)
            elif mine:
                next_positions.append(_position_of(mine[-1]))
            else:
                next_positions.append(position)
        done = all(position == _CURSOR_END for position in next_positions)
        return JobPage(jobs=summaries, cursor=None if done else _encode_cursor(index, scope, next_positions))

    def _listing(self, status: JobStatus | None) -> tuple[str, str, str]:
        """The index, its key attribute and the owner's key (before the shard) for a listing."""
        if status is None:
            return schema.BY_OWNER_INDEX, "owner", self.owner
        return schema.BY_STATUS_INDEX, "statusKey", f"{self.owner}#{JobStatus(status).value}"

    def _shard_query(
        self, index: str, key_name: str, scope: str, shard: int, position: Any, limit: int
    ) -> dict[str, Any]:
        """The Query of one shard of a listing, newest first, after ``position`` when there is one."""
        key_value = f"{scope}#{shard}"
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": index,
            "KeyConditionExpression": "#key = :key",
            "ExpressionAttributeNames": {"#key": key_name},
            "ExpressionAttributeValues": to_item({":key": key_value}),
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if position is not None:
            created_at, job_id = position
            kwargs["ExclusiveStartKey"] = {
                key_name: {"S": key_value},
                "createdAt": {"N": created_at},
                "pk": {"S": self.codec.pk(job_id)},
                "sk": {"S": schema.JOB_SK},
            }
        return kwargs

    def _summaries(self, keys: list[Item], status: JobStatus | None) -> list[JobSummary]:
        """The summaries of the job items the index ``keys`` name (expired ones left out, unreadable ones marked)."""
        mine = f"JOB#{self.owner}#"
        partition_keys = []
        for key in keys:
            pk = key.get("pk", {}).get("S")
            if isinstance(pk, str) and pk.startswith(mine):
                partition_keys.append(key["pk"])
            else:  # an index entry that is not this owner's: never follow it
                logger.warning("Left a foreign index entry out of a listing", extra={"key": location(key)})
        now = self.clock()
        summaries = []
        for item in self._summary_items(partition_keys):
            try:
                if self._expired(item, now):
                    continue
                summary = self.codec.decode_summary(item, status=status)
            except CorruptJobError as exc:
                summary = self.codec.corrupt_summary(item, exc, status=status)
            if summary.corrupt:
                pk = item.get("pk", {}).get("S")
                logger.warning("Listed an unreadable job %s: %s", pk, summary.error, extra={"key": pk})
            elif status is not None and summary.status != status:
                continue  # its status changed after the index was read
            summaries.append(summary)
        return summaries

    def _summary_items(self, partition_keys: list[Any]) -> list[Item]:
        """The job items of ``partition_keys`` (summary fields only), in the same order; missing ones left out."""
        found: dict[str, Item] = {}
        projection = Expression().projection_kwargs(*schema.SUMMARY_ATTRIBUTES)
        for start in range(0, len(partition_keys), BATCH_GET_LIMIT):
            keys = [{"pk": pk, "sk": {"S": schema.JOB_SK}} for pk in partition_keys[start : start + BATCH_GET_LIMIT]]
            request: dict[str, Any] = {self.table_name: {"Keys": keys, "ConsistentRead": True, **projection}}
            for _ in range(_BATCH_ATTEMPTS):
                response = self._call(self.client.batch_get_item, RequestItems=request)
                for item in response.get("Responses", {}).get(self.table_name, []):
                    found[str(item["pk"].get("S"))] = item
                request = dict(response.get("UnprocessedKeys") or {})
                if not request:
                    break
            if request:
                raise StorageError("DynamoDB left part of a listing unread; try again", retryable=True)
        return [found[str(pk.get("S"))] for pk in partition_keys if str(pk.get("S")) in found]

    def _decode_cursor(self, cursor: str, index: str, scope: str) -> list[Any]:
        """The per-shard positions a cursor of this listing holds; anything else is an InvalidInputError."""
        refused = InvalidInputError("Invalid cursor: it was not returned by this listing")
        if not isinstance(cursor, str) or not 0 < len(cursor) <= MAX_CURSOR_CHARS:
            raise refused
        try:
            padded = cursor + "=" * (-len(cursor) % 4)
            values = json.loads(base64.b64decode(padded.encode("ascii"), altchars=b"-_", validate=True))
        except (ValueError, binascii.Error, RecursionError) as exc:
            raise refused from exc
        if not isinstance(values, dict) or set(values) != {"v", "i", "k", "p"}:
            raise refused
        if (
            type(values["v"]) is not int
            or values["v"] != _CURSOR_VERSION
            or values["i"] != index
            or values["k"] != scope
        ):
            raise refused
        positions = values["p"]
        if not isinstance(positions, list) or len(positions) != schema.LIST_SHARDS:
            raise refused
        for shard, position in enumerate(positions):
            if position is None or position == _CURSOR_END:
                continue
            if not (isinstance(position, list) and len(position) == 2 and _is_index_number(position[0])):
                raise refused
            job_id = position[1]
            if not isinstance(job_id, str) or not JOB_ID_PATTERN.fullmatch(job_id):
                raise refused
            if schema.list_shard(self.owner, job_id) != shard:
                raise refused
        return positions

    def stalled_jobs(self, *, idle_seconds: float, limit: int = 100) -> list[StalledJob]:
        """Running jobs of every owner with no live claim and no write for ``idle_seconds``.

        A job item that cannot be read is skipped and logged with its key; the sweep goes on.
        """
        now = self.clock()
        cutoff = now - int(idle_seconds * 1000)
        found: list[StalledJob] = []
        for shard in schema.sweep_keys():
            kwargs: dict[str, Any] = {
                "TableName": self.table_name,
                "IndexName": schema.STALLED_INDEX,
                "KeyConditionExpression": "sweepKey = :shard",
                "ExpressionAttributeValues": to_item({":shard": shard}),
            }
            while len(found) < limit:
                page = self._call(self.client.query, **kwargs)
                for item in self._summary_items([key["pk"] for key in page.get("Items", [])]):
                    try:
                        stalled = self._stalled(item, now, cutoff)
                    except (CorruptJobError, *UNREADABLE) as exc:
                        pk = item.get("pk", {}).get("S")
                        logger.warning("The sweep skipped an unreadable job %s: %s", pk, exc, extra={"key": pk})
                        continue
                    if stalled is not None:
                        found.append(stalled)
                if not page.get("LastEvaluatedKey"):
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return found[:limit]

    def _stalled(self, item: Item, now: int, cutoff: int) -> StalledJob | None:
        """The stalled job an item holds, or None when it is not stalled (not running, claimed, waiting, recent)."""
        values = from_item(item)
        if values.get("status") != JobStatus.RUNNING.value or self._expired(item, now):
            return None
        if not recovery.is_stalled(
            str(values["status"]),
            updated_at=int(values["updatedAt"]),
            lease_expires_at=int(values.get("leaseExpiresAt", 0)),
            not_before=int(values.get("notBefore", 0)),
            now_ms=now,
            cutoff_ms=cutoff,
        ):
            return None
        _, owner, job_id = str(values["pk"]).split("#", 2)
        next_phase = values.get("nextPhase")
        return StalledJob(
            owner,
            job_id,
            str(values["pipeline"]),
            next_phase if isinstance(next_phase, str) else None,
            int(values["updatedAt"]),
            int(values.get("sequence", 0)),
        )

    # -- transitions -------------------------------------------------------------------------

    def start_job(self, request: StartJob) -> Job:
        written = self._with_renewal(transitions.start(request.seen, request), request)
        job = written.job
        encoded = self.codec.encode_job(job, token=request.token)
        side: list[Item] = []
        new_keys = set(encoded.s3_keys)
        if written.history is not None:
            expires = ttl.side_expires_at(request.now_ms, request.ttl_seconds)
            side.append(
                self.codec.history_item(job.job_id, written.history, expires_at=expires, entry=encoded.checkpoint)
            )
        input_item = self.codec.input_item(job)
        if input_item is not None:
            side.append(input_item[0])
            new_keys |= input_item[1]
        self._put_items(side)
        expression = Expression()
        expression.value("nowSeconds", request.now_ms // 1000)
        if request.expected_sequence is None:
            expression.require(f"attribute_not_exists({expression.name('pk')}) OR #expiresAt <= :nowSeconds")
        else:
            expression.require("#sequence = :sequence AND #expiresAt > :nowSeconds")
            expression.value("sequence", request.expected_sequence)
            expression.name("sequence")
        expression.name("expiresAt")
        try:
            self._call(
                self.client.put_item,
                TableName=self.table_name,
                Item=encoded.item,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **expression.condition_kwargs(),
            )
        except _ConditionFailed as failed:
            if _written_by(failed.old, request.token):
                return written.returned()
            self._forget_new_objects(job.job_id, new_keys)
            raise VersionConflict(request.job_id) from None
        self._release_old_objects(job.job_id, encoded.s3_keys)
        return written.returned()

    def claim(self, request: Claim) -> Job | None:
        expression = Expression()
        expression.require(_CLAIM_CONDITION)
        for attribute in ("pk", "expiresAt", "pipeline", "status", "checkpoint", "leaseOwner", "leaseExpiresAt"):
            expression.name(attribute)
        expression.value("nowSeconds", request.now_ms // 1000)
        expression.value("now", request.now_ms)
        expression.value("pipeline", request.pipeline)
        expression.value("running", JobStatus.RUNNING.value)
        if request.phase is not None:
            expression.require(
                f"{expression.name('checkpoint.nextPhase')} = {expression.value('phase', request.phase)}"
            )
        if request.crash is not None:
            expression.require(self._names_the_claim(expression, request))
        else:
            if request.sequence is not None:
                expression.require(f"#sequence = {expression.value('sequence', request.sequence)}")
            expression.require(_LEASE_FREE)
        # claimSequence takes the sequence before this write: set it first, whichever way SET is evaluated.
        expression.set_to("claimSequence", expression.name("sequence"))
        expression.set_to("sequence", f"#sequence + {expression.value('one', 1)}")
        if request.crash is not None:  # the takeover of a dead claim keeps when that claim's run began
            claimed = f"if_not_exists({expression.name('claimedAt')}, {expression.value('now', request.now_ms)})"
            expression.set_to("claimedAt", claimed)
        else:
            expression.set("claimedAt", request.now_ms)
        expression.set("leaseOwner", request.worker)
        expression.set("leaseExpiresAt", request.lease_expires_at)
        expression.set("updatedAt", request.now_ms)
        expression.set("expiresAt", request.expires_at)
        expression.set("writeToken", request.token)
        try:
            item = self._update(request.job_id, expression, now_ms=request.now_ms, token=request.token)
        except _ConditionFailed as failed:
            if failed.old is not None and _written_by(failed.old, request.token):
                return self._decode_and_remember(request.job_id, failed.old)
            return None
        return self._decode_and_remember(request.job_id, item)

    @staticmethod
    def _names_the_claim(expression: Expression, request: Claim) -> str:
        """The condition form of :meth:`cairn.core.transitions.CrashReport.names`."""
        crash = request.crash
        assert crash is not None
        expression.name("claimSequence")
        expression.name("sequence")
        options = []
        if crash.worker is not None:
            dead = expression.value("deadWorker", crash.worker)
            takeover = expression.value("takeoverWorker", crash.takeover_worker)
            options.append(f"#leaseOwner IN ({dead}, {takeover})")
        elif crash.sequence is not None:
            options.append(
                f"(attribute_exists(#leaseOwner) AND #claimSequence = {expression.value('reported', crash.sequence)})"
            )
        if crash.sequence is not None:
            reported = expression.value("reported", crash.sequence)
            options.append(f"(attribute_not_exists(#leaseOwner) AND #sequence = {reported})")
        return " OR ".join(options) or "attribute_exists(#neverSet)"

    def save(self, job_id: str, fence: Fence, request: Save) -> Job:
        written = transitions.save(request.seen, job_id, fence, request)
        expression = self._holder_write(fence, request.now_ms, written, request.expires_at)
        room = self._room(job_id, request.seen, expression)
        state, keys = self.codec.encode_checkpoint(
            job_id, request.checkpoint, token=request.token, budget=room, entry=False
        )
        expression.set("checkpoint", state)
        expression.set("nextPhase", request.checkpoint.next_phase)
        expression.set("leaseExpiresAt", request.lease_expires_at)
        job = self._fenced(job_id, expression, written, keys)
        return job.model_copy(update={"checkpoint": request.checkpoint})

    def commit(self, job_id: str, fence: Fence, request: Commit) -> Job:
        written = transitions.commit(request.seen, job_id, fence, request)
        expression = self._holder_write(fence, request.now_ms, written, request.expires_at)
        expression.remove("leaseOwner", "leaseExpiresAt", "claimSequence", "claimedAt")
        if request.kind not in ("retry", "sleep", "release"):
            expression.remove("notBefore")
        if request.kind in ("next", "done", "sleep", "wait", "map"):  # the phase is left: its signal is consumed
            expression.remove("signal")
            expression.set("attempt", 1)
            if request.kind == "map":
                assert request.fan_out is not None
                expression.set("fanOut", request.fan_out.model_dump_json(by_alias=True))
            else:
                expression.remove("fanOut")
        keys: set[str] = set()
        entry: dict[str, Any] | None = None
        if request.kind == "release":
            pass  # the claim is given back (above): nothing else changes
        elif request.kind in ("next", "sleep", "wait", "map"):
            assert request.checkpoint is not None
            room = self._room(job_id, request.seen, expression)
            state, keys = self.codec.encode_checkpoint(job_id, request.checkpoint, token=request.token, budget=room)
            entry = state
            expression.set("checkpoint", state)
            expression.set("nextPhase", request.checkpoint.next_phase)
            if request.kind == "sleep":
                expression.set("notBefore", request.not_before)
            if request.kind == "wait":
                self._set_status(expression, job_id, JobStatus.WAITING)
                expression.set("waitingFor", request.waiting_for)
                expression.set("waitDeadline", request.wait_deadline)
                expression.set("timeoutPhase", request.timeout_phase)
        elif request.kind == "retry":
            expression.set_to("attempt", f"{expression.name('attempt')} + {expression.value('one', 1)}")
            expression.set("notBefore", request.not_before)
        else:
            status = request.status
            assert status is not None
            self._set_status(expression, job_id, status)
            if request.kind == "done":
                if request.result is not None:
                    room = self._room(job_id, request.seen, expression)
                    result = self.codec.encode_result(job_id, request.result, token=request.token, budget=room)
                    keys = {result.s3_key} if result.s3_key else set()
                    expression.set("result", result.attribute)
                expression.remove("checkpoint", "nextPhase")
            else:
                expression.set("error", request.error)
        job = self._fenced(job_id, expression, written, keys, entry=entry)
        if request.kind in ("next", "sleep", "wait", "map"):
            return job.model_copy(update={"checkpoint": request.checkpoint})
        if request.kind == "done":
            return job.model_copy(update={"result": request.result})
        return job

    def _set_status(self, expression: Expression, job_id: str, status: JobStatus) -> None:
        """Set the job's status, its listing key, and its sweep key (only a running job has one)."""
        expression.set("status", status.value)
        expression.set("statusKey", self.codec.status_key(job_id, status.value))
        if status == JobStatus.RUNNING:
            expression.set("sweepKey", schema.sweep_key(self.codec.owner, job_id))
        else:
            expression.remove("sweepKey")

    def _holder_write(self, fence: Fence, now_ms: int, written: Written, expires_at: int) -> Expression:
        """A write by the claim holder: conditioned on its claim; advances the sequence; links its history."""
        expression = Expression()
        for attribute in ("leaseOwner", "claimSequence", "expiresAt"):
            expression.name(attribute)
        expression.require(_HOLDS_CLAIM)
        expression.value("worker", fence.worker)
        expression.value("claimSequence", fence.claim_sequence)
        expression.value("nowSeconds", now_ms // 1000)
        expression.set_to("sequence", f"{expression.name('sequence')} + {expression.value('one', 1)}")
        expression.set("usage", json.dumps(written.job.usage) if written.job.usage else None)
        expression.set("updatedAt", now_ms)
        expression.set("expiresAt", expires_at)
        expression.set("writeToken", written.job.write_token)
        if written.history is not None:
            expression.set("historyHead", written.history.token)
        return expression

    def _fenced(
        self,
        job_id: str,
        expression: Expression,
        written: Written,
        new_keys: set[str],
        *,
        entry: dict[str, Any] | None = None,
    ) -> Job:
        """Write the holder's history (with the ``entry`` checkpoint it sets), then its update.

        A refused update means the claim was lost.
        """
        token = written.job.write_token
        assert token is not None
        if written.history is not None:
            expires = ttl.side_expires_at(written.job.updated_at, written.job.ttl_seconds)
            item = self.codec.history_item(job_id, written.history, expires_at=expires, entry=entry)
            self._put_items([item])
        try:
            item = self._update(job_id, expression, now_ms=written.job.updated_at, token=token)
        except _ConditionFailed as failed:
            if failed.old is not None and _written_by(failed.old, token):
                item = failed.old
            else:
                self._forget_new_objects(job_id, new_keys)
                reason = (
                    "the job is gone or expired"
                    if failed.old is None
                    else "another worker or a retry took the job over"
                )
                raise ClaimLostError(job_id, reason) from None
        job = self.codec.decode_job(item, with_payloads=False)
        self._release_old_objects(job_id, ItemCodec.s3_keys_of(item))
        self._item_sizes[job_id] = item_size(item)
        return Written(job, written.history).returned()

    def pause(self, job_id: str) -> Job:
        now = self.clock()
        expression = Expression()
        expression.require("attribute_exists(#pk) AND #expiresAt > :nowSeconds AND #status = :running")
        for attribute in ("pk", "ttlSeconds"):
            expression.name(attribute)
        expression.value("running", JobStatus.RUNNING.value)
        expression.set("status", JobStatus.PAUSED.value)
        expression.set("statusKey", self.codec.status_key(job_id, JobStatus.PAUSED.value))
        expression.remove("sweepKey")
        return self._admin_update(
            job_id, now, expression, outcome=lambda stored, token: transitions.pause(stored, job_id, now, token)
        )

    def cancel(self, job_id: str) -> Job:
        now = self.clock()
        expression = Expression()
        expression.require(
            "attribute_exists(#pk) AND #expiresAt > :nowSeconds AND #status <> :cancelled AND #status <> :complete"
        )
        expression.name("pk")
        expression.value("cancelled", JobStatus.CANCELLED.value)
        expression.value("complete", JobStatus.COMPLETE.value)
        expression.set("status", JobStatus.CANCELLED.value)
        expression.set("statusKey", self.codec.status_key(job_id, JobStatus.CANCELLED.value))
        expression.remove("leaseOwner", "leaseExpiresAt", "claimSequence", "claimedAt", "sweepKey")
        return self._admin_update(
            job_id, now, expression, outcome=lambda stored, token: transitions.cancel(stored, job_id, now, token)
        )

    def deliver_signal(self, job_id: str, request: SignalDelivery) -> Job:
        expression = Expression()
        expression.require(
            "attribute_exists(#pk) AND #expiresAt > :nowSeconds AND #status = :waiting AND #waitingFor = :name"
        )
        for attribute in ("pk", "ttlSeconds"):
            expression.name(attribute)
        expression.value("waiting", JobStatus.WAITING.value)
        expression.value("name", request.name)
        self._set_status(expression, job_id, JobStatus.RUNNING)
        expression.remove("waitingFor", "waitDeadline", "timeoutPhase")
        signal = Signal(name=request.name, payload=request.payload, delivered_at=request.now_ms)
        expression.set("signal", signal.model_dump_json(by_alias=True))
        return self._admin_update(
            job_id,
            request.now_ms,
            expression,
            outcome=lambda stored, token: transitions.deliver_signal(stored, job_id, request),
            token=request.token,
        )

    def expire_wait(self, job_id: str, request: WaitExpiry) -> Job | None:
        response = self._call(
            self.client.get_item, TableName=self.table_name, Key=self._key(job_id), ConsistentRead=True
        )
        item = response.get("Item")
        stored = self.codec.decode_job(item, with_payloads=False) if item else None
        if stored is not None and stored.write_token == request.token:
            return stored
        written = transitions.expire_wait(stored, request)
        if written is None or stored is None:
            return None
        expression = Expression()
        expression.require("#status = :waiting AND #sequence = :sequence AND #expiresAt > :nowSeconds")
        expression.name("ttlSeconds")
        expression.value("waiting", JobStatus.WAITING.value)
        expression.value("sequence", request.sequence)
        self._set_status(expression, job_id, written.job.status)
        expression.remove("signal")
        if written.job.status == JobStatus.RUNNING:
            assert written.job.checkpoint is not None
            expression.remove("waitingFor", "waitDeadline", "timeoutPhase")
            expression.set("nextPhase", written.job.checkpoint.next_phase)
            expression.set_to("checkpoint.nextPhase", expression.value("phase", written.job.checkpoint.next_phase))
            expression.set_to("checkpoint.createdAt", expression.value("now", request.now_ms))
        else:
            expression.set("error", written.job.error)
        try:
            return self._admin_update(job_id, request.now_ms, expression, outcome=None, token=request.token)
        except _Refused:
            return None

    def _admin_update(
        self,
        job_id: str,
        now: int,
        expression: Expression,
        *,
        outcome: Callable[[Job | None, str], Written] | None,
        token: str | None = None,
    ) -> Job:
        """A pause, cancel or signal: one conditional update; when refused, the pure rule says why.

        Without ``outcome`` a refusal raises _Refused. A request sent again after a lost response
        carries the same ``token`` and finds its own write.
        """
        token = token or new_token()
        expression.value("nowSeconds", now // 1000)
        expression.set_to("sequence", f"{expression.name('sequence')} + {expression.value('one', 1)}")
        expression.set("updatedAt", now)
        expression.set_to("expiresAt", f"{expression.name('ttlSeconds')} + :nowSeconds")
        expression.set("writeToken", token)
        try:
            item = self._update(job_id, expression, now_ms=now, token=token)
        except _ConditionFailed as failed:
            if failed.old is not None and _written_by(failed.old, token):
                return self._decode_and_remember(job_id, failed.old)
            if outcome is None:
                raise _Refused() from None
            stored = self.codec.decode_job(failed.old) if failed.old is not None else None
            return outcome(stored, token).returned()  # the pure rule says why: not found, already so, or refused
        return self._decode_and_remember(job_id, item)

    # -- low level ---------------------------------------------------------------------------

    def _key(self, job_id: str) -> Item:
        return to_item({"pk": self.codec.pk(job_id), "sk": schema.JOB_SK})

    def _update(self, job_id: str, expression: Expression, *, now_ms: int, token: str) -> Item:
        """One conditional ``UpdateItem`` of the job item; the new item, or _ConditionFailed with the old.

        The write may push the job's expiry up to its ``historyRenewBy`` plus a TTL, where its side
        items still live; past that, the side items are renewed first and the write sent again
        (:mod:`cairn.core.ttl`: at most once per TTL).
        """
        guard = expression.value("renewGuard", ttl.epoch_seconds(now_ms))
        renew_by = expression.name("historyRenewBy")
        expression.require(f"attribute_not_exists({renew_by}) OR {renew_by} >= {guard}")
        try:
            return self._update_once(job_id, expression)
        except _ConditionFailed as failed:
            old = failed.old
            if old is None or _written_by(old, token) or self._expired(old, now_ms):
                raise
            stored = from_item(old)
            kept = stored.get("historyRenewBy")
            if not ttl.renewal_due(kept, now_ms):
                raise
            expression.value("renewGuard", kept)  # the retry holds while no one else renewed in between
            expression.set("historyRenewBy", self._renew_side_items(job_id, now_ms, int(stored["ttlSeconds"])))
        return self._update_once(job_id, expression)

    def _with_renewal(self, written: Written, request: StartJob) -> Written:
        """The started job with its ``historyRenewBy``; a job that keeps side items past it renews them first."""
        if written.landed:
            return written
        current, now, seconds = transitions.live(request.seen, request.now_ms), request.now_ms, request.ttl_seconds
        if current is None:
            renew_by: int | None = ttl.renew_by(ttl.side_expires_at(now, seconds), seconds)
        else:
            kept = current.history_renew_by
            renew_by = None if kept is None else ttl.renew_by(kept + current.ttl_seconds, seconds)
            if ttl.renewal_due(renew_by, now):
                renew_by = self._renew_side_items(request.job_id, now, seconds)
        return replace(written, job=written.job.model_copy(update={"history_renew_by": renew_by}))

    def _renew_side_items(self, job_id: str, now_ms: int, ttl_seconds: int) -> int:
        """Push the expiry of the job's history and input items and restart the age of its offloaded objects.

        Returns the job's next ``historyRenewBy``. Idempotent: a crash half-way leaves the job due again.
        """
        target = ttl.side_expires_at(now_ms, ttl_seconds)
        items = list(self._query_partition(job_id))
        job_item = next((item for item in items if item["sk"].get("S") == schema.JOB_SK), None)
        if job_item is not None:
            keys = ItemCodec.s3_keys_of(job_item)
            for item in ItemCodec.side_items(job_item, items):
                keys |= {key for key in [PayloadCodec.s3_key_of(from_item(item).get("input"))] if key}
                if int(str(item.get(schema.TTL_ATTRIBUTE, {}).get("N", "0"))) < target:
                    self._renew_item(item, target)
            for key in sorted(keys):
                self.payloads.renew(key)
        return ttl.renew_by(target, ttl_seconds)

    def _renew_item(self, item: Item, expires_at: int) -> None:
        expression = Expression().require("attribute_exists(#pk)").set(schema.TTL_ATTRIBUTE, expires_at)
        expression.name("pk")
        try:
            self._call(
                self.client.update_item,
                TableName=self.table_name,
                Key={"pk": item["pk"], "sk": item["sk"]},
                **expression.update_kwargs(),
            )
        except _ConditionFailed:
            return  # deleted meanwhile: nothing to keep

    def _update_once(self, job_id: str, expression: Expression) -> Item:
        response = self._call(
            self.client.update_item,
            TableName=self.table_name,
            Key=self._key(job_id),
            ReturnValues="ALL_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            **expression.update_kwargs(),
        )
        return dict(response["Attributes"])

    def _expired(self, item: Item, now_ms: int) -> bool:
        """Whether the item is past its TTL; an unreadable ``expiresAt`` is a CorruptJobError."""
        expires = item.get(schema.TTL_ATTRIBUTE)
        if expires is None:
            return False
        text = str(expires.get("N")) if isinstance(expires, dict) else ""
        if not text.isdigit() or len(text) > 16:
            raise CorruptJobError(location(item), f"its expiresAt is not a time ({text[:40]!r})")
        return ttl.is_past(int(text), now_ms)

    def _decode_and_remember(self, job_id: str, item: Item) -> Job:
        job = self.codec.decode_job(item)
        self._remember(job_id, item)
        return job

    def _remember(self, job_id: str, item: Item) -> None:
        self._s3_keys[job_id] = ItemCodec.s3_keys_of(item)
        self._item_sizes[job_id] = item_size(item)

    def _room(self, job_id: str, seen: Job, expression: Expression) -> int:
        """The bytes a large value may take in an update of the job item, ``expression`` so far included.

        The update is measured as the stored item plus everything it sets, the
        value it replaces counted too (so it fits by DynamoDB's count of the
        item after the write, and by the local emulator's stricter one). The
        stored size is the last item this store read or wrote for the job, or
        else an estimate from ``seen`` that is never smaller than the item.
        """
        stored = self._item_sizes.get(job_id)
        if stored is None:
            stored = self.codec.measure(seen)
        return ITEM_BUDGET - stored - expression.size()

    def _put_items(self, items: list[Item]) -> None:
        """Plain (unconditional, idempotent) writes of items beside a job: one request where there is one item."""
        if len(items) == 1:
            self._call(self.client.put_item, TableName=self.table_name, Item=items[0])
            return
        for start in range(0, len(items), BATCH_WRITE_LIMIT):
            requests: dict[str, Any] = {
                self.table_name: [{"PutRequest": {"Item": item}} for item in items[start : start + BATCH_WRITE_LIMIT]]
            }
            for _ in range(_BATCH_ATTEMPTS):
                response = self._call(self.client.batch_write_item, RequestItems=requests)
                requests = dict(response.get("UnprocessedItems") or {})
                if not requests:
                    break
            if requests:
                raise StorageError("DynamoDB left part of a write unprocessed; try again", retryable=True)

    def _release_old_objects(self, job_id: str, current: set[str]) -> None:
        for key in self._s3_keys.get(job_id, set()) - current:
            if not kept_object(key):
                self.payloads.delete(key)
        self._s3_keys[job_id] = set(current)

    def _forget_new_objects(self, job_id: str, written: set[str]) -> None:
        for key in written - self._s3_keys.get(job_id, set()):
            self.payloads.delete(key)

    def _call(self, operation: Callable[..., Any], **kwargs: Any) -> Any:
        """Make one AWS call; translate its errors (after botocore's own retries) into cairn's.

        A timeout or a reset connection leaves a write's outcome unknown: it is
        a retryable StorageError, and the engine sends the same request again.
        """
        try:
            return operation(**kwargs)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = error.get("Code", "")
            if code == "ConditionalCheckFailedException":
                raise _ConditionFailed(exc.response.get("Item")) from exc
            retryable = code in _RETRYABLE or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) >= 500
            raise StorageError(f"DynamoDB {code}: {error.get('Message', exc)}", retryable=retryable) from exc
        except BotoCoreError as exc:
            raise StorageError(f"DynamoDB request failed: {exc}", retryable=True) from exc


_CANCELLATION_CODES = re.compile(
    r"\b(None|ConditionalCheckFailed|TransactionConflict|ItemCollectionSizeLimitExceeded|"
    r"ProvisionedThroughputExceeded|ThrottlingError|ValidationError)\b"
)


def _cancellation_reasons(exc: ClientError) -> list[str]:
    """Why a transaction was cancelled, one code per action in order ("None" for an action that was fine).

    DynamoDB sends them as ``CancellationReasons``; where a service leaves them out (moto, some
    versions), the message lists them: "... [None, ConditionalCheckFailed]".
    """
    reasons = [str(reason.get("Code")) for reason in exc.response.get("CancellationReasons", [])]
    if reasons:
        return reasons
    message = str(exc.response.get("Error", {}).get("Message", ""))
    return _CANCELLATION_CODES.findall(message[message.find("[") :] if "[" in message else "")


class _Cancelled(Exception):
    """A transaction was cancelled; ``reasons`` has one code per action."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__(", ".join(reasons))
        self.reasons = reasons


#: The attribute of a map's record that holds each of its marks.
_MAP_MARKS: dict[MapMark, str] = {"handed_off": "handedOff", "joined": "joined"}


_RETRYABLE = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "TransactionConflictException",
}


_INDEX_NUMBER = re.compile(r"^-?[0-9]{1,38}(\.[0-9]{1,38})?$")


def _is_index_number(value: Any) -> bool:
    """Whether ``value`` is a number as the index returns it (text, at most 38 digits), fit for a start key."""
    return isinstance(value, str) and bool(_INDEX_NUMBER.fullmatch(value)) and len(value.replace("-", "")) <= 39


def _order(item: Item) -> tuple[Decimal, str]:
    """A listing's order key of an index entry: ``(createdAt, jobId)``."""
    try:
        created_at = Decimal(str(item["createdAt"].get("N")))
    except (KeyError, ArithmeticError):
        created_at = Decimal(0)
    return created_at, str(item.get("pk", {}).get("S", "")).split("#", 2)[-1]


def _position_of(item: Item) -> list[str]:
    """The cursor's position after an index entry: its ``createdAt`` as the index gave it, and its job id."""
    return [str(item["createdAt"].get("N")), str(item["pk"].get("S", "")).split("#", 2)[-1]]


def _merge_newest_first(fetched: list[list[Item]], more: list[bool], limit: int) -> list[tuple[int, Item]]:
    """Up to ``limit`` entries of the shards' lists, newest first, each shard taken in its own order.

    The merge stops where a shard has more entries than were fetched and none
    of those is left: its next one could be newer than any other shard's.
    """
    taken: list[tuple[int, Item]] = []
    next_of = [0] * len(fetched)
    while len(taken) < limit:
        best: int | None = None
        for shard, entries in enumerate(fetched):
            if next_of[shard] == len(entries):
                if more[shard]:
                    return taken
                continue
            if best is None or _order(entries[next_of[shard]]) > _order(fetched[best][next_of[best]]):
                best = shard
        if best is None:
            break
        taken.append((best, fetched[best][next_of[best]]))
        next_of[best] += 1
    return taken


def _encode_cursor(index: str, scope: str, positions: list[Any]) -> str:
    """The opaque cursor of a listing: its index, the owner's key, and a position per shard."""
    values = {"v": _CURSOR_VERSION, "i": index, "k": scope, "p": positions}
    text = json.dumps(values, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(text).decode().rstrip("=")


def _written_by(item: Item | None, token: str) -> bool:
    """Whether the stored item is the one written with ``token`` (a repeated write that had landed)."""
    return item is not None and item.get("writeToken", {}).get("S") == token
