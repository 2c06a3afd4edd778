"""Jobs and their transitions: reads of the job item, and the start, claim, save and commit writes.

A claim, a save and a commit are each one conditional ``UpdateItem`` that sets
only what changes and returns the item; a start is one conditional ``PutItem``.
What a write adds to the job's history (log entries, a phase record) is one plain
``PutItem`` made just before it, linked from the job item only if the job write
lands. Every write advances ``sequence``; a claim is conditioned on the sequence
its message carries, the claim holder's writes on its claim (``leaseOwner`` and
``claimSequence``), a start on the sequence it read. A condition failure is read
from the returned old item: the request's own write token means it had landed (a
lost response); otherwise the domain outcome follows.
"""

from __future__ import annotations

import json
from dataclasses import replace

from pydantic import ValidationError

from ...core import transitions, ttl
from ...core.errors import ClaimLostError, CorruptJobError, VersionConflict
from ...core.models import Checkpoint, FanOut, Job, JobStatus
from ...core.storage_port import Route
from ...core.transitions import Claim, Commit, Fence, Save, StartJob, Written
from ...core.transitions.changes import changed
from ...features.cost import stored_cost
from . import schema
from .attributes import Item, from_item, item_size, to_item
from .codec import state_at, state_reference
from .entry_codec import inline_checkpoint
from .expressions import Expression
from .history import History
from .job_item import CLAIM_ROOM, RENEWAL_ROOM, WRITE_UNIT_BYTES, JobItem, set_status
from .rereads import read_current
from .table import ConditionFailed, Table, written_by

_CLAIM_CONDITION = (
    "attribute_exists(#pk) AND #expiresAt > :nowSeconds AND #pipeline = :pipeline AND #status = :running "
    "AND attribute_exists(#checkpoint)"
)
_LEASE_FREE = "attribute_not_exists(#leaseOwner) OR #leaseExpiresAt <= :now"
_HOLDS_CLAIM = "#leaseOwner = :worker AND #claimSequence = :claimSequence AND #expiresAt > :nowSeconds"


