"""Jobs, history and inputs as DynamoDB items, and back.

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
    MapItem,
    MapRecord,
    Signal,
)
from ...core.transitions import linked_history, shown_log
from ...core.transitions.changes import changed
from ..payloads import ITEM_BUDGET, EncodedPayload, MissingPartError, PayloadCodec
from . import schema
from .attributes import UNREADABLE, Item, from_item, item_size, location, to_item, unreadable_reason

#: Room an encoded payload's wrapping takes in an item: the map, its names, an S3 reference.
_PAYLOAD_OVERHEAD = 512

ENTRY_STATES = "states/"
SAVED_STATES = "saves/"


def kept_object(key: str) -> bool:
    """Whether an S3 object stays when the job item stops referring to it: a phase's entry state does."""
    return key.startswith(ENTRY_STATES)


HISTORY_DROPPED = "{count} earlier log entries of this write were left out: they would not fit in one stored item"


def fitting_history(history: HistoryItem) -> str:
    """The history item's JSON, with its oldest log entries left out (and said so) if it would not fit an item."""
    text = history.model_dump_json(by_alias=True)
    room = ITEM_BUDGET - 1024  # the item's keys and TTL
    if len(text.encode()) <= room:
        return text
    note = LogEntry(message=HISTORY_DROPPED.format(count=len(history.log)), level="warning", timestamp=0)
    room -= len(history.model_copy(update={"log": [note]}).model_dump_json(by_alias=True).encode())
    kept: list[LogEntry] = []
    for entry in reversed(history.log):
        room -= len(entry.model_dump_json(by_alias=True).encode()) + 1
        if room < 0:
            break
        kept.insert(0, entry)
    first = kept[0] if kept else history.log[-1]
    note = note.model_copy(
        update={
            "message": HISTORY_DROPPED.format(count=len(history.log) - len(kept)),
            "phase": first.phase,
            "timestamp": first.timestamp,
        }
    )
    return history.model_copy(update={"log": [note, *kept]}).model_dump_json(by_alias=True)


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


