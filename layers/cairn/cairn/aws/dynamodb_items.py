"""Jobs, history and inputs as DynamoDB items, and back.

Indexable and conditional fields are plain attributes; the checkpoint keeps
the seed's shape ``{nextPhase, state, createdAt}`` with the state encoded by
:class:`PayloadCodec`; usage is JSON text, so numbers never become Decimals.
The job item stays small: the input lives in an item of its own, written once,
and history items (log entries, phase records) sit beside it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from pydantic import ValidationError

from ..errors import CorruptJobError
from ..models import Checkpoint, HistoryItem, Job, JobStatus
from ..transitions import linked_history
from . import dynamodb_schema as schema
from .payloads import EncodedPayload, PayloadCodec

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

Item = dict[str, "AttributeValueTypeDef"]

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def to_item(values: dict[str, Any]) -> Item:
    """DynamoDB attribute values for plain Python values (None values are left out)."""
    return {key: _serializer.serialize(value) for key, value in values.items() if value is not None}


def from_item(item: Item) -> dict[str, Any]:
    """Plain Python values for an item: numbers as int, binary as bytes."""
    return {key: _plain(_deserializer.deserialize(value)) for key, value in item.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Binary):
        return value.value  # type: ignore[attr-defined]  # the stubs omit Binary.value
    if isinstance(value, dict):
        return {key: _plain(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_plain(inner) for inner in value]
    return value


@dataclass
class EncodedJob:
    """A job item ready to write, and the S3 keys it refers to."""

    item: Item
    s3_keys: set[str] = field(default_factory=set)


def _key_of(encoded: EncodedPayload) -> set[str]:
    return {encoded.s3_key} if encoded.s3_key else set()


class ItemCodec:
    """Converts between jobs and the items of one owner."""

    def __init__(self, owner: str, payloads: PayloadCodec) -> None:
        self.owner = owner
        self.payloads = payloads

    def pk(self, job_id: str) -> str:
        """The partition key of ``job_id`` for this owner."""
        return schema.job_pk(self.owner, job_id)

    def encode_checkpoint(self, job_id: str, checkpoint: Checkpoint, *, token: str) -> tuple[dict[str, Any], set[str]]:
        """The checkpoint map ``{nextPhase, createdAt, state}``; a large state goes to S3 under the write's token."""
        state = self.payloads.encode(checkpoint.state, key=f"states/{self.owner}/{job_id}/{token}.json")
        value = {"nextPhase": checkpoint.next_phase, "createdAt": checkpoint.created_at, "state": state.attribute}
        return value, _key_of(state)

    def encode_result(self, job_id: str, result: Any, *, token: str) -> EncodedPayload:
        """The attribute map of a job's result."""
        return self.payloads.encode(result, key=f"results/{self.owner}/{job_id}/{token}.json")

    def encode_job(self, job: Job, *, token: str) -> EncodedJob:
        """The whole job item for ``job`` (a start), written by the write ``token``; large values may go to S3."""
        s3_keys: set[str] = set()
        checkpoint = None
        if job.checkpoint is not None:
            checkpoint, keys = self.encode_checkpoint(job.job_id, job.checkpoint, token=token)
            s3_keys |= keys
        result = None
        if job.result is not None:
            encoded = self.encode_result(job.job_id, job.result, token=token)
            s3_keys |= _key_of(encoded)
            result = encoded.attribute
        values: dict[str, Any] = {
            "pk": self.pk(job.job_id),
            "sk": schema.JOB_SK,
            "owner": self.owner,
            "jobId": job.job_id,
            "pipeline": job.pipeline,
            "status": job.status.value,
            "statusKey": schema.status_key(self.owner, job.status.value),
            "sweepKey": schema.sweep_key(self.owner, job.job_id) if job.status == JobStatus.RUNNING else None,
            "sequence": job.sequence,
            "run": job.run,
            "attempt": job.attempt,
            "createdAt": job.created_at,
            "updatedAt": job.updated_at,
            "expiresAt": job.expires_at,
            "ttlSeconds": job.ttl_seconds,
            "leaseOwner": job.lease_owner,
            "leaseExpiresAt": job.lease_expires_at,
            "claimSequence": job.claim_sequence,
            "notBefore": job.not_before,
            "error": job.error,
            "checkpoint": checkpoint,
            "nextPhase": job.checkpoint.next_phase if job.checkpoint else None,
            "result": result,
            "inputToken": job.input_token,
            "usage": json.dumps(job.usage) if job.usage else None,
            "writeToken": token,
            "historyHead": job.history_head,
        }
        return EncodedJob(to_item(values), s3_keys)

    def input_item(self, job: Job) -> tuple[Item, set[str]] | None:
        """The item holding the job's input, when the job's last write set it (None: nothing to write)."""
        if job.input_token is None or job.input_token != job.write_token:
            return None
        encoded = self.payloads.encode(job.input, key=f"inputs/{self.owner}/{job.job_id}/{job.input_token}.json")
        values = {
            "pk": self.pk(job.job_id),
            "sk": schema.input_sk(job.input_token),
            "input": encoded.attribute,
            "expiresAt": job.expires_at,
        }
        return to_item(values), _key_of(encoded)

    def history_item(self, job_id: str, history: HistoryItem, *, expires_at: int) -> Item:
        """The item of what one write added to the job's history."""
        return to_item(
            {
                "pk": self.pk(job_id),
                "sk": schema.history_sk(history.token),
                "history": history.model_dump_json(by_alias=True),
                "expiresAt": expires_at,
            }
        )

    def decode_job(self, item: Item, *, with_payloads: bool = True, partition: Iterable[Item] = ()) -> Job:
        """The job an item holds (with its input and history from ``partition``); unreadable items are named."""
        values = from_item(item)
        where = f"{values.get('pk')}/{values.get('sk')}"
        try:
            checkpoint = None
            if "checkpoint" in values:
                raw = values["checkpoint"]
                state = self.payloads.decode(raw["state"], where=where, fetch=with_payloads)
                checkpoint = Checkpoint(next_phase=raw["nextPhase"], state=state, created_at=raw["createdAt"])
            result = None
            if "result" in values:
                result = self.payloads.decode(values["result"], where=where, fetch=with_payloads)
            job = Job(
                job_id=values["jobId"],
                pipeline=values["pipeline"],
                status=JobStatus(values["status"]),
                checkpoint=checkpoint,
                error=values.get("error"),
                attempt=values["attempt"],
                result=result,
                usage=json.loads(values.get("usage", "{}")),
                created_at=values["createdAt"],
                updated_at=values["updatedAt"],
                expires_at=values["expiresAt"],
                ttl_seconds=values["ttlSeconds"],
                sequence=values["sequence"],
                run=values["run"],
                lease_owner=values.get("leaseOwner"),
                lease_expires_at=values.get("leaseExpiresAt"),
                claim_sequence=values.get("claimSequence"),
                not_before=values.get("notBefore"),
                write_token=values.get("writeToken"),
                history_head=values.get("historyHead"),
                input_token=values.get("inputToken"),
            )
        except (KeyError, TypeError, ValueError, ValidationError) as exc:
            raise CorruptJobError(where, f"{type(exc).__name__}: {exc}") from exc
        return self._with_partition(job, list(partition), where) if partition else job

    def _with_partition(self, job: Job, items: list[Item], where: str) -> Job:
        history: dict[str, HistoryItem] = {}
        job_input = None
        for item in items:
            sk = str(item["sk"].get("S", ""))
            try:
                if sk.startswith(schema.HISTORY_PREFIX):
                    entry = HistoryItem.model_validate_json(from_item(item)["history"])
                    history[entry.token] = entry
                elif job.input_token is not None and sk == schema.input_sk(job.input_token):
                    job_input = self.payloads.decode(from_item(item)["input"], where=f"{where}/{sk}")
            except (KeyError, TypeError, ValueError, ValidationError) as exc:
                raise CorruptJobError(f"{where}/{sk}", f"{type(exc).__name__}: {exc}") from exc
        log, phases = linked_history(history, job.history_head)
        return job.model_copy(update={"input": job_input, "log": log, "phases": phases})

    @staticmethod
    def s3_keys_of(item: Item) -> set[str]:
        """The S3 objects a stored job item refers to (its checkpoint state and result)."""
        values = from_item(item)
        keys = {PayloadCodec.s3_key_of(values.get("result"))}
        if isinstance(values.get("checkpoint"), dict):
            keys.add(PayloadCodec.s3_key_of(values["checkpoint"].get("state")))
        return {key for key in keys if key}