class Jobs:
    """The job items of one owner: reads, and the transitions a phase run makes."""

    def __init__(self, table: Table, job_item: JobItem, history: History) -> None:
        self.table = table
        self.job_item = job_item
        self.history = history

    def get_job(self, job_id: str) -> Job | None:
        """The job with its input, log and phase records (one consistent query), or None if absent or expired.

        A save that lands while the query runs may remove the item or object holding the state the
        job item read named: the query is made again (:func:`.rereads.read_current`).
        """
        return read_current(lambda _: self._get_job_once(job_id))

    def _get_job_once(self, job_id: str) -> Job | None:
        now = self.table.clock()
        job_item: Item | None = None
        others: dict[str, Item] = {}
        for item in self.table.query_partition(job_id):
            sk = str(item["sk"].get("S", ""))
            if sk == schema.JOB_SK:
                job_item = item
            else:
                others[sk] = item
        if job_item is None or self.table.expired(job_item, now):
            return None
        holder = state_at(job_item)
        job = self.table.codec.decode_job(job_item, partition=others.values())
        self.job_item.remember(job_id, job_item, others.get(holder) if holder else None)
        return job

    def get_route(self, job_id: str) -> Route | None:
        """The job's pipeline, status, next phase and sequence: one small consistent read of the job item."""
        response = self.table.call(
            self.table.client.get_item,
            TableName=self.table.name,
            Key=self.table.key(job_id),
            ConsistentRead=True,
            **Expression().projection_kwargs("pipeline", "status", "nextPhase", "sequence", "expiresAt", "fanOut"),
        )
        item = response.get("Item")
        if not item or self.table.expired(item, self.table.clock()):
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
            raise CorruptJobError(
                f"{self.table.codec.pk(job_id)}/{schema.JOB_SK}", f"{type(exc).__name__}: {exc}"
            ) from exc

    def start_job(self, request: StartJob) -> Job:
        """The job created or taken over: its history and input items, then one conditional put."""
        written = self.history.with_renewal(transitions.start(request.seen, request), request)
        job = written.job
        encoded = self.table.codec.encode_job(job, token=request.token)
        side: list[Item] = []
        new_keys = set(encoded.s3_keys)
        state_keys: set[str] = set()
        if written.history is not None:
            expires = ttl.side_expires_at(request.now_ms, request.ttl_seconds)
            history, state_keys = self.table.codec.history_item(
                job, written.history, expires_at=expires, checkpoint=job.checkpoint
            )
            side.append(history)
            new_keys |= state_keys
            inline = inline_checkpoint(from_item(encoded.item).get("checkpoint"), [history])
            if inline is not None:
                small = {**encoded.item, "checkpoint": to_item({"checkpoint": inline})["checkpoint"]}
                if item_size(small) + CLAIM_ROOM + RENEWAL_ROOM <= WRITE_UNIT_BYTES:
                    encoded = replace(encoded, item=small)
        input_item = self.table.codec.input_item(job)
        if input_item is not None:
            side.append(input_item[0])
            new_keys |= input_item[1]
        self.table.put_items(side)
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
            self.table.call(
                self.table.client.put_item,
                TableName=self.table.name,
                Item=encoded.item,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **expression.condition_kwargs(),
            )
        except ConditionFailed as failed:
            if written_by(failed.old, request.token):
                return written.returned()
            self.job_item.forget_new_objects(job.job_id, new_keys)
            raise VersionConflict(request.job_id) from None
        self.job_item.written(job.job_id, encoded.item, state_keys)
        return written.returned()

    def claim(self, request: Claim) -> Job | None:
        """The job claimed for one phase run: one conditional update (None: not claimable)."""
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
        expression.remove("shareWait")  # a fair share's wait reason (cairn.features.owner_share) ends with the claim
        expression.set("updatedAt", request.now_ms)
        expression.set("expiresAt", request.expires_at)
        expression.set("writeToken", request.token)
        try:
            item = self.job_item.update(request.job_id, expression, now_ms=request.now_ms, token=request.token)
        except ConditionFailed as failed:
            if failed.old is not None and written_by(failed.old, request.token):
                return self.job_item.decode_and_remember(request.job_id, failed.old)
            return None
        return self.job_item.decode_and_remember(request.job_id, item)

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
        """A mid-phase checkpoint: one conditional update on the holder's claim."""
        written = transitions.save(request.seen, job_id, fence, request)
        expression = self._holder_write(fence, request.now_ms, written, request.expires_at)
        expires = ttl.side_expires_at(request.now_ms, written.job.ttl_seconds)
        saved, keys = self.table.codec.save_item(job_id, request.checkpoint, token=request.token, expires_at=expires)
        self.table.put_items([saved])
        expression.set("checkpoint", state_reference(request.checkpoint, schema.save_sk(request.token)))
        expression.set("nextPhase", request.checkpoint.next_phase)
        expression.set("leaseExpiresAt", request.lease_expires_at)
        job = self._fenced(job_id, expression, written, keys, state_keys=keys)
        return changed(job, checkpoint=request.checkpoint)

    def commit(self, job_id: str, fence: Fence, request: Commit) -> Job:
        """A phase run's outcome, the claim released: its history, then one update on the claim."""
        written = transitions.commit(request.seen, job_id, fence, request)
        expression = self._holder_write(fence, request.now_ms, written, request.expires_at)
        expression.remove("leaseOwner", "leaseExpiresAt", "claimSequence", "claimedAt")
        if request.kind not in ("retry", "sleep", "release"):
            expression.remove("notBefore")
        moved = transitions.moved_actions(request)
        if moved:  # the actions the claim saw are in the history item now; any made since stay pending
            expression.remove_elements("pendingLog", range(moved))
        if request.kind in ("next", "done", "sleep", "wait", "map"):  # the phase is left: its signal is consumed
            expression.remove("signal")
            expression.set("attempt", 1)
            if request.kind == "map":
                assert request.fan_out is not None
                expression.set("fanOut", request.fan_out.model_dump_json(by_alias=True))
            else:
                expression.remove("fanOut")
        keys: set[str] = set()
        if request.kind == "release":
            if request.share_wait is not None:  # past its owner's share: why it waits, and until when
                expression.set("shareWait", request.share_wait)
                expression.set("notBefore", request.not_before)
        elif request.kind in ("next", "sleep", "wait", "map"):
            assert request.checkpoint is not None  # its reference is set with the history it is kept in (_fenced)
            expression.set("nextPhase", request.checkpoint.next_phase)
            if request.kind == "sleep":
                expression.set("notBefore", request.not_before)
            if request.kind == "wait":
                set_status(expression, self.table.codec, job_id, JobStatus.WAITING)
                expression.set("waitingFor", request.waiting_for)
                expression.set("waitDeadline", request.wait_deadline)
                expression.set("timeoutPhase", request.timeout_phase)
        elif request.kind == "retry":
            expression.set_to("attempt", f"{expression.name('attempt')} + {expression.value('one', 1)}")
            expression.set("notBefore", request.not_before)
        else:
            status = request.status
            assert status is not None
            set_status(expression, self.table.codec, job_id, status)
            if request.kind == "done":
                if request.result is not None:
                    room = self.job_item.room(job_id, request.seen, expression)
                    result = self.table.codec.encode_result(job_id, request.result, token=request.token, budget=room)
                    keys = {result.s3_key} if result.s3_key else set()
                    expression.set("result", result.attribute)
                expression.remove("checkpoint", "nextPhase")
            else:
                expression.set("error", request.error)
                expression.set("errorType", request.record.failure.type if request.record.failure else None)
                expression.set("errorPhase", request.record.phase)
        job = self._fenced(job_id, expression, written, keys, entry=request.entry)
        if request.kind in ("next", "sleep", "wait", "map"):
            return changed(job, checkpoint=request.checkpoint)
        if request.kind == "done":
            return changed(job, result=request.result)
        return job

    def _holder_write(self, fence: Fence, now_ms: int, written: Written, expires_at: int) -> Expression:
        """A write by the claim holder: conditioned on its claim; advances the sequence; links its history."""
        expression = Expression()
        for attribute in ("leaseOwner", "claimSequence", "expiresAt"):
            expression.name(attribute)
        expression.require(_HOLDS_CLAIM)
        # A write sent again after a lost response is recognised by its token, never applied twice: the claim it
        # holds would let it through again (a save keeps the claim).
        expression.require(f"attribute_not_exists({expression.name('writeToken')}) OR #writeToken <> :writeToken")
        expression.value("worker", fence.worker)
        expression.value("claimSequence", fence.claim_sequence)
        expression.value("nowSeconds", now_ms // 1000)
        expression.set_to("sequence", f"{expression.name('sequence')} + {expression.value('one', 1)}")
        expression.set("usage", json.dumps(written.job.usage) if written.job.usage else None)
        expression.set(schema.COST_ATTRIBUTE, stored_cost(written.job.usage))  # None (no prices): left out
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
        entry: Checkpoint | None = None,
        state_keys: set[str] | None = None,
    ) -> Job:
        """Write the holder's history (with the state of the ``entry`` checkpoint it sets), then its update.

        The job item's checkpoint names the item the history write kept the entry's state in (the history
        item, or an ``ENTRY#`` item beside it: :meth:`.entry_codec.EntryCodec.history_write`). A refused
        update means the claim was lost. ``state_keys``: the S3 objects of a state the write set elsewhere
        (a save's item).
        """
        token = written.job.write_token
        assert token is not None
        if written.history is not None:
            expires = ttl.side_expires_at(written.job.updated_at, written.job.ttl_seconds)
            history = self.table.codec.history_write(written.job, written.history, expires_at=expires, checkpoint=entry)
            self.table.put_items(history.items)
            new_keys = new_keys | history.keys
            if entry is not None:
                assert history.holder is not None
                reference = state_reference(entry, history.holder)
                inline = inline_checkpoint(reference, history.items)
                if inline is not None and self.job_item.fits_one_write_unit(job_id, expression, {"checkpoint": inline}):
                    reference = inline  # small: it travels with the claim, and the next claim reads nothing more
                expression.set("checkpoint", reference)
                state_keys = history.keys
        try:
            item = self.job_item.update(job_id, expression, now_ms=written.job.updated_at, token=token)
        except ConditionFailed as failed:
            if failed.old is not None and written_by(failed.old, token):
                item = failed.old
            else:
                self.job_item.forget_new_objects(job_id, new_keys)
                reason = (
                    "the job is gone or expired"
                    if failed.old is None
                    else "another worker or a retry took the job over"
                )
                raise ClaimLostError(job_id, reason) from None
        job = self.table.codec.decode_job(item, with_payloads=False)
        self.job_item.written(job_id, item, state_keys)
        return Written(job, written.history).returned()
