"""Jobs and their inputs as DynamoDB items, and back (history and save items: :mod:`.entry_codec`; maps:
:mod:`.map_codec`).

Indexable and conditional fields are plain attributes; usage is JSON text, so
numbers never become Decimals. The checkpoint keeps the seed's shape
``{nextPhase, state, createdAt}``, with the state (encoded by
:class:`PayloadCodec`) written once, in the item of the write that set it: a
start's or a commit's history item (as its ``entry``) or a save's ``SAVE#``
item. The job item's ``checkpoint`` names that item (``stateAt``), so the job
item stays small; the input lives in an item of its own, written once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core import ttl
from ...core.errors import CorruptJobError
from ...core.models import (
    Checkpoint,
    FanOut,
    HistoryItem,
    Job,
    JobStatus,
    LogEntry,
    Signal,
)
from ...core.transitions import linked_history, shown_log
from ...core.transitions.changes import changed
from ...features.cost import stored_cost
from ..payloads import ITEM_BUDGET, EncodedPayload, MissingPartError, PayloadCodec
from . import schema
from .attributes import UNREADABLE, Item, from_item, item_size, location, to_item, unreadable_reason, value_of
from .entry_codec import EntryCodec, entry_reference, stored_checkpoint, versioned
from .map_codec import MapCodec
from .owner_codec import PAYLOAD_OVERHEAD, key_of


@dataclass
class EncodedJob:
    """A job item ready to write, and the S3 keys it refers to."""

    item: Item
    s3_keys: set[str] = field(default_factory=set)


def state_reference(checkpoint: Checkpoint, state_at: str) -> dict[str, Any]:
    """The job item's checkpoint: ``{nextPhase, createdAt}`` and ``stateAt``, the key of the item holding the state."""
    return versioned(
        {"nextPhase": checkpoint.next_phase, "createdAt": checkpoint.created_at, "stateAt": state_at}, checkpoint
    )


def pending_actions(item: Item) -> list[LogEntry]:
    """The operator actions a job item holds that its history does not yet (``pendingLog``: JSON texts)."""
    texts = from_item({"pendingLog": item["pendingLog"]})["pendingLog"] if "pendingLog" in item else []
    try:
        return [LogEntry.model_validate_json(text) for text in texts]
    except UNREADABLE as exc:
        raise CorruptJobError(location(item), unreadable_reason(exc)) from exc


def state_at(item: Item) -> str | None:
    """The sort key of the item holding a job item's state (None: no checkpoint, or a state kept inline)."""
    checkpoint = item.get("checkpoint", {}).get("M")
    if not isinstance(checkpoint, dict):
        return None
    value = checkpoint.get("stateAt", {}).get("S")
    return value if isinstance(value, str) else None


