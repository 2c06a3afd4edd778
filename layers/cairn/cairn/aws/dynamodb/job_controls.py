"""The job writes made from outside a phase run: a pause, a cancel, a signal's delivery, a wait's expiry.

Each is one conditional ``UpdateItem`` of the job item; when its condition fails, the pure rule of
:mod:`cairn.core.transitions` applied to the stored job says why (not found, already so, refused).
"""

from __future__ import annotations

from collections.abc import Callable

from ...core import transitions
from ...core.models import Job, JobStatus, LogEntry, Signal
from ...core.transitions import SignalDelivery, WaitExpiry, Written, new_token
from .expressions import Expression
from .job_item import JobItem, set_status
from .table import ConditionFailed, Table, written_by


def append_action(expression: Expression, entry: LogEntry) -> None:
    """Add an operator action to the end of the job item's ``pendingLog`` (a list of JSON texts) in this write."""
    pending = expression.name("pendingLog")
    empty, added = expression.value("noActions", []), expression.value("action", [entry.model_dump_json(by_alias=True)])
    expression.set_to("pendingLog", f"list_append(if_not_exists({pending}, {empty}), {added})")


class _Refused(Exception):
    """A conditional write whose condition no longer held, with nothing more to say about it."""


class JobControls:
    """Pause, cancel, signal and wait expiry of one owner's jobs."""

    def __init__(self, table: Table, job_item: JobItem) -> None:
        self.table = table
        self.job_item = job_item

    def pause(self, job_id: str, *, by: str | None = None) -> Job:
        """A running job paused, the pause added to its pending log, or why not (the pure rule)."""
        now = self.table.clock()
        expression = Expression()
        expression.require("attribute_exists(#pk) AND #expiresAt > :nowSeconds AND #status = :running")
        for attribute in ("pk", "ttlSeconds"):
            expression.name(attribute)
        expression.value("running", JobStatus.RUNNING.value)
        set_status(expression, self.table.codec, job_id, JobStatus.PAUSED)
        append_action(expression, transitions.action_entry("Job paused", by, now))
        return self._update(
            job_id, now, expression, outcome=lambda stored, token: transitions.pause(stored, job_id, now, token, by)
        )

    def cancel(self, job_id: str, *, by: str | None = None) -> Job:
        """The job cancelled and its claim fenced, the cancel added to its pending log, or why not (the pure rule)."""
        now = self.table.clock()
        expression = Expression()
        expression.require(
            "attribute_exists(#pk) AND #expiresAt > :nowSeconds AND #status <> :cancelled AND #status <> :complete"
        )
        expression.name("pk")
        expression.value("cancelled", JobStatus.CANCELLED.value)
        expression.value("complete", JobStatus.COMPLETE.value)
        set_status(expression, self.table.codec, job_id, JobStatus.CANCELLED)
        expression.remove("leaseOwner", "leaseExpiresAt", "claimSequence")  # claimedAt stays: the run it cut short
        append_action(expression, transitions.action_entry("Job cancelled", by, now))
        return self._update(
            job_id, now, expression, outcome=lambda stored, token: transitions.cancel(stored, job_id, now, token, by)
        )

    def deliver_signal(self, job_id: str, request: SignalDelivery) -> Job:
        """The waiting job running on with the signal, or why not (the pure rule)."""
        expression = Expression()
        expression.require(
            "attribute_exists(#pk) AND #expiresAt > :nowSeconds AND #status = :waiting AND #waitingFor = :name"
        )
        for attribute in ("pk", "ttlSeconds"):
            expression.name(attribute)
        expression.value("waiting", JobStatus.WAITING.value)
        expression.value("name", request.name)
        set_status(expression, self.table.codec, job_id, JobStatus.RUNNING)
        expression.remove("waitingFor", "waitDeadline", "timeoutPhase")
        signal = Signal(name=request.name, payload=request.payload, delivered_at=request.now_ms)
        expression.set("signal", signal.model_dump_json(by_alias=True))
        append_action(expression, transitions.signal_entry(request))
        return self._update(
            job_id,
            request.now_ms,
            expression,
            outcome=lambda stored, token: transitions.deliver_signal(stored, job_id, request),
            token=request.token,
        )

    def expire_wait(self, job_id: str, request: WaitExpiry) -> Job | None:
        """A wait past its deadline ended (None: no such wait any more)."""
        response = self.table.call(
            self.table.client.get_item, TableName=self.table.name, Key=self.table.key(job_id), ConsistentRead=True
        )
        item = response.get("Item")
        stored = self.table.codec.decode_job(item, with_payloads=False) if item else None
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
        set_status(expression, self.table.codec, job_id, written.job.status)
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
            return self._update(job_id, request.now_ms, expression, outcome=None, token=request.token)
        except _Refused:
            return None

    def _update(
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
            item = self.job_item.update(job_id, expression, now_ms=now, token=token)
        except ConditionFailed as failed:
            if failed.old is not None and written_by(failed.old, token):
                return self.job_item.decode_and_remember(job_id, failed.old)
            if outcome is None:
                raise _Refused() from None
            stored = self.job_item.decode_and_remember(job_id, failed.old) if failed.old is not None else None
            return outcome(stored, token).returned()  # the pure rule says why: not found, already so, or refused
        return self.job_item.decode_and_remember(job_id, item)
