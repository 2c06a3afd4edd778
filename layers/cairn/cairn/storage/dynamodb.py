"""DynamoDB storage: every state change is one conditional write on the job's item.

A claim is one ``UpdateItem`` that returns the item; a save or commit is one
``PutItem`` (or one ``TransactWriteItems`` when it carries log entries or a
phase record), conditioned on the fencing version, the claim holder and the
status the worker last saw. A condition failure is read from the returned old
item and turned into the domain outcome; it never escapes as a ``ClientError``.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from .. import transitions
from ..clock import Clock
from ..errors import ClaimLostError, ConfigurationError, InvalidInputError, StorageError
from ..models import Job, JobPage, JobStatus, JobSummary
from ..settings import Settings
from ..transitions import ANY_WORKER, Claim, Commit, Fence, Save, StartJob, VersionConflict
from . import dynamodb_schema as schema
from .base import Storage
from .dynamodb_items import Item, ItemCodec, from_item, to_item
from .payloads import PayloadCodec

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import PutTypeDef, TransactWriteItemTypeDef
    from mypy_boto3_s3 import S3Client

TRANSACTION_LIMIT = 100
BATCH_LIMIT = 25
_WRITE_ATTEMPTS = 4


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


class DynamoDBStorage(Storage):
    """Jobs of one ``owner`` in one DynamoDB table (see :mod:`cairn.storage.dynamodb_schema`).

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
        self.owner = schema.validate_owner(owner)
        self._client = client
        self.payloads = PayloadCodec(
            inline_limit=inline_limit or config.inline_state_limit,
            bucket=bucket or config.state_bucket,
            s3_client=s3_client,
        )
        self.codec = ItemCodec(self.owner, self.payloads)
        self._s3_keys: dict[str, set[str]] = {}

    def for_owner(self, owner: str) -> DynamoDBStorage:
        """The same table and clients, seen as another owner."""
        other = DynamoDBStorage.__new__(DynamoDBStorage)
        other.__dict__.update(self.__dict__)
        other.owner = schema.validate_owner(owner)
        other.codec = ItemCodec(other.owner, self.payloads)
        other._s3_keys = {}
        return other

    @property
    def client(self) -> DynamoDBClient:
        """The DynamoDB client (the process-wide default unless one was injected)."""
        if self._client is None:
            from ..aws.clients import default_dynamodb_client

            self._client = default_dynamodb_client()
        return self._client

    # -- reads -------------------------------------------------------------------------------

    def get_job(self, job_id: str) -> Job | None:
        """The job with its log and phase records (one consistent query), or None if absent or expired."""
        now = self.clock()
        job_item: Item | None = None
        entries: list[Item] = []
        records: list[Item] = []
        for item in self._query_partition(job_id):
            sk = str(item["sk"].get("S", ""))
            if sk == schema.JOB_SK:
                job_item = item
            elif sk.startswith(schema.LOG_PREFIX):
                entries.append(item)
            elif sk.startswith(schema.PHASE_PREFIX):
                records.append(item)
        if job_item is None or self._expired(job_item, now):
            return None
        run = int(str(job_item["run"]["N"]))
        entries = [item for item in entries if _run_of(item) == run and not self._expired(item, now)]
        records = [item for item in records if _run_of(item) == run and not self._expired(item, now)]
        job = self.codec.decode_job(job_item, entries=entries, records=records)
        self._remember(job_id, job_item)
        return job

    def _query_partition(self, job_id: str) -> Iterator[Item]:
        start: dict[str, Any] | None = None
        while True:
            kwargs: dict[str, Any] = {
                "TableName": self.table_name,
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": to_item({":pk": self.codec.pk(job_id)}),
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
        """Every live job of this owner, newest first (reads each job; use ``list_page`` for listings)."""
        jobs: list[Job] = []
        cursor: str | None = None
        while True:
            page = self.list_page(status=status, cursor=cursor, limit=100)
            for summary in page.jobs:
                job = self.get_job(summary.job_id)
                if job is not None and (status is None or job.status == status):
                    jobs.append(job)
            cursor = page.cursor
            if cursor is None:
                return sorted(jobs, key=lambda job: (job.created_at, job.job_id), reverse=True)

    def list_page(self, *, status: JobStatus | None = None, cursor: str | None = None, limit: int = 50) -> JobPage:
        """One page of this owner's live jobs, newest first, from the listing indexes."""
        if not 1 <= limit <= 1000:
            raise InvalidInputError(f"limit must be between 1 and 1000, got {limit}")
        now_seconds = self.clock() // 1000
        if status is None:
            index, key_name, key_value = schema.BY_OWNER_INDEX, "owner", self.owner
        else:
            index, key_name, key_value = schema.BY_STATUS_INDEX, "statusKey", schema.status_key(self.owner, status)
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": index,
            "KeyConditionExpression": "#key = :key",
            "FilterExpression": "expiresAt > :now",
            "ExpressionAttributeNames": {"#key": key_name},
            "ExpressionAttributeValues": to_item({":key": key_value, ":now": now_seconds}),
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if cursor is not None:
            kwargs["ExclusiveStartKey"] = self._decode_cursor(cursor, key_name, key_value)
        page = self._call(self.client.query, **kwargs)
        summaries = [self._summary(item) for item in page.get("Items", [])]
        last = page.get("LastEvaluatedKey")
        return JobPage(jobs=summaries, cursor=self._encode_cursor(last) if last else None)

    def _summary(self, item: Item) -> JobSummary:
        values = from_item(item)
        return JobSummary(
            job_id=values["jobId"],
            pipeline=values["pipeline"],
            status=JobStatus(values["status"]),
            attempt=values.get("attempt", 1),
            error=values.get("error"),
            next_phase=values.get("nextPhase"),
            created_at=values["createdAt"],
            updated_at=values["updatedAt"],
            expires_at=values["expiresAt"],
        )

    @staticmethod
    def _encode_cursor(key: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(from_item(key), sort_keys=True).encode()).decode()

    def _decode_cursor(self, cursor: str, key_name: str, key_value: str) -> Item:
        try:
            values = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        except (ValueError, binascii.Error) as exc:
            raise InvalidInputError("Invalid cursor: it was not returned by this listing") from exc
        if not isinstance(values, dict) or values.get(key_name) != key_value:
            raise InvalidInputError("Invalid cursor: it was not returned by this listing")
        return to_item(values)

    def stalled_jobs(self, *, idle_seconds: float, limit: int = 100) -> list[StalledJob]:
        """Running jobs of every owner with no live claim and no write for ``idle_seconds``."""
        now = self.clock()
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": schema.STALLED_INDEX,
            "KeyConditionExpression": "sweepKey = :running AND updatedAt < :cutoff",
            "FilterExpression": "expiresAt > :nowSeconds AND "
            "(attribute_not_exists(leaseExpiresAt) OR leaseExpiresAt <= :now)",
            "ExpressionAttributeValues": to_item(
                {
                    ":running": schema.SWEEP_KEY_RUNNING,
                    ":cutoff": now - int(idle_seconds * 1000),
                    ":nowSeconds": now // 1000,
                    ":now": now,
                }
            ),
        }
        found: list[StalledJob] = []
        while len(found) < limit:
            page = self._call(self.client.query, **kwargs)
            for item in page.get("Items", []):
                values = from_item(item)
                _, owner, job_id = str(values["pk"]).split("#", 2)
                found.append(
                    StalledJob(owner, job_id, values["pipeline"], values.get("nextPhase"), values["updatedAt"])
                )
            if not page.get("LastEvaluatedKey"):
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return found[:limit]

    # -- transitions -------------------------------------------------------------------------

    def start_job(self, request: StartJob) -> Job:
        job = transitions.start(request.seen, request)
        expected = request.expected_version
        if expected is None:
            condition = "attribute_not_exists(pk) OR expiresAt <= :nowSeconds"
            values: dict[str, Any] = {":nowSeconds": request.now_ms // 1000}
        else:
            condition = "version = :version AND expiresAt > :nowSeconds"
            values = {":version": expected, ":nowSeconds": request.now_ms // 1000}
        token = _token()
        extra = self.codec.entry_items(job, request.journal.log)
        try:
            self._put_job(job, token=token, condition=condition, values=values, extra=extra)
        except _ConditionFailed as failed:
            if _written_by(failed.old, token):
                return job
            raise VersionConflict(request.job_id) from None
        return job

    def claim(self, request: Claim) -> Job | None:
        token = _token()
        condition = (
            "attribute_exists(pk) AND expiresAt > :nowSeconds AND pipeline = :pipeline AND #status = :running "
            "AND attribute_exists(checkpoint)"
        )
        values: dict[str, Any] = {
            ":nowSeconds": request.now_ms // 1000,
            ":now": request.now_ms,
            ":pipeline": request.pipeline,
            ":running": JobStatus.RUNNING.value,
            ":one": 1,
            ":worker": request.worker,
            ":lease": request.lease_expires_at,
            ":expires": request.expires_at,
            ":token": token,
        }
        if request.phase is not None:
            condition += " AND checkpoint.nextPhase = :phase"
            values[":phase"] = request.phase
        if request.take_over is None:
            condition += " AND (attribute_not_exists(leaseOwner) OR leaseExpiresAt <= :now)"
        elif request.take_over != ANY_WORKER:
            condition += " AND (attribute_not_exists(leaseOwner) OR leaseExpiresAt <= :now OR leaseOwner = :deadWorker)"
            values[":deadWorker"] = request.take_over
        try:
            response = self._call(
                self.client.update_item,
                TableName=self.table_name,
                Key=self._key(request.job_id),
                UpdateExpression="SET version = version + :one, leaseOwner = :worker, leaseExpiresAt = :lease, "
                "updatedAt = :now, expiresAt = :expires, writeToken = :token",
                ConditionExpression=condition,
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=to_item(values),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except _ConditionFailed as failed:
            if failed.old is not None and _written_by(failed.old, token):
                return self._decode_and_remember(request.job_id, failed.old)
            return None
        return self._decode_and_remember(request.job_id, response["Attributes"])

    def save(self, job_id: str, fence: Fence, request: Save) -> Job:
        return self._fenced_write(
            job_id,
            request.seen,
            request.now_ms,
            build=lambda seen: transitions.save(seen, job_id, fence, request),
            extra=lambda job, token: self.codec.entry_items(job, request.journal.log),
            fence=fence,
        )

    def commit(self, job_id: str, fence: Fence, request: Commit) -> Job:
        return self._fenced_write(
            job_id,
            request.seen,
            request.now_ms,
            build=lambda seen: transitions.commit(seen, job_id, fence, request),
            extra=lambda job, token: [
                self.codec.phase_item(job, request.record),
                *self.codec.entry_items(job, request.journal.log),
            ],
            fence=fence,
        )

    def _fenced_write(
        self,
        job_id: str,
        seen: Job,
        now_ms: int,
        *,
        build: Callable[[Job], Job],
        extra: Callable[[Job, str], list[Item]],
        fence: Fence,
    ) -> Job:
        """Write ``build(seen)`` if the claim still holds; follow a concurrent pause; refuse a lost claim."""
        for _ in range(_WRITE_ATTEMPTS):
            job = build(seen)
            token = _token()
            condition = "version = :version AND leaseOwner = :worker AND #status = :status AND expiresAt > :nowSeconds"
            values = {
                ":version": fence.version,
                ":worker": fence.worker,
                ":status": seen.status.value,
                ":nowSeconds": now_ms // 1000,
            }
            try:
                self._put_job(job, token=token, condition=condition, values=values, extra=extra(job, token))
                return job
            except _ConditionFailed as failed:
                if _written_by(failed.old, token):
                    return job
                if failed.old is None:
                    raise ClaimLostError(job_id, "the job is gone or expired") from None
                stored = self.codec.decode_job(failed.old, with_payloads=False)
                build(stored)  # raises ClaimLostError unless only the status moved (a pause)
                seen = seen.model_copy(update={"status": stored.status})
        raise StorageError(f'Job "{job_id}" kept changing during a write; try again', retryable=True)

    def pause(self, job_id: str) -> Job:
        now = self.clock()
        return self._admin_update(
            job_id,
            now,
            update="SET #status = :paused, statusKey = :statusKey, updatedAt = :now, "
            "expiresAt = ttlSeconds + :nowSeconds, writeToken = :token REMOVE sweepKey",
            condition="attribute_exists(pk) AND expiresAt > :nowSeconds AND #status = :running",
            values={
                ":paused": JobStatus.PAUSED.value,
                ":running": JobStatus.RUNNING.value,
                ":statusKey": schema.status_key(self.owner, JobStatus.PAUSED.value),
            },
            outcome=lambda stored: transitions.pause(stored, job_id, now),
        )

    def cancel(self, job_id: str) -> Job:
        now = self.clock()
        return self._admin_update(
            job_id,
            now,
            update="SET #status = :cancelled, statusKey = :statusKey, version = version + :one, updatedAt = :now, "
            "expiresAt = ttlSeconds + :nowSeconds, writeToken = :token REMOVE leaseOwner, leaseExpiresAt, sweepKey",
            condition="attribute_exists(pk) AND expiresAt > :nowSeconds "
            "AND #status <> :cancelled AND #status <> :complete",
            values={
                ":cancelled": JobStatus.CANCELLED.value,
                ":complete": JobStatus.COMPLETE.value,
                ":statusKey": schema.status_key(self.owner, JobStatus.CANCELLED.value),
                ":one": 1,
            },
            outcome=lambda stored: transitions.cancel(stored, job_id, now),
        )

    def _admin_update(
        self,
        job_id: str,
        now: int,
        *,
        update: str,
        condition: str,
        values: dict[str, Any],
        outcome: Callable[[Job | None], Job],
    ) -> Job:
        token = _token()
        try:
            response = self._call(
                self.client.update_item,
                TableName=self.table_name,
                Key=self._key(job_id),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=to_item({**values, ":now": now, ":nowSeconds": now // 1000, ":token": token}),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except _ConditionFailed as failed:
            if failed.old is not None and _written_by(failed.old, token):
                return self._decode_and_remember(job_id, failed.old)
            stored = self.codec.decode_job(failed.old) if failed.old is not None else None
            return outcome(stored)  # the pure rule says why: not found, already so, or not allowed
        return self._decode_and_remember(job_id, response["Attributes"])

    # -- low level ---------------------------------------------------------------------------

    def _key(self, job_id: str) -> Item:
        return to_item({"pk": self.codec.pk(job_id), "sk": schema.JOB_SK})

    def _expired(self, item: Item, now_ms: int) -> bool:
        expires = item.get(schema.TTL_ATTRIBUTE)
        return expires is not None and int(str(expires.get("N", "0"))) * 1000 <= now_ms

    def _decode_and_remember(self, job_id: str, item: Item) -> Job:
        job = self.codec.decode_job(item)
        self._remember(job_id, item)
        return job

    def _remember(self, job_id: str, item: Item) -> None:
        self._s3_keys[job_id] = ItemCodec.s3_keys_of(item)

    def _put_job(self, job: Job, *, token: str, condition: str, values: dict[str, Any], extra: list[Item]) -> None:
        """One conditional write of the job item, with ``extra`` items in the same transaction."""
        encoded = self.codec.encode_job(job, token=token)
        put: PutTypeDef = {
            "TableName": self.table_name,
            "Item": encoded.item,
            "ConditionExpression": condition,
            "ExpressionAttributeValues": to_item(values),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if "#status" in condition:
            put["ExpressionAttributeNames"] = {"#status": "status"}
        try:
            if not extra:
                self._call(self.client.put_item, **put)
            else:
                included = extra[: TRANSACTION_LIMIT - 1]
                actions: list[TransactWriteItemTypeDef] = [{"Put": put}]
                actions += [{"Put": {"TableName": self.table_name, "Item": item}} for item in included]
                self._call(self.client.transact_write_items, TransactItems=actions, ClientRequestToken=token)
                self._batch_put(extra[TRANSACTION_LIMIT - 1 :])
        except _ConditionFailed:
            self._forget_new_objects(job.job_id, encoded.s3_keys)
            raise
        self._release_old_objects(job.job_id, encoded.s3_keys)

    def _batch_put(self, items: list[Item]) -> None:
        """Log entries beyond one transaction's size (best effort; they are not part of the commit)."""
        for start in range(0, len(items), BATCH_LIMIT):
            requests: dict[str, Any] = {
                self.table_name: [{"PutRequest": {"Item": item}} for item in items[start : start + BATCH_LIMIT]]
            }
            for _ in range(_WRITE_ATTEMPTS):
                response = self._call(self.client.batch_write_item, RequestItems=requests)
                requests = dict(response.get("UnprocessedItems", {}))
                if not requests:
                    break

    def _release_old_objects(self, job_id: str, current: set[str]) -> None:
        for key in self._s3_keys.get(job_id, set()) - current:
            self.payloads.delete(key)
        self._s3_keys[job_id] = set(current)

    def _forget_new_objects(self, job_id: str, written: set[str]) -> None:
        for key in written - self._s3_keys.get(job_id, set()):
            self.payloads.delete(key)

    def _call(self, operation: Callable[..., Any], **kwargs: Any) -> Any:
        """Make one AWS call; translate its errors (after botocore's own retries) into cairn's."""
        try:
            return operation(**kwargs)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = error.get("Code", "")
            if code == "ConditionalCheckFailedException":
                raise _ConditionFailed(exc.response.get("Item")) from exc
            if code == "TransactionCanceledException":
                reasons = exc.response.get("CancellationReasons", [])
                if reasons and reasons[0].get("Code") == "ConditionalCheckFailed":
                    raise _ConditionFailed(reasons[0].get("Item")) from exc
                raise StorageError(f"DynamoDB transaction was cancelled: {reasons}", retryable=True) from exc
            retryable = code in _RETRYABLE or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) >= 500
            raise StorageError(f"DynamoDB {code}: {error.get('Message', exc)}", retryable=retryable) from exc
        except BotoCoreError as exc:
            raise StorageError(f"DynamoDB request failed: {exc}", retryable=True) from exc


_RETRYABLE = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "TransactionConflictException",
}


def _token() -> str:
    return uuid.uuid4().hex


def _written_by(item: Item | None, token: str) -> bool:
    """Whether the stored item is the one written with ``token`` (a retried write that had landed)."""
    return item is not None and item.get("writeToken", {}).get("S") == token


def _run_of(item: Item) -> int:
    sk = str(item["sk"].get("S", ""))
    try:
        return int(sk.split("#", 2)[1])
    except (IndexError, ValueError):
        return -1