class ItemCodec(EntryCodec, MapCodec):
    """Converts between jobs and the items of one owner (history and save items: :class:`EntryCodec`; map
    records: :class:`MapCodec`)."""

    def encode_result(self, job_id: str, result: Any, *, token: str, budget: int | None = None) -> EncodedPayload:
        """The attribute map of a job's result (``budget``: the room it has in the item)."""
        room = None if budget is None else budget - PAYLOAD_OVERHEAD
        return self.payloads.encode(result, key=f"results/{self.owner}/{job_id}/{token}.json", budget=room)

    def encode_job(self, job: Job, *, token: str) -> EncodedJob:
        """The whole job item for ``job`` (a start), written by the write ``token``; large values may go to S3.

        The checkpoint refers to the state in the start's history item (:meth:`history_item`); the
        result has what the rest of the item leaves of :data:`~cairn.aws.payloads.ITEM_BUDGET`.
        """
        values = self._job_values(job, token=token)
        if job.checkpoint is not None:
            values["checkpoint"] = state_reference(job.checkpoint, schema.history_sk(job.run, job.sequence, token))
        budget = ITEM_BUDGET - item_size(to_item(values))
        s3_keys: set[str] = set()
        if job.result is not None:
            encoded = self.encode_result(job.job_id, job.result, token=token, budget=budget)
            s3_keys |= key_of(encoded)
            values["result"] = encoded.attribute
        return EncodedJob(to_item(values), s3_keys)

    def measure(self, job: Job) -> int:
        """About how large ``job``'s item is (its state and result as uncompressed JSON: never less than stored)."""
        values = self._job_values(job, token="0" * 32)
        for name, value in (("checkpoint", job.checkpoint.state if job.checkpoint else None), ("result", job.result)):
            if value is not None:
                values[name] = json.dumps(value, separators=(",", ":"))
        return item_size(to_item(values)) + PAYLOAD_OVERHEAD * 2

    def _job_values(self, job: Job, *, token: str) -> dict[str, Any]:
        """The job item's attributes, but for the checkpoint and the result."""
        figure = stored_cost(job.usage)
        cost = schema.UNKNOWN_COST if figure is None else figure
        return {
            "pk": self.pk(job.job_id),
            "sk": schema.JOB_SK,
            "owner": self.owner_key(job.job_id),
            "jobId": job.job_id,
            "pipeline": job.pipeline,
            "status": job.status.value,
            "sweepKey": schema.sweep_key(self.owner, job.job_id) if job.status == JobStatus.RUNNING else None,
            "sequence": job.sequence,
            "run": job.run,
            "attempt": job.attempt,
            "createdAt": job.created_at,
            "updatedAt": job.updated_at,
            "expiresAt": job.expires_at,
            "statusAt": job.updated_at,  # a start sets the status: what the Listing index shows (schema)
            "statusExpiresAt": job.expires_at,
            "ttlSeconds": job.ttl_seconds,
            "leaseOwner": job.lease_owner,
            "leaseExpiresAt": job.lease_expires_at,
            "claimSequence": job.claim_sequence,
            "claimedAt": job.claimed_at,
            "notBefore": job.not_before,
            "waitingFor": job.waiting_for,
            "waitDeadline": job.wait_deadline,
            "timeoutPhase": job.timeout_phase,
            "signal": job.signal.model_dump_json(by_alias=True) if job.signal else None,
            "fanOut": job.fan_out.model_dump_json(by_alias=True) if job.fan_out else None,
            "error": job.error,
            "errorType": job.error_type,
            "errorPhase": job.error_phase,
            "nextPhase": job.checkpoint.next_phase if job.checkpoint else None,
            "inputToken": job.input_token,
            "usage": json.dumps(job.usage) if job.usage else None,
            schema.COST_ATTRIBUTE: cost,
            schema.LISTED_COST_ATTRIBUTE: cost,  # a start sets the status: what the CostListing index orders by
            "writeToken": token,
            "historyHead": job.history_head,
            "historyRenewBy": job.history_renew_by,
            "shareWait": job.share_wait,
        }

    def input_item(self, job: Job) -> tuple[Item, set[str]] | None:
        """The item holding the job's input, when the job's last write set it (None: nothing to write)."""
        if job.input_token is None or job.input_token != job.write_token:
            return None
        encoded = self.payloads.encode(job.input, key=f"inputs/{self.owner}/{job.job_id}/{job.input_token}.json")
        values = {
            "pk": self.pk(job.job_id),
            "sk": schema.input_sk(job.input_token),
            "input": encoded.attribute,
            "expiresAt": ttl.side_expires_at(job.updated_at, job.ttl_seconds),
        }
        return to_item(values), key_of(encoded)

    def _state(self, raw: Mapping[str, Any], where: str, states: Mapping[str, Item], fetch: bool) -> Any:
        """The state of a job item's checkpoint: at ``stateAt``, or inline (as stored before states had items)."""
        if "state" in raw:
            return self.payloads.decode(raw["state"], where=where, fetch=fetch)
        sk = str(raw["stateAt"])
        holder = states.get(sk)
        if holder is None:
            if not fetch:
                return None
            raise MissingPartError(where, f"the item {sk} holding its state is missing", part=sk)
        found = self.decode_entry(holder, where=location(holder), fetch=fetch)
        if found is None:
            raise CorruptJobError(location(holder), "the item holding the job's state has none")
        return found.state

    def decode_job(
        self,
        item: Item,
        *,
        with_payloads: bool = True,
        partition: Iterable[Item] = (),
        state_item: Item | None = None,
    ) -> Job:
        """The job an item holds, unreadable items named.

        Its state comes from ``state_item`` or from ``partition`` (the job's other items, which also
        give its input and history); with ``with_payloads`` False a state not given is None.
        """
        where = location(item)
        partition = list(partition)
        states = {str(other["sk"].get("S", "")): other for other in [*partition, *filter(None, [state_item])]}
        try:
            values = from_item(item)
            checkpoint = None
            if "checkpoint" in values:
                raw = values["checkpoint"]
                state = self._state(raw, where, states, with_payloads)
                checkpoint = stored_checkpoint(raw, state)
            result = None
            if "result" in values:
                result = self.payloads.decode(values["result"], where=where, fetch=with_payloads)
            job = Job(
                job_id=values["jobId"],
                pipeline=values["pipeline"],
                status=JobStatus(values["status"]),
                checkpoint=checkpoint,
                error=values.get("error"),
                error_type=values.get("errorType"),
                error_phase=values.get("errorPhase"),
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
                claimed_at=values.get("claimedAt"),
                not_before=values.get("notBefore"),
                waiting_for=values.get("waitingFor"),
                wait_deadline=values.get("waitDeadline"),
                timeout_phase=values.get("timeoutPhase"),
                signal=Signal.model_validate_json(values["signal"]) if "signal" in values else None,
                fan_out=FanOut.model_validate_json(values["fanOut"]) if "fanOut" in values else None,
                write_token=values.get("writeToken"),
                history_head=values.get("historyHead"),
                input_token=values.get("inputToken"),
                history_renew_by=values.get("historyRenewBy"),
                share_wait=values.get("shareWait"),
                pending_log=[LogEntry.model_validate_json(text) for text in values.get("pendingLog", [])],
            )
        except UNREADABLE as exc:
            raise CorruptJobError(where, unreadable_reason(exc)) from exc
        return self._with_partition(job, partition, where) if partition else job

    def _with_partition(self, job: Job, items: list[Item], where: str) -> Job:
        history: dict[str, HistoryItem] = {}
        job_input = None
        for item in items:
            sk = str(item["sk"].get("S", ""))
            try:
                if schema.is_history_sk(sk):  # either form: ordered, or as written before
                    entry = HistoryItem.model_validate_json(from_item(item)["history"])
                    history[entry.token] = entry
                elif job.input_token is not None and sk == schema.input_sk(job.input_token):
                    job_input = self.payloads.decode(from_item(item)["input"], where=f"{where}/{sk}")
            except UNREADABLE as exc:
                raise CorruptJobError(f"{where}/{sk}", unreadable_reason(exc)) from exc
        log, phases = linked_history(history, job.history_head)
        return changed(job, input=job_input, log=shown_log(log, job.pending_log), phases=phases)

    @staticmethod
    def side_items(job_item: Item, partition: Iterable[Item]) -> list[Item]:
        """The items the job item links to: its input, its saved state and its history chain (from ``historyHead``),
        with the ``ENTRY#`` items keeping the states its items entered apart from them.

        The chain passes through history items of either form (ordered ``H#`` keys, or ``HIST#`` ones
        written before), each found by its write token.
        """
        head, input_token = job_item.get("historyHead", {}).get("S"), job_item.get("inputToken", {}).get("S")
        by_sk = {str(item["sk"].get("S", "")): item for item in partition}
        by_token: dict[str, Item] = {}
        for sk, item in sorted(by_sk.items()):  # an ordered key ("H#...") sorts first: it wins over an older form
            if schema.is_history_sk(sk):
                by_token.setdefault(schema.history_token(sk), item)
        linked = [by_sk[schema.input_sk(input_token)]] if input_token and schema.input_sk(input_token) in by_sk else []
        saved = state_at(job_item)
        if saved is not None and saved.startswith(schema.SAVE_PREFIX) and saved in by_sk:
            linked.append(by_sk[saved])
        seen: set[str] = set()
        while head is not None and head in by_token and head not in seen:
            seen.add(head)
            item = by_token[head]
            linked.append(item)
            apart = entry_reference(item, where=location(item))
            if apart is not None and apart[1] in by_sk:  # the state it entered, kept apart from its log
                linked.append(by_sk[apart[1]])
            try:
                head = json.loads(from_item(item)["history"]).get("prev")
            except UNREADABLE:
                break  # an unreadable item: the chain is renewed up to it
        return linked

    @staticmethod
    def s3_keys_of(item: Item) -> set[str]:
        """The S3 objects a stored job item itself refers to (its result; a checkpoint state kept inline).

        Only those two attributes are read (the item was read whole, and found sound, when it was decoded).
        """
        checkpoint = value_of(item, "checkpoint")
        keys = {PayloadCodec.s3_key_of(value_of(item, "result"))}
        if isinstance(checkpoint, dict):
            keys.add(PayloadCodec.s3_key_of(checkpoint.get("state")))
        return {key for key in keys if key}
