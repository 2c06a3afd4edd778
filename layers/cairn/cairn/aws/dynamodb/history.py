"""A job's history and input items: the entry checkpoints they keep, and their expiry kept ahead of the job's.

History items (what one write added to the log and phase records, of either form: see
:mod:`.schema`) and the input item sit under the job's ``pk`` and are written once, with an expiry of
their own. A job that lives on pushes that expiry forward before its own would pass it
(:mod:`cairn.core.ttl`: at most once per TTL), following its chain through items of both forms.
"""

from __future__ import annotations

from dataclasses import asdict, replace

from ...core import transitions, ttl
from ...core.models import Checkpoint
from ...core.storage_port import StateLink
from ...core.transitions import StartJob, Written
from ...core.transitions.history import entered_by
from ..payloads import MissingPartError, PayloadCodec
from . import schema
from .attributes import Item, from_item
from .codec import ItemCodec, state_at
from .entry_codec import entry_reference
from .expressions import Expression
from .history_chain import NewestFirst, chain_of
from .table import ConditionFailed, Table

#: History items a rerun's search for the phase's entry reads at a time, newest first.
ENTERED_PAGE = 10


class History:
    """The history and input items of one owner's jobs."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def entered(self, job_id: str, phase: str, *, before: int | None = None) -> Checkpoint | None:
        """The entry checkpoint of ``phase`` kept in the job's history: the newest linked item with one.

        The job item, then its chain newest first, a page of items at a time, until an item that
        entered ``phase`` (either form of history item; an unreadable one ends the chain there).
        Only that item's state is read from S3.
        """
        found = self._entry_item(job_id, phase, before)
        return None if found is None else self.table.codec.decode_entry(found[0], where=found[1])

    def entered_link(self, job_id: str, phase: str, *, before: int | None, expires_in: int) -> StateLink | None:
        """A presigned GET of the S3 object holding the state :meth:`entered` finds; None when it is inline."""
        found = self._entry_item(job_id, phase, before)
        if found is None:
            return None
        item, where = found
        return self._link(item, where, expires_in)

    def checkpoint_link(self, job_id: str, *, expires_in: int) -> StateLink | None:
        """A presigned GET of the S3 object holding the state of the job's checkpoint; None when it is kept in
        the table (or the job has no checkpoint). The job item, then the item holding its state: no S3 read."""
        table = self.table
        response = table.call(table.client.get_item, TableName=table.name, Key=table.key(job_id), ConsistentRead=True)
        job_item = response.get("Item")
        if not job_item or table.expired(job_item, table.clock()):
            return None
        holder_sk = state_at(job_item)
        if holder_sk is None:  # no checkpoint, or a state kept on the job item itself (written before state items)
            return None
        key = {"pk": job_item["pk"], "sk": {"S": holder_sk}}
        found = table.call(table.client.get_item, TableName=table.name, Key=key, ConsistentRead=True).get("Item")
        if not found:
            return None  # a save replaced it since the job item was read: the caller reads the view again
        link = self._link(found, f"{table.codec.pk(job_id)}/{holder_sk}", expires_in)
        return None if link is None else replace(link, sequence=int(from_item(job_item)["sequence"]))

    def _link(self, item: Item, where: str, expires_in: int) -> StateLink | None:
        """A presigned GET of the S3 object holding the state a history or save ``item`` keeps; None when inline."""
        entry = from_item(item).get("entry")
        reference = entry.get("state", {}).get("s3") if isinstance(entry, dict) else None
        checkpoint = self.table.codec.decode_entry(item, where=where, fetch=False)
        if not isinstance(reference, dict) or checkpoint is None:
            return None
        link = self.table.codec.payloads.link(reference, where=where, expires_in=expires_in, now_ms=self.table.clock())
        return StateLink(**asdict(link), checkpoint=checkpoint.model_copy(update={"state": None}))

    def _entry_item(self, job_id: str, phase: str, before: int | None) -> tuple[Item, str] | None:
        """The history item holding the entry :meth:`entered` finds, and where it lives (no S3 read)."""
        table = self.table
        response = table.call(table.client.get_item, TableName=table.name, Key=table.key(job_id), ConsistentRead=True)
        job_item = response.get("Item")
        if not job_item or table.expired(job_item, table.clock()):
            return None
        run, sequence, head = chain_of(job_item)
        chain = NewestFirst(table, job_id, run=run, head=head, until=sequence, page=ENTERED_PAGE, strict=False)
        for link in chain:
            where = f"{table.codec.pk(job_id)}/{link.sk}"
            apart = entry_reference(link.item, where=where)
            found = apart[0] if apart else table.codec.decode_entry(link.item, where=where, fetch=False)
            if found is not None and found.next_phase == phase and entered_by(found, before):
                return (link.item, where) if apart is None else self._kept_apart(link.item, apart[1])
        return None

    def _kept_apart(self, history_item: Item, sk: str) -> tuple[Item, str] | None:
        """The ``ENTRY#`` item keeping the state a history item entered (one consistent GetItem).

        None when it is gone with the history item's own expiry (TTL deletes the two in any order, days late):
        that entry is no longer kept. Gone while the history item lives, it is a missing part.
        """
        table = self.table
        key = {"pk": history_item["pk"], "sk": {"S": sk}}
        found = table.call(table.client.get_item, TableName=table.name, Key=key, ConsistentRead=True).get("Item")
        where = f"{history_item['pk'].get('S')}/{sk}"
        if found:
            return dict(found), where
        if table.expired(history_item, table.clock()):
            return None
        raise MissingPartError(where, f"the item {sk} holding the state this phase entered with is missing", part=sk)

    def with_renewal(self, written: Written, request: StartJob) -> Written:
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
                renew_by = self.renew(request.job_id, now, seconds)
        return replace(written, job=written.job.model_copy(update={"history_renew_by": renew_by}))

    def renew(self, job_id: str, now_ms: int, ttl_seconds: int) -> int:
        """Push the expiry of the job's history and input items and restart the age of its offloaded objects.

        Returns the job's next ``historyRenewBy``. Idempotent: a crash half-way leaves the job due again.
        """
        target = ttl.side_expires_at(now_ms, ttl_seconds)
        items = list(self.table.query_partition(job_id))
        job_item = next((item for item in items if item["sk"].get("S") == schema.JOB_SK), None)
        if job_item is not None:
            keys = ItemCodec.s3_keys_of(job_item)
            holding_state = state_at(job_item)
            for item in ItemCodec.side_items(job_item, items):
                keys |= {key for key in [PayloadCodec.s3_key_of(from_item(item).get("input"))] if key}
                if item["sk"].get("S") == holding_state:
                    keys |= ItemCodec.entry_s3_keys(item)
                if int(str(item.get(schema.TTL_ATTRIBUTE, {}).get("N", "0"))) < target:
                    self._renew_item(item, target)
            for key in sorted(keys):
                self.table.payloads.renew(key)
        return ttl.renew_by(target, ttl_seconds)

    def _renew_item(self, item: Item, expires_at: int) -> None:
        expression = Expression().require("attribute_exists(#pk)").set(schema.TTL_ATTRIBUTE, expires_at)
        expression.name("pk")
        table = self.table
        try:
            table.call(
                table.client.update_item,
                TableName=table.name,
                Key={"pk": item["pk"], "sk": item["sk"]},
                **expression.update_kwargs(),
            )
        except ConditionFailed:
            return  # deleted meanwhile: nothing to keep
