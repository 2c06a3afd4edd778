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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from .. import transitions, ttl
from ..clock import Clock
from ..errors import (
    ClaimLostError,
    ConfigurationError,
    CorruptJobError,
    InvalidInputError,
    StorageError,
    VersionConflict,
)
from ..ids import validate_owner
from ..models import Job, JobPage, JobStatus, JobSummary
from ..settings import Settings
from ..storage.base import Route, Storage
from ..transitions import Claim, Commit, Fence, Save, StartJob, Written, new_token
from . import dynamodb_schema as schema
from .dynamodb_expressions import Expression
from .dynamodb_items import Item, ItemCodec, from_item, to_item
from .payloads import PayloadCodec

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

BATCH_GET_LIMIT = 100
BATCH_WRITE_LIMIT = 25
_BATCH_ATTEMPTS = 5
_CLAIM_CONDITION = (
    "attribute_exists(#pk) AND #expiresAt > :nowSeconds AND #pipeline = :pipeline AND #status = :running "
    "AND attribute_exists(#checkpoint)"
)
_LEASE_FREE = "attribute_not_exists(#leaseOwner) OR #leaseExpiresAt <= :now"
_HOLDS_CLAIM = "#leaseOwner = :worker AND #claimSequence = :claimSequence AND #expiresAt > :nowSeconds"


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

    def for_owner(self, owner: str) -> DynamoDBStorage:
        """The same table and clients, seen as another owner."""
        other = DynamoDBStorage.__new__(DynamoDBStorage)
        other.__dict__.update(self.__dict__)
        other.owner = validate_owner(owner)
        other.codec = ItemCodec(other.owner, self.payloads)
        other._s3_keys = {}
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
            **Expression().projection_kwargs("pipeline", "status", "nextPhase", "sequence", "expiresAt"),
        )
        item = response.get("Item")
        if not item or self._expired(item, self.clock()):
            return None
        values = from_item(item)
        try:
            return Route(
                str(values["pipeline"]), JobStatus(values["status"]), values.get("nextPhase"), int(values["sequence"])
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptJobError(f"{self.codec.pk(job_id)}/{schema.JOB_SK}", f"{type(exc).__name__}: {exc}") from exc

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
        """One page of this owner's live jobs, newest first: keys from a listing index, fields from the items."""
        if not 1 <= limit <= 1000:
            raise InvalidInputError(f"limit must be between 1 and 1000, got {limit}")
        if status is None:
            index, key_name, key_value = schema.BY_OWNER_INDEX, "owner", self.owner
        else:
            index, key_name, key_value = schema.BY_STATUS_INDEX, "statusKey", schema.status_key(self.owner, status)
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": index,
            "KeyConditionExpression": "#key = :key",
            "ExpressionAttributeNames": {"#key": key_name},
            "ExpressionAttributeValues": to_item({":key": key_value}),
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if cursor is not None:
            kwargs["ExclusiveStartKey"] = self._decode_cursor(cursor, key_name, key_value)
        page = self._call(self.client.query, **kwargs)
        now = self.clock()
        summaries = [
            self._summary(item)
            for item in self._summary_items([key["pk"] for key in page.get("Items", [])])
            if not self._expired(item, now) and (status is None or from_item(item).get("status") == status.value)
        ]
        last = page.get("LastEvaluatedKey")
        return JobPage(jobs=summaries, cursor=self._encode_cursor(last) if last else None)

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
                    values = from_item(item)
                    if values.get("status") != JobStatus.RUNNING.value or self._expired(item, now):
                        continue
                    if values["updatedAt"] >= cutoff or values.get("leaseExpiresAt", 0) > now:
                        continue
                    if values.get("notBefore", 0) > now:  # a retry still waiting out its backoff
                        continue
                    _, owner, job_id = str(values["pk"]).split("#", 2)
                    found.append(
                        StalledJob(
                            owner,
                            job_id,
                            values["pipeline"],
                            values.get("nextPhase"),
                            values["updatedAt"],
                            values.get("sequence", 0),
                        )
                    )
                if not page.get("LastEvaluatedKey"):
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return found[:limit]

    # -- transitions -------------------------------------------------------------------------

    def start_job(self, request: StartJob) -> Job:
        written = transitions.start(request.seen, request)
        job = written.job
        encoded = self.codec.encode_job(job, token=request.token)
        side: list[Item] = []
        new_keys = set(encoded.s3_keys)
        if written.history is not None:
            side.append(self.codec.history_item(job.job_id, written.history, expires_at=job.expires_at))
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
        expression.set("leaseOwner", request.worker)
        expression.set("leaseExpiresAt", request.lease_expires_at)
        expression.set("updatedAt", request.now_ms)
        expression.set("expiresAt", request.expires_at)
        expression.set("writeToken", request.token)
        try:
            item = self._update(request.job_id, expression)
        except _ConditionFailed as failed:
            if failed.old is not None and _written_by(failed.old, request.token):
                return self._decode_and_remember(request.job_id, failed.old)
            return None
        return self._decode_and_remember(request.job_id, item)

    @staticmethod
    def _names_the_claim(expression: Expression, request: Claim) -> str:
        """The condition form of :meth:`cairn.transitions.CrashReport.names`."""
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
        state, keys = self.codec.encode_checkpoint(job_id, request.checkpoint, token=request.token)
        expression.set("checkpoint", state)
        expression.set("nextPhase", request.checkpoint.next_phase)
        expression.set("leaseExpiresAt", request.lease_expires_at)
        job = self._fenced(job_id, expression, written, keys)
        return job.model_copy(update={"checkpoint": request.checkpoint})

    def commit(self, job_id: str, fence: Fence, request: Commit) -> Job:
        written = transitions.commit(request.seen, job_id, fence, request)
        expression = self._holder_write(fence, request.now_ms, written, request.expires_at)
        expression.remove("leaseOwner", "leaseExpiresAt", "claimSequence")
        if request.kind != "retry":
            expression.remove("notBefore")
        keys: set[str] = set()
        if request.kind == "next":
            assert request.checkpoint is not None
            state, keys = self.codec.encode_checkpoint(job_id, request.checkpoint, token=request.token)
            expression.set("checkpoint", state)
            expression.set("nextPhase", request.checkpoint.next_phase)
            expression.set("attempt", 1)
        elif request.kind == "retry":
            expression.set_to("attempt", f"{expression.name('attempt')} + {expression.value('one', 1)}")
            expression.set("notBefore", request.not_before)
        else:
            status = request.status
            assert status is not None
            expression.set("status", status.value)
            expression.set("statusKey", schema.status_key(self.owner, status.value))
            expression.remove("sweepKey")
            if request.kind == "done":
                if request.result is not None:
                    result = self.codec.encode_result(job_id, request.result, token=request.token)
                    keys = {result.s3_key} if result.s3_key else set()
                    expression.set("result", result.attribute)
                expression.remove("checkpoint", "nextPhase")
                expression.set("attempt", 1)
            else:
                expression.set("error", request.error)
        job = self._fenced(job_id, expression, written, keys)
        if request.kind == "next":
            return job.model_copy(update={"checkpoint": request.checkpoint})
        if request.kind == "done":
            return job.model_copy(update={"result": request.result})
        return job

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

    def _fenced(self, job_id: str, expression: Expression, written: Written, new_keys: set[str]) -> Job:
        """Write the holder's history, then its update; a refused update means the claim was lost."""
        token = written.job.write_token
        assert token is not None
        if written.history is not None:
            self._put_items([self.codec.history_item(job_id, written.history, expires_at=written.job.expires_at)])
        try:
            item = self._update(job_id, expression)
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
        return Written(job, written.history).returned()

    def pause(self, job_id: str) -> Job:
        now = self.clock()
        expression = Expression()
        expression.require("attribute_exists(#pk) AND #expiresAt > :nowSeconds AND #status = :running")
        for attribute in ("pk", "ttlSeconds"):
            expression.name(attribute)
        expression.value("running", JobStatus.RUNNING.value)
        expression.set("status", JobStatus.PAUSED.value)
        expression.set("statusKey", schema.status_key(self.owner, JobStatus.PAUSED.value))
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
        expression.set("statusKey", schema.status_key(self.owner, JobStatus.CANCELLED.value))
        expression.remove("leaseOwner", "leaseExpiresAt", "claimSequence", "sweepKey")
        return self._admin_update(
            job_id, now, expression, outcome=lambda stored, token: transitions.cancel(stored, job_id, now, token)
        )

    def _admin_update(
        self, job_id: str, now: int, expression: Expression, *, outcome: Callable[[Job | None, str], Written]
    ) -> Job:
        """A pause or cancel: one conditional update; when refused, the pure rule says why."""
        token = new_token()
        expression.value("nowSeconds", now // 1000)
        expression.set_to("sequence", f"{expression.name('sequence')} + {expression.value('one', 1)}")
        expression.set("updatedAt", now)
        expression.set_to("expiresAt", f"{expression.name('ttlSeconds')} + :nowSeconds")
        expression.set("writeToken", token)
        try:
            item = self._update(job_id, expression)
        except _ConditionFailed as failed:
            if failed.old is not None and _written_by(failed.old, token):
                return self._decode_and_remember(job_id, failed.old)
            stored = self.codec.decode_job(failed.old) if failed.old is not None else None
            return outcome(stored, token).returned()  # the pure rule says why: not found, already so, or refused
        return self._decode_and_remember(job_id, item)

    # -- low level ---------------------------------------------------------------------------

    def _key(self, job_id: str) -> Item:
        return to_item({"pk": self.codec.pk(job_id), "sk": schema.JOB_SK})

    def _update(self, job_id: str, expression: Expression) -> Item:
        """One conditional ``UpdateItem`` of the job item; the new item, or _ConditionFailed with the old."""
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
        expires = item.get(schema.TTL_ATTRIBUTE)
        return expires is not None and ttl.is_past(int(str(expires.get("N", "0"))), now_ms)

    def _decode_and_remember(self, job_id: str, item: Item) -> Job:
        job = self.codec.decode_job(item)
        self._remember(job_id, item)
        return job

    def _remember(self, job_id: str, item: Item) -> None:
        self._s3_keys[job_id] = ItemCodec.s3_keys_of(item)

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


_RETRYABLE = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "TransactionConflictException",
}


def _written_by(item: Item | None, token: str) -> bool:
    """Whether the stored item is the one written with ``token`` (a repeated write that had landed)."""
    return item is not None and item.get("writeToken", {}).get("S") == token
