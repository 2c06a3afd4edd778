"""Runs a bulk operation in the scheduler function, a chunk an invocation, handed on through the delay queue.

``POST /bulk`` keeps the bulk (:mod:`cairn.core.bulk_port`) and sends the first :class:`BulkMessage` to the delay
queue; the scheduler function takes it (:meth:`cairn.aws.scheduler_handler.Dispatcher.delayed`) and acts on the
selected jobs in order until its time runs short, then sends the next message, from where it stopped. The chain
is the one delayed advances already take (queue, scheduler, queue), which runs with ``RecursiveLoop: Allow``, so
Lambda does not stop it at its 17th link; a chunk acts on jobs for up to the function's timeout less
:data:`RESERVE_MS`, hundreds of jobs a link.

Each job is acted on at most once per bulk (:func:`act_once`): its outcome is claimed first (conditionally,
with a lease longer than the function's timeout), and the action is fenced by the job's sequence at the first
claim. A worker that dies mid-chunk leaves its message to come back (the queue's visibility timeout, longer
than the lease): the job it was on is claimed again, and acted on only if the job has not moved since.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import Field

from ..app import Cairn
from ..core.bulk_port import OUTCOMES, BulkOperations, BulkRecord, Held, JobClaim, JobOutcome, Selected
from ..core.errors import (
    CairnError,
    ConfigurationError,
    InvalidInputError,
    JobNotFoundError,
    SchedulingError,
    StorageError,
)
from ..core.models import Job, JobStatus, RetryMode, WireModel
from ..core.registry import PipelineRegistry
from ..core.storage_port import Route, Storage
from ..storage.delegating import DelegatingStorage
from . import clients
from .observability import logger
from .runtime import Runtime

LEASE_MS = 120_000
"""How long a claim on a job keeps other attempts off it: over the scheduler's 60 s timeout, under the delay
queue's 360 s visibility timeout (a dead worker's message comes back to a lease that has run out)."""
RESERVE_MS = 15_000
"""Time a chunk leaves itself to note its progress and send the next message."""
BULK_TTL_SECONDS = 7 * 86_400
"""How long a bulk and its outcomes are kept."""


class BulkMessage(WireModel):
    """Go on with bulk ``bulk_id`` of ``owner`` at job ``offset`` of page ``page``."""

    bulk_id: str = Field(max_length=64)
    owner: str = Field(max_length=2048)
    page: int = Field(default=0, ge=0)
    offset: int = Field(default=0, ge=0)


def is_bulk_message(body: Any) -> bool:
    """Whether a delay queue message's body is a bulk's (not an advance)."""
    return isinstance(body, dict) and "bulkId" in body


def send_bulk(runtime: Runtime, message: BulkMessage) -> None:
    """Queue ``message`` for the scheduler function (now); SchedulingError when the queue cannot take it."""
    queue = runtime.settings.delay_queue_url
    if not queue:
        raise ConfigurationError("A bulk operation needs the delay queue (CAIRN_DELAY_QUEUE_URL)")
    sqs = runtime.sqs or clients.default_sqs_client()
    try:
        sqs.send_message(QueueUrl=queue, MessageBody=json.dumps(message.to_wire()))
    except (ClientError, BotoCoreError) as exc:
        raise SchedulingError(f"Cannot queue bulk {message.bulk_id}: {exc}", retryable=True) from exc


class _JobMoved(InvalidInputError):
    """The job is past the sequence the bulk's claim fenced it at."""


class FencedStorage(DelegatingStorage):
    """A store whose ``get_current_job`` refuses a job past ``sequence``: a retry reads the job there and writes
    conditioned on what it read, so it lands only on the job as the bulk's first claim saw it."""

    def __init__(self, inner: Storage, sequence: int) -> None:
        super().__init__(inner)
        self.sequence = sequence

    def get_current_job(self, job_id: str, *, payloads: bool = True) -> Job | None:
        job = self.inner.get_current_job(job_id, payloads=payloads)
        if job is not None and job.sequence != self.sequence:
            raise _JobMoved(f"the job changed since the bulk selected it (sequence {self.sequence} -> {job.sequence})")
        return job


def actor(record: BulkRecord) -> str:
    """Who a bulk's audit entries name: the caller, and the bulk."""
    return f"{record.by} (bulk {record.bulk_id})"


