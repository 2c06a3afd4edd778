"""History and save items as DynamoDB items, and the checkpoints they keep.

A checkpoint's state is written once, in the item of the write that set it: a start's or a commit's
history item (as its ``entry``), or a save's ``SAVE#`` item; a state too large for the item goes to S3.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...core.errors import CorruptJobError
from ...core.models import Checkpoint, HistoryItem, Job, LogEntry, PhaseRun
from ..payloads import ITEM_BUDGET, PayloadCodec
from . import schema
from .attributes import UNREADABLE, Item, from_item, item_size, to_item, unreadable_reason, value_of
from .owner_codec import PAYLOAD_OVERHEAD, OwnerCodec, key_of

ENTRY_STATES = "states/"
SAVED_STATES = "saves/"
#: What a strongly consistent read unit covers: a GetItem is billed on the whole stored item, 1 unit per 4 KB.
READ_UNIT_BYTES = 4096


def read_units(item: Item) -> int:
    """The read units a consistent GetItem of ``item`` costs."""
    return max(1, math.ceil(item_size(item) / READ_UNIT_BYTES))


@dataclass(frozen=True)
class HistoryWrite:
    """A commit's history item, and the item keeping its entry's state when that is kept apart (written together).

    ``holder`` is the sort key of the item keeping the state (None: the write set no checkpoint); ``keys`` the
    S3 objects the items refer to.
    """

    items: list[Item]
    holder: str | None
    keys: set[str]


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


def versioned(value: dict[str, Any], checkpoint: Checkpoint) -> dict[str, Any]:
    """A stored checkpoint map with the ``stateVersion`` its state was saved with (none for version 1) and, saved
    mid-phase, its ``phaseRun`` (the phase's entry and its steps' results) as JSON text (none otherwise)."""
    if checkpoint.state_version is not None:
        value["stateVersion"] = checkpoint.state_version
    if checkpoint.phase_run is not None:
        value["phaseRun"] = checkpoint.phase_run.model_dump_json(by_alias=True)
    return value


def stored_checkpoint(raw: Mapping[str, Any], state: Any) -> Checkpoint:
    """The checkpoint a stored checkpoint map describes, with ``state`` (decoded from wherever it is kept)."""
    phase_run = raw.get("phaseRun")
    return Checkpoint(
        next_phase=raw["nextPhase"],
        state=state,
        created_at=raw["createdAt"],
        state_version=raw.get("stateVersion"),
        phase_run=PhaseRun.model_validate_json(phase_run) if phase_run is not None else None,
    )


class EntryCodec(OwnerCodec):
    """Encodes checkpoints, and the history and save items that keep them; decodes what such an item keeps."""

    def encode_checkpoint(
        self, job_id: str, checkpoint: Checkpoint, *, token: str, budget: int | None = None, entry: bool = True
    ) -> tuple[dict[str, Any], set[str]]:
        """The checkpoint map ``{nextPhase, createdAt, state}``; a large state goes to S3 under the write's token.

        ``budget`` is the room the whole map has in the item. A phase's entry state (``entry``: a
        start, or a commit entering a phase) goes under ``states/`` and is kept for reruns until the
        bucket's retention removes it; a state saved mid-phase goes under ``saves/`` and is removed
        once replaced (see :func:`kept_object` and :meth:`.job_item.JobItem.written`).
        """
        room = None if budget is None else budget - PAYLOAD_OVERHEAD - len(checkpoint.next_phase.encode())
        if room is not None and checkpoint.phase_run is not None:  # the steps' results take room beside the state
            room -= len(checkpoint.phase_run.model_dump_json(by_alias=True).encode())
        key = f"{ENTRY_STATES if entry else SAVED_STATES}{self.owner}/{job_id}/{token}.json"
        state = self.payloads.encode(checkpoint.state, key=key, budget=room, text=checkpoint.state_json)
        value = {"nextPhase": checkpoint.next_phase, "createdAt": checkpoint.created_at, "state": state.attribute}
        return versioned(value, checkpoint), key_of(state)

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

    def history_write(
        self, job: Job, history: HistoryItem, *, expires_at: int, checkpoint: Checkpoint | None
    ) -> HistoryWrite:
        """A commit's :meth:`history_item`, its entry's state moved to an ``ENTRY#`` item when its log is large.

        The state moves when reading the history item whole (as DynamoDB bills a GetItem) would cost more
        read units than reading the state alone; the history item's ``entry`` then names where it is
        (``stateAt``), so a rerun from the phase still finds it (:func:`entry_reference`).
        """
        item, keys = self.history_item(job, history, expires_at=expires_at, checkpoint=checkpoint)
        sk = str(item["sk"]["S"])
        if checkpoint is None:
            return HistoryWrite([item], None, keys)
        apart = schema.entry_sk(history.token)
        own: Item = {"pk": item["pk"], "sk": {"S": apart}, "expiresAt": item["expiresAt"], "entry": item["entry"]}
        units = read_units(item)
        if units == 1 or units <= read_units(own):  # one unit is the least any read costs
            return HistoryWrite([item], sk, keys)
        reference = {name: value for name, value in item["entry"]["M"].items() if name != "state"}
        linked: Item = {**item, "entry": {"M": {**reference, "stateAt": {"S": apart}}}}
        return HistoryWrite([linked, own], apart, keys)

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

    def decode_entry(self, item: Item, *, where: str, fetch: bool = True) -> Checkpoint | None:
        """The checkpoint a history or save item keeps (its state fetched from S3 if it lives there).

        A history item whose state is kept apart (:func:`entry_reference`) keeps none here: None.
        """
        values = from_item(item)
        raw = values.get("entry")
        if not isinstance(raw, dict) or "state" not in raw:
            return None
        try:
            state = self.payloads.decode(raw["state"], where=where, fetch=fetch)
            return stored_checkpoint(raw, state)
        except UNREADABLE as exc:
            raise CorruptJobError(where, unreadable_reason(exc)) from exc

    @staticmethod
    def entry_s3_keys(item: Item | None) -> set[str]:
        """The S3 object holding the state a history or save item keeps, if it is kept there."""
        raw = value_of(item, "entry") if item is not None else None
        key = PayloadCodec.s3_key_of(raw.get("state")) if isinstance(raw, dict) else None
        return {key} if key else set()


def entry_reference(item: Item, *, where: str) -> tuple[Checkpoint, str] | None:
    """The checkpoint (its state None) a history item entered and the sort key of the item keeping its state,
    when that state is kept apart (:meth:`EntryCodec.history_write`); None otherwise."""
    raw = from_item(item).get("entry")
    if not isinstance(raw, dict) or "state" in raw or "stateAt" not in raw:
        return None
    try:
        return stored_checkpoint(raw, None), str(raw["stateAt"])
    except UNREADABLE as exc:
        raise CorruptJobError(where, unreadable_reason(exc)) from exc


def inline_checkpoint(reference: Mapping[str, Any] | None, items: list[Item]) -> dict[str, Any] | None:
    """The job item's checkpoint ``reference`` with its state in it, taken from the item of ``items`` holding it
    (``stateAt``); None when there is no reference or the state is kept in S3. The job item then keeps a small
    state itself, so that a claim, which returns the job item, needs no read of another item."""
    if not isinstance(reference, Mapping) or "stateAt" not in reference:
        return None
    holder = next((item for item in items if item["sk"].get("S") == reference["stateAt"]), None)
    raw = value_of(holder, "entry") if holder is not None else None
    state = raw.get("state") if isinstance(raw, dict) else None
    if state is None or PayloadCodec.s3_key_of(state) is not None:
        return None
    return {**{name: value for name, value in reference.items() if name != "stateAt"}, "state": state}
