"""Jobs, log entries and phase records as DynamoDB items, and back.

Indexable and conditional fields are plain attributes; the checkpoint keeps
the seed's shape ``{nextPhase, state, createdAt}`` with the state encoded by
:class:`PayloadCodec`; usage is JSON text, so numbers never become Decimals.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from pydantic import ValidationError

from ..errors import CorruptJobError
from ..models import Checkpoint, Job, JobStatus, LogEntry, PhaseRecord
from . import dynamodb_schema as schema
from .payloads import PayloadCodec

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

Item = dict[str, "AttributeValueTypeDef"]

_write_sequence = itertools.count(int(time.time() * 1000))
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


class ItemCodec:
    """Converts between jobs and the items of one owner."""

    def __init__(self, owner: str, payloads: PayloadCodec) -> None:
        self.owner = owner
        self.payloads = payloads

    def pk(self, job_id: str) -> str:
        """The partition key of ``job_id`` for this owner."""
        return schema.job_pk(self.owner, job_id)

    def encode_job(self, job: Job, *, token: str) -> EncodedJob:
        """The job item for ``job``, written by the write ``token``; large values may go to S3."""
        s3_keys: set[str] = set()
        checkpoint = None
        if job.checkpoint is not None:
            key = f"states/{self.owner}/{job.job_id}/{job.version}/{job.checkpoint.created_at}-{token}.json"
            state = self.payloads.encode(job.checkpoint.state, key=key)
            s3_keys.update([state.s3_key] if state.s3_key else [])
            checkpoint = {
                "nextPhase": job.checkpoint.next_phase,
                "createdAt": job.checkpoint.created_at,
                "state": state.attribute,
            }
        result = None
        if job.result is not None:
            encoded = self.payloads.encode(job.result, key=f"results/{self.owner}/{job.job_id}/{job.run}-{token}.json")
            s3_keys.update([encoded.s3_key] if encoded.s3_key else [])
            result = encoded.attribute
        job_input = None
        if job.input is not None:
            encoded_input = self.payloads.encode(
                job.input, key=f"inputs/{self.owner}/{job.job_id}/{job.run}-{token}.json"
            )
            s3_keys.update([encoded_input.s3_key] if encoded_input.s3_key else [])
            job_input = encoded_input.attribute
        values: dict[str, Any] = {
            "pk": self.pk(job.job_id),
            "sk": schema.JOB_SK,
            "owner": self.owner,
            "jobId": job.job_id,
            "pipeline": job.pipeline,
            "status": job.status.value,
            "statusKey": schema.status_key(self.owner, job.status.value),
            "sweepKey": schema.SWEEP_KEY_RUNNING if job.status == JobStatus.RUNNING else None,
            "version": job.version,
            "run": job.run,
            "attempt": job.attempt,
            "createdAt": job.created_at,
            "updatedAt": job.updated_at,
            "expiresAt": job.expires_at,
            "ttlSeconds": job.ttl_seconds,
            "leaseOwner": job.lease_owner,
            "leaseExpiresAt": job.lease_expires_at,
            "error": job.error,
            "checkpoint": checkpoint,
            "nextPhase": job.checkpoint.next_phase if job.checkpoint else None,
            "result": result,
            "input": job_input,
            "usage": json.dumps(job.usage),
            "writeToken": token,
        }
        return EncodedJob(to_item(values), s3_keys)

    def entry_items(self, job: Job, entries: tuple[LogEntry, ...]) -> list[Item]:
        """One item per log entry, sorted after everything written before.

        Within one fencing version a single process writes, so a process-wide
        counter orders its writes.
        """
        sequence = next(_write_sequence)
        return [
            to_item(
                {
                    "pk": self.pk(job.job_id),
                    "sk": schema.log_sk(job.run, job.version, sequence, index),
                    "entry": json.dumps(entry.to_wire()),
                    "expiresAt": job.expires_at,
                }
            )
            for index, entry in enumerate(entries)
        ]

    def phase_item(self, job: Job, record: PhaseRecord) -> Item:
        """The item of one finished phase run."""
        return to_item(
            {
                "pk": self.pk(job.job_id),
                "sk": schema.phase_sk(job.run, job.version),
                "record": json.dumps(record.to_wire()),
                "expiresAt": job.expires_at,
            }
        )

    def decode_job(
        self,
        item: Item,
        *,
        entries: list[Item] | None = None,
        records: list[Item] | None = None,
        with_payloads: bool = True,
    ) -> Job:
        """The job an item holds; unreadable items are reported with their key."""
        values = from_item(item)
        where = f"{values.get('pk')}/{values.get('sk')}"
        try:
            checkpoint = None
            if "checkpoint" in values:
                raw = values["checkpoint"]
                state = self.payloads.decode(raw["state"], where=where) if with_payloads else None
                checkpoint = Checkpoint(next_phase=raw["nextPhase"], state=state, created_at=raw["createdAt"])
            result = None
            if "result" in values and with_payloads:
                result = self.payloads.decode(values["result"], where=where)
            job_input = None
            if "input" in values and with_payloads:
                job_input = self.payloads.decode(values["input"], where=where)
            return Job(
                job_id=values["jobId"],
                pipeline=values["pipeline"],
                status=JobStatus(values["status"]),
                checkpoint=checkpoint,
                error=values.get("error"),
                attempt=values["attempt"],
                result=result,
                input=job_input,
                usage=json.loads(values.get("usage", "{}")),
                phases=[PhaseRecord.model_validate_json(from_item(record)["record"]) for record in records or []],
                log=[LogEntry.model_validate_json(from_item(entry)["entry"]) for entry in entries or []],
                created_at=values["createdAt"],
                updated_at=values["updatedAt"],
                expires_at=values["expiresAt"],
                ttl_seconds=values["ttlSeconds"],
                version=values["version"],
                run=values["run"],
                lease_owner=values.get("leaseOwner"),
                lease_expires_at=values.get("leaseExpiresAt"),
            )
        except (KeyError, TypeError, ValueError, ValidationError) as exc:
            raise CorruptJobError(where, f"{type(exc).__name__}: {exc}") from exc

    @staticmethod
    def s3_keys_of(item: Item) -> set[str]:
        """The S3 objects a stored job item refers to."""
        values = from_item(item)
        keys = {PayloadCodec.s3_key_of(values.get("result")), PayloadCodec.s3_key_of(values.get("input"))}
        if "checkpoint" in values:
            keys.add(PayloadCodec.s3_key_of(values["checkpoint"].get("state")))
        return {key for key in keys if key}