class BulkRunner:
    """Acts on a bulk's jobs as its owner, in this deployment."""

    def __init__(self, runtime: Runtime, pipelines: PipelineRegistry, owner: str) -> None:
        self.runtime = runtime
        self.pipelines = pipelines
        self.storage = runtime.storage(owner)
        self.owner = owner
        operations = self.storage.bulk_operations()
        if operations is None:  # pragma: no cover - the DynamoDB store keeps them
            raise ConfigurationError("This store keeps no bulk operations")
        self.operations: BulkOperations = operations

    def run_chunk(self, message: BulkMessage, remaining_ms: Callable[[], int]) -> BulkMessage | None:
        """Act on the bulk's jobs from ``message``'s place while ``remaining_ms()`` allows; the message to go on
        with, or None when the bulk is done (or gone)."""
        record = self.operations.get_bulk(message.bulk_id)
        if record is None:
            logger.warning("A bulk message names no bulk; dropped", extra={"bulk_id": message.bulk_id})
            return None
        page, offset = message.page, message.offset
        if record.pages == 0:
            self.operations.note_progress(record, 0, {}, finished_at=self.runtime.clock())
            return None
        while page < record.pages:
            selected = self.operations.selected_page(record, page)
            for index in range(offset, len(selected)):
                if remaining_ms() < RESERVE_MS:
                    self._note(record, page, last=False)
                    return message.model_copy(update={"page": page, "offset": index})
                self.act_once(record, page, index, selected[index])
            self._note(record, page, last=page == record.pages - 1)
            page, offset = page + 1, 0
        return None

    def _note(self, record: BulkRecord, page: int, *, last: bool) -> None:
        counts = Counter(outcome.outcome for outcome in self.operations.outcomes(record, page).values())
        finished = self.runtime.clock() if last else None
        self.operations.note_progress(
            record, page, {name: counts.get(name, 0) for name in OUTCOMES}, finished_at=finished
        )

    def act_once(self, record: BulkRecord, page: int, index: int, selected: Selected) -> JobOutcome | None:
        """Claim the job, act on it unless an earlier attempt did, record its outcome; None when it already has
        one or another live attempt holds it."""
        route = self.storage.get_route(selected.job_id)
        attempt = uuid.uuid4().hex
        claim = self.operations.claim_job(
            record,
            page,
            index,
            selected.job_id,
            sequence=route.sequence if route is not None else 0,
            attempt=attempt,
            lease_ms=LEASE_MS,
        )
        if claim is None or isinstance(claim, Held):
            return None
        outcome = self._outcome(record, selected, claim, route)
        expires = self.runtime.clock() // 1000 + BULK_TTL_SECONDS
        self.operations.record_outcome(record, page, index, outcome, attempt=attempt, expires_at=expires)
        return outcome

    def _outcome(self, record: BulkRecord, selected: Selected, claim: JobClaim, route: Route | None) -> JobOutcome:
        """What acting on the job (``route``: as read just before the claim) gives."""
        job_id, now = selected.job_id, self.runtime.clock()
        if route is None:
            return JobOutcome(job_id, "refused", "no such job (or it expired)", now)
        if route.sequence != claim.sequence:
            if not claim.first and self._acted_before(record, job_id):
                return JobOutcome(job_id, "done", "acted on by an earlier attempt of this bulk", now)
            return JobOutcome(job_id, "refused", "the job changed since the bulk selected it", now)
        if selected.status is not None and route.status.value != selected.status:
            return JobOutcome(job_id, "refused", f"the job is {route.status.value} now, not {selected.status}", now)
        if record.action == "cancel" and route.status == JobStatus.CANCELLED:
            return JobOutcome(job_id, "refused", "the job is already cancelled", now)
        try:
            job = self._act(record, job_id, route.pipeline, claim.sequence)
        except SchedulingError as exc:
            if not exc.retryable:
                return JobOutcome(job_id, "errored", str(exc), now)
            return JobOutcome(job_id, "done", "acted on; the sweep starts it", now)
        except (InvalidInputError, JobNotFoundError) as exc:
            return JobOutcome(job_id, "refused", str(exc), now)
        except StorageError:
            raise  # the chunk fails and its message comes back; the claim's fence keeps the job safe
        except CairnError as exc:
            logger.warning("A bulk could not act on a job", extra={"job_id": job_id, "error": str(exc)})
            return JobOutcome(job_id, "errored", str(exc), now)
        return JobOutcome(job_id, "done", job.status.value, now)

    def _act(self, record: BulkRecord, job_id: str, pipeline_name: str, sequence: int) -> Job:
        by = actor(record)
        pipeline = self.pipelines.get(pipeline_name)
        fenced = FencedStorage(self.storage, sequence)
        jobs = Cairn(pipeline, storage=fenced, scheduler=self.runtime.start_scheduler(self.owner, pipeline))
        if record.action == "cancel":
            return jobs.cancel(job_id, by=by)
        mode = RetryMode.FULL if record.action == "restart" else RetryMode.RESUME
        return jobs.retry(job_id, mode=mode, by=by)

    def _acted_before(self, record: BulkRecord, job_id: str) -> bool:
        """Whether the job's newest log entries name this bulk (its action landed; the attempt died after)."""
        view = self.storage.get_job_view(job_id, history=5)
        name = actor(record)
        return view is not None and any(entry.actor == name for entry in view.job.log)