def versioned(value: dict[str, Any], checkpoint: Checkpoint) -> dict[str, Any]:
    """A stored checkpoint map with the ``stateVersion`` its state was saved with (none for version 1)."""
    if checkpoint.state_version is not None:
        value["stateVersion"] = checkpoint.state_version
    return value


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

    def owner_key(self, job_id: str) -> str:
        """The ``Listing`` key of ``job_id`` (the job's own shard)."""
        return schema.owner_key(self.owner, schema.list_shard(self.owner, job_id))

    def encode_checkpoint(
        self, job_id: str, checkpoint: Checkpoint, *, token: str, budget: int | None = None, entry: bool = True
    ) -> tuple[dict[str, Any], set[str]]:
        """The checkpoint map ``{nextPhase, createdAt, state}``; a large state goes to S3 under the write's token.

        ``budget`` is the room the whole map has in the item. A phase's entry state (``entry``: a
        start, or a commit entering a phase) goes under ``states/`` and is kept for reruns until the
        bucket's retention removes it; a state saved mid-phase goes under ``saves/`` and is removed
        once replaced (see :func:`kept_object` and :meth:`.job_item.JobItem.written`).
        """
        room = None if budget is None else budget - _PAYLOAD_OVERHEAD - len(checkpoint.next_phase.encode())
        key = f"{ENTRY_STATES if entry else SAVED_STATES}{self.owner}/{job_id}/{token}.json"
        state = self.payloads.encode(checkpoint.state, key=key, budget=room, text=checkpoint.state_json)
        value = {"nextPhase": checkpoint.next_phase, "createdAt": checkpoint.created_at, "state": state.attribute}
        return versioned(value, checkpoint), _key_of(state)

    def encode_result(self, job_id: str, result: Any, *, token: str, budget: int | None = None) -> EncodedPayload:
        """The attribute map of a job's result (``budget``: the room it has in the item)."""
        room = None if budget is None else budget - _PAYLOAD_OVERHEAD
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
            s3_keys |= _key_of(encoded)
            values["result"] = encoded.attribute
        return EncodedJob(to_item(values), s3_keys)

    def measure(self, job: Job) -> int:
        """About how large ``job``'s item is (its state and result as uncompressed JSON: never less than stored)."""
        values = self._job_values(job, token="0" * 32)
        for name, value in (("checkpoint", job.checkpoint.state if job.checkpoint else None), ("result", job.result)):
            if value is not None:
                values[name] = json.dumps(value, separators=(",", ":"))
        return item_size(to_item(values)) + _PAYLOAD_OVERHEAD * 2

    def _job_values(self, job: Job, *, token: str) -> dict[str, Any]:
        """The job item's attributes, but for the checkpoint and the result."""
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
            "nextPhase": job.checkpoint.next_phase if job.checkpoint else None,
            "inputToken": job.input_token,
            "usage": json.dumps(job.usage) if job.usage else None,
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
        return to_item(values), _key_of(encoded)

    def history_item(
        self, job: Job, history: HistoryItem, *, expires_at: int, checkpoint: Checkpoint | None = None
    ) -> tuple[Item, set[str]]:
        """The item of what one write added to the history of ``job`` (as the write leaves it), and its S3 keys.

        Its key holds the job's run and sequence (:func:`~cairn.aws.dynamodb.schema.history_sk`).
        ``checkpoint`` is the checkpoint the write set (a start, or a commit entering a phase): its
        state is kept here, once, as the item's ``entry`` (in S3 under ``states/`` when the item has
        no room for it), both for the job item that refers to it and for a rerun from that phase.
        """
        job_id = job.job_id
        values: dict[str, Any] = {
            "pk": self.pk(job_id),
            "sk": schema.history_sk(job.run, job.sequence, history.token),
            "history": fitting_history(history.model_copy(update={"entry": None})),
            "expiresAt": expires_at,
        }
        return self._with_state(to_item(values), job_id, checkpoint, token=history.token, entry=True)

    def save_item(self, job_id: str, checkpoint: Checkpoint, *, token: str, expires_at: int) -> tuple[Item, set[str]]:
        """The item of a state saved mid-phase (``SAVE#<token>``), and the S3 keys it refers to."""
        values = {"pk": self.pk(job_id), "sk": schema.save_sk(token), "expiresAt": expires_at}
        return self._with_state(to_item(values), job_id, checkpoint, token=token, entry=False)

    def _with_state(
        self, item: Item, job_id: str, checkpoint: Checkpoint | None, *, token: str, entry: bool
    ) -> tuple[Item, set[str]]:
        if checkpoint is None:
            return item, set()
        room = ITEM_BUDGET - item_size(item) - len("entry")
        encoded, keys = self.encode_checkpoint(job_id, checkpoint, token=token, budget=room, entry=entry)
        item.update(to_item({"entry": encoded}))
        return item, keys

    def map_item(self, job_id: str, fan_out: str, item: MapItem, *, expires_at: int) -> tuple[Item, set[str]]:
        """The DynamoDB item of a map's item record (a large one goes to S3 under its write token)."""
        key = f"items/{self.owner}/{job_id}/{fan_out}/{item.index}-{item.write_token or 'new'}.json"
        encoded = self.payloads.encode(item.model_dump(mode="json", by_alias=True), key=key, budget=ITEM_BUDGET - 1024)
        values = {
            "pk": self.pk(job_id),
            "sk": schema.map_item_sk(fan_out, item.index),
            "record": encoded.attribute,
            "version": item.version,
            "writeToken": item.write_token,
            "expiresAt": expires_at,
        }
        return to_item(values), _key_of(encoded)

    def map_record(self, job_id: str, record: MapRecord, *, expires_at: int) -> Item:
        """The DynamoDB item of a map's record: what does not change as JSON, the count and marks beside it."""
        values = {
            "pk": self.pk(job_id),
            "sk": schema.map_record_sk(record.fan_out.id),
            "map": record.model_dump_json(by_alias=True, exclude={"done", "handed_off", "joined"}),
            "done": record.done,
            "handedOff": record.handed_off,
            "joined": record.joined,
            "expiresAt": expires_at,
        }
        return to_item(values)

    def decode_map_record(self, item: Item) -> MapRecord | None:
        """The map's record an item holds (None for a count without its record: a map started before maps had one)."""
        values = from_item(item)
        if "map" not in values:
            return None
        try:
            known = json.loads(values["map"])
            return MapRecord.model_validate(
                {
                    **known,
                    "done": int(values.get("done", 0)),
                    "handedOff": values.get("handedOff"),
                    "joined": values.get("joined"),
                }
            )
        except UNREADABLE as exc:
            raise CorruptJobError(location(item), unreadable_reason(exc)) from exc

    def decode_map_item(self, item: Item) -> MapItem:
        """The item record a DynamoDB item holds; CorruptJobError names an unreadable one."""
        where = location(item)
        try:
            return MapItem.model_validate(self.payloads.decode(from_item(item)["record"], where=where))
        except UNREADABLE as exc:
            raise CorruptJobError(where, unreadable_reason(exc)) from exc

    def decode_entry(self, item: Item, *, where: str, fetch: bool = True) -> Checkpoint | None:
        """The checkpoint a history or save item keeps (its state fetched from S3 if it lives there)."""
        values = from_item(item)
        raw = values.get("entry")
        if not isinstance(raw, dict):
            return None
        try:
            state = self.payloads.decode(raw["state"], where=where, fetch=fetch)
            return Checkpoint(
                next_phase=raw["nextPhase"],
                state=state,
                created_at=raw["createdAt"],
                state_version=raw.get("stateVersion"),
            )
        except UNREADABLE as exc:
            raise CorruptJobError(where, unreadable_reason(exc)) from exc

    @staticmethod
    def entry_s3_keys(item: Item | None) -> set[str]:
        """The S3 object holding the state a history or save item keeps, if it is kept there."""
        raw = from_item(item).get("entry") if item is not None else None
        key = PayloadCodec.s3_key_of(raw.get("state")) if isinstance(raw, dict) else None
        return {key} if key else set()

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
                checkpoint = Checkpoint(
                    next_phase=raw["nextPhase"],
                    state=state,
                    created_at=raw["createdAt"],
                    state_version=raw.get("stateVersion"),
                )
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
        """The items the job item links to: its input, its saved state and its history chain (from ``historyHead``).

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
            try:
                head = json.loads(from_item(item)["history"]).get("prev")
            except UNREADABLE:
                break  # an unreadable item: the chain is renewed up to it
        return linked

    @staticmethod
    def s3_keys_of(item: Item) -> set[str]:
        """The S3 objects a stored job item itself refers to (its result; a checkpoint state kept inline)."""
        values = from_item(item)
        keys = {PayloadCodec.s3_key_of(values.get("result"))}
        if isinstance(values.get("checkpoint"), dict):
            keys.add(PayloadCodec.s3_key_of(values["checkpoint"].get("state")))
        return {key for key in keys if key}
