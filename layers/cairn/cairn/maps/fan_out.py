"""Map: one run of an item phase per item, each with its own small checkpoint under the job, then one phase.

A phase that returns ``Map(items, phase, then, max_concurrency=N)`` writes one record per item (its
input, status, attempt, claim and result) and commits the job's checkpoint at ``then`` with the
map on the job (``fan_out``). Items are one checkpoint stream with the job: they are not jobs.

- Each item advance claims its record (a conditional write on the record's version); a duplicate
  delivery finds it held or done and does nothing. A claim that finds the last claim expired
  unfinished counts a crash as an attempt; the item phase's ``RetryPolicy`` alone decides retries.
- Items run in slots: the first N are scheduled at once, and each finished item schedules the one
  N places after it. Whatever is lost (a crash between a finish and its schedule) is scheduled
  again when the job's next phase is advanced (a resume, the sweep) before the items are done.
- ``then`` runs once every item is done, with their results in item order as ``ctx.results``, and
  the items' usage and log entries added to the job's, once per map (a retry or a rerun of ``then``
  gets the results again, not the usage and log).
- An item's transitions (claim, finish, hand-off) each read and write only its own record, so their
  cost does not grow with the map's size. The map has a record of its own (:class:`MapRecord`): the
  write that finishes an item counts it there in the same atomic step, so "is the map finished?" is
  one small read, and of the finishes that see the count complete, the one that takes the record's
  hand-off schedules ``then``. ``then`` reads every record once, for the results.
- An item that fails for good puts the job in ``error``; a resume runs the unfinished items again
  (the finished ones keep their results).
- The records stay after ``then``: a rerun from ``then`` gets the same results again; a rerun from
  the item phase (which runs only as the map's items) is refused.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..core.clock import Clock
from ..core.context import JournalBuffer, PhaseContext
from ..core.engine.writes import resolve_write
from ..core.errors import InvalidInputError, StorageError
from ..core.failures import describe, failure_of
from ..core.models import Checkpoint, FanOut, MapItem, MapMark, MapRecord
from ..core.outcomes import Done, Fail, Map
from ..core.pipeline import Pipeline, to_json
from ..core.redaction import for_run
from ..core.scheduler_port import ItemScheduler
from ..core.settings import stack_max_map_concurrency
from ..core.steps import book_for_item
from ..core.storage_port import Storage
from ..core.transitions import merge_usage, new_token

logger = logging.getLogger("cairn")

MAX_ITEMS = 10_000
"""The most items one map may have."""

MAX_CONCURRENCY = 1_000
_WRITE_ATTEMPTS = 5


def validate_map(outcome: Map, pipeline: Pipeline[Any]) -> list[Any]:
    """The map's items as JSON values; InvalidInputError for a map that cannot run."""
    if isinstance(outcome.items, str | bytes) or not hasattr(outcome.items, "__iter__"):
        raise InvalidInputError(f"Map(items) must be a list, got {type(outcome.items).__name__}")
    items = [to_json(item) for item in outcome.items]
    if not items:
        raise InvalidInputError("Map(items) is empty: return Next to go on without a map")
    if len(items) > MAX_ITEMS:
        raise InvalidInputError(f"Map(items) has {len(items)} items; at most {MAX_ITEMS}")
    for name, what in ((outcome.phase, "phase"), (outcome.then, "then")):
        if not isinstance(name, str) or not pipeline.has_phase(name):
            raise InvalidInputError(f'Map({what}="{name}") names no phase of the pipeline')
    concurrency = outcome.max_concurrency
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not 1 <= concurrency <= MAX_CONCURRENCY:
        raise InvalidInputError(f"Map(max_concurrency) must be a whole number from 1 to {MAX_CONCURRENCY}")
    return items


def map_concurrency(requested: int, environ: Mapping[str, str] | None = None) -> int:
    """How many items of a map run at once: what the map asked for, lowered to the stack's
    ``CAIRN_MAX_MAP_CONCURRENCY`` when that is set (a ConfigurationError when it is not a positive number)."""
    ceiling = stack_max_map_concurrency(environ)
    return requested if ceiling is None else min(requested, ceiling)


# -- the item record's rules (pure) ------------------------------------------------------------


def claim_item(
    item: MapItem, *, worker: str, now_ms: int, lease_expires_at: int, max_attempts: int, token: str
) -> MapItem | None:
    """The claimed record, or None when the item is done, held, or waiting out a backoff.

    A claim that finds the last one expired unfinished counts it as a crashed attempt; past
    ``max_attempts`` the record comes back ``failed`` (unclaimed). A failed item (its job was
    resumed) starts again at attempt 1.
    """
    if item.status == "done":
        return None
    attempt = item.attempt
    if item.status == "failed":
        attempt = 1
    else:
        if item.lease_owner is not None and (item.lease_expires_at or 0) > now_ms:
            return None
        if item.not_before is not None and item.not_before > now_ms:
            return None
        if item.lease_owner is not None:
            attempt += 1  # the last claim ran out without a finish: its worker died
    common: dict[str, Any] = {"version": item.version + 1, "write_token": token, "updated_at": now_ms}
    if attempt > max_attempts:
        error = f"Item {item.index} crashed on each of its {max_attempts} attempts"
        failed: dict[str, Any] = {"status": "failed", "error": error, "lease_owner": None, "lease_expires_at": None}
        return item.model_copy(update={**common, **failed})
    update: dict[str, Any] = {
        "status": "pending",
        "attempt": attempt,
        "error": None,
        "lease_owner": worker,
        "lease_expires_at": lease_expires_at,
        "not_before": None,
        "claimed_at": now_ms,
    }
    return item.model_copy(update={**common, **update})


class ItemClaimLost(Exception):
    """The item's claim was taken over (its lease ran out and another worker claimed it)."""


def finish_item(item: MapItem, *, worker: str, now_ms: int, token: str, **changes: Any) -> MapItem:
    """The record after its claim holder's finish (done, a retry, failed); ItemClaimLost when not the holder."""
    if item.lease_owner != worker:
        raise ItemClaimLost(f"item {item.index} is no longer held by {worker}")
    update = {"lease_owner": None, "lease_expires_at": None, "version": item.version + 1, "write_token": token}
    return item.model_copy(update={**changes, **update, "updated_at": now_ms})


def runnable(items: list[MapItem], fan_out: FanOut, now_ms: int) -> list[MapItem]:
    """The unfinished items to schedule now, in order, leaving room for the ones still held."""
    held = [item for item in items if item.lease_owner is not None and (item.lease_expires_at or 0) > now_ms]
    room = fan_out.max_concurrency - len(held)
    waiting = [item for item in items if item.status != "done" and item not in held]
    return waiting[: max(0, room)]


# -- storage -------------------------------------------------------------------------------------


class ItemStore:
    """The item records of one map of one job, written with a check of the version each write read.

    An item's own transitions read and write only its record (and, once it is done, the map's
    record): their cost does not grow with the map's size. Only ``then`` and a recovery read every record.
    """

    def __init__(self, storage: Storage, job_id: str, fan_out: str, *, expires_at: int) -> None:
        self.storage = storage
        self.job_id = job_id
        self.fan_out = fan_out
        self.expires_at = expires_at

    def all(self) -> list[MapItem]:
        """Every record, in item order."""
        return self.storage.get_items(self.job_id, self.fan_out)

    def get(self, index: int) -> MapItem | None:
        """One record (None when it was never written): one read."""
        return self.storage.get_item(self.job_id, self.fan_out, index)

    def record(self) -> MapRecord | None:
        """The map's own record (its count of finished items); None for a map started before maps had one."""
        return self.storage.get_map(self.job_id, self.fan_out)

    def create(self, items: list[MapItem], record: MapRecord) -> None:
        """Write the records of a new map, then the map's own; one already written (sent again) is left as it is."""
        for item in items:
            self._write(item, expected=None)
        resolve_write(lambda: self.storage.create_map(self.job_id, record, expires_at=self.expires_at), pause=_pause)

    def change(
        self, index: int, rule: Callable[[MapItem], MapItem | None], *, known: MapItem | None = None
    ) -> MapItem | None:
        """Apply ``rule`` to the stored record and write the result, conditioned on the version read.

        ``known`` is the record as this caller last wrote it: the first attempt starts from it without a read
        (the write's condition tells whether it still stands). A change that takes the record to ``done`` is
        counted on the map's record in the same write.
        """
        for attempt in range(_WRITE_ATTEMPTS):
            current = known if attempt == 0 and known is not None else self.get(index)
            if current is None:
                return None
            changed = rule(current)
            if changed is None:
                return None
            finishes = changed.status == "done" and current.status != "done"
            if self._write(changed, expected=current.version, finishes=finishes):
                return changed
        raise StorageError(f"Item {index} of job {self.job_id} kept changing; try again", retryable=True)

    def mark(self, mark: MapMark) -> bool:
        """Take the map's mark (True: this caller holds it: the hand-off to schedule, the usage joined).

        A lost response is sent again with the same token.
        """
        token = new_token()
        return resolve_write(lambda: self.storage.mark_map(self.job_id, self.fan_out, mark, token), pause=_pause)

    def _write(self, item: MapItem, *, expected: int | None, finishes: bool = False) -> bool:
        """One conditional write, sent again while its outcome is unknown; one that landed is known by its token."""
        for attempt in range(1, _WRITE_ATTEMPTS + 1):
            try:
                return self.storage.write_item(
                    self.job_id,
                    self.fan_out,
                    item,
                    expected_version=expected,
                    expires_at=self.expires_at,
                    finishes=finishes,
                )
            except StorageError as exc:
                if not exc.retryable:
                    raise
                stored = self.get(item.index)
                if stored is not None and stored.write_token == item.write_token:
                    return True  # it landed; only its response was lost
                if attempt == _WRITE_ATTEMPTS:
                    raise
                logger.warning(
                    "Item %d of job %s: write outcome unknown (%s); sending it again", item.index, self.job_id, exc
                )
                _pause(attempt)
        raise AssertionError("unreachable")


def _pause(attempt: int) -> None:
    """A short, jittered pause before sending a write again (a transaction that met another on the map's record)."""
    time.sleep(random.uniform(0, 0.01 * 2**attempt))


def new_items(values: list[Any], now_ms: int) -> list[MapItem]:
    """The records of a new map's items."""
    return [MapItem(index=index, input=value, version=1, updated_at=now_ms) for index, value in enumerate(values)]


def schedule_items(scheduler: ItemScheduler, job_id: str, fan_out: FanOut, items: list[MapItem], now_ms: int) -> None:
    """Ask for an advance of each of ``items`` (after what is left of its backoff)."""
    for item in items:
        delay = max(0.0, math.ceil((item.not_before or 0) - now_ms) / 1000 + (0.001 if item.not_before else 0.0))
        scheduler.schedule_item(job_id, phase=fan_out.phase, fan_out=fan_out.id, item=item.index, delay=delay)


# -- one item advance ----------------------------------------------------------------------------


class ItemRun:
    """One advance of one item: claim its record, run the item phase, write how it ended."""

    def __init__(
        self,
        *,
        pipeline: Pipeline[Any],
        store: ItemStore,
        fan_out: FanOut,
        next_phase: str,
        scheduler: ItemScheduler,
        clock: Clock,
        fail_job: Callable[[str], None],
        metered: Callable[[int, int, int], Mapping[str, float]] = lambda memory, started, ended: {},
    ) -> None:
        """``metered``: what an item's run adds to its usage, from its memory, start and end (the run's features')."""
        self.pipeline = pipeline
        self.store = store
        self.fan_out = fan_out
        self.next_phase = next_phase
        self.scheduler = scheduler
        self.clock = clock
        self.fail_job = fail_job
        self.metered = metered

    def run(self, index: int, worker: str) -> MapItem | None:
        """Advance item ``index``: None when there was nothing to run (done, held, not due, unknown)."""
        phase = self.pipeline.get_phase(self.fan_out.phase)
        now = self.clock()
        claimed = self.store.change(
            index,
            lambda item: claim_item(
                item,
                worker=worker,
                now_ms=now,
                lease_expires_at=now + int(phase.lease_seconds * 1000),
                max_attempts=phase.retry.max_attempts,
                token=new_token(),
            ),
        )
        if claimed is None:
            self._nothing_to_run(index, now)
            return None
        if claimed.status == "failed":
            self.fail_job(self._failure(claimed))
            return claimed
        journal = JournalBuffer(for_run(self.pipeline.redaction, claimed.input))
        ctx: PhaseContext[Any] = PhaseContext(
            job_id=self.store.job_id,
            phase=phase.name,
            state=claimed.input,
            checkpoint=Checkpoint(next_phase=phase.name, state=claimed.input, created_at=now),
            attempt=claimed.attempt,
            clock=self.clock,
            saver=_no_saves,
            journal=journal,
            item=index,
            steps=book_for_item(self.store.storage, self.pipeline.name, self.store.job_id, self.fan_out.id, index),
        )
        try:
            outcome = phase.run(ctx)
        except Exception as exc:  # the item failed; BaseException (process death) passes through
            return self._failed(claimed, worker, journal, exc, retry=phase.retry.should_retry(exc, claimed.attempt))
        if isinstance(outcome, Done):
            try:
                result = to_json(outcome.result)
            except InvalidInputError as exc:
                return self._failed(claimed, worker, journal, exc, retry=False)
            return self._done(claimed, worker, journal, result)
        error: Exception = RuntimeError(
            outcome.error if isinstance(outcome, Fail) else f"an item phase returns Done or Fail, not {outcome!r}"
        )
        return self._failed(claimed, worker, journal, error, retry=False)

    def _nothing_to_run(self, index: int, now_ms: int) -> None:
        """An advance that found nothing to run.

        One that came before the item's backoff ended (clock skew, a rounded delay) is sent again. One
        for a done item (a duplicate, or the same message again after its worker died) hands the map off
        to ``then`` if it is finished and no one has: the death between the last finish and its hand-off.
        """
        stored = self.store.get(index)
        if stored is not None and stored.status == "done":
            self._hand_off_if_finished()
            return
        early = stored is not None and stored.status == "pending" and stored.lease_owner is None
        if early and stored is not None and stored.not_before is not None and stored.not_before > now_ms:
            schedule_items(self.scheduler, self.store.job_id, self.fan_out, [stored], now_ms)

    def _done(self, claimed: MapItem, worker: str, journal: JournalBuffer, result: Any) -> MapItem | None:
        kept = journal.peek()
        finished = self._finish(claimed, worker, kept.usage, status="done", result=result, log=list(kept.log))
        if finished is None:
            return None
        successor = claimed.index + self.fan_out.max_concurrency
        if successor < self.fan_out.count:  # its record is not read: one done already finds itself done, and hands off
            self.scheduler.schedule_item(
                self.store.job_id, phase=self.fan_out.phase, fan_out=self.fan_out.id, item=successor
            )
        else:  # the slot ended: was this the map's last item?
            self._hand_off_if_finished()
        return finished

    def _hand_off_if_finished(self) -> None:
        """Schedule ``then`` once every item is done: read from the map's count, and only by the one finish
        that takes the hand-off (two last items finishing at once: one of them). A hand-off lost with its
        worker is made by the job's next advance (the sweep, a resume), which runs ``then`` itself."""
        record = self.store.record()
        if record is None:  # a map started before maps kept a count: read every record, as then
            if all(item.status == "done" for item in self.store.all()):
                self.scheduler.schedule_advance(self.store.job_id, phase=self.next_phase)
            return
        if record.done >= self.fan_out.count and record.handed_off is None and self.store.mark("handed_off"):
            self.scheduler.schedule_advance(self.store.job_id, phase=self.next_phase)

    def _failed(
        self, claimed: MapItem, worker: str, journal: JournalBuffer, exc: Exception, *, retry: bool
    ) -> MapItem | None:
        phase = self.pipeline.get_phase(self.fan_out.phase)
        message = journal.redaction.text(describe(exc))
        failure = journal.redaction.failure(failure_of(exc))
        logger.error("Job %s: item %d (%s) failed: %s", self.store.job_id, claimed.index, phase.name, message)
        kept = journal.peek()
        if retry:
            delay = phase.retry.delay_for(claimed.attempt)
            finished = self._finish(
                claimed,
                worker,
                kept.usage,
                attempt=claimed.attempt + 1,
                not_before=self.clock() + math.ceil(delay * 1000),
                error=message,
                failure=failure,
            )
            if finished is not None:
                schedule_items(self.scheduler, self.store.job_id, self.fan_out, [finished], self.clock())
            return finished
        finished = self._finish(claimed, worker, kept.usage, status="failed", error=message, failure=failure)
        if finished is not None:
            self.fail_job(self._failure(finished))
        return finished

    def _finish(self, claimed: MapItem, worker: str, usage: Mapping[str, float], **changes: Any) -> MapItem | None:
        """Write how the item's run ended (adding its ``usage``); None when its claim was taken over."""
        now = self.clock()
        token = new_token()
        memory = self.pipeline.get_phase(self.fan_out.phase).function.memory  # the item's invocation, metered
        usage = merge_usage(usage, self.metered(memory, claimed.claimed_at or now, now))

        def rule(item: MapItem) -> MapItem | None:
            if item.write_token == token:
                return None  # already written (a lost response)
            try:
                summed = merge_usage(item.usage, usage)
                return finish_item(item, worker=worker, now_ms=now, token=token, usage=summed, **changes)
            except ItemClaimLost:
                return None

        finished = self.store.change(claimed.index, rule, known=claimed)  # as the claim wrote it: no read
        if finished is None:
            stored = self.store.get(claimed.index)
            if stored is not None and stored.write_token == token:
                return stored
            logger.warning("Job %s: item %d was taken over; its outcome is dropped", self.store.job_id, claimed.index)
        return finished

    def _failure(self, item: MapItem) -> str:
        return f'Map item {item.index} of {self.fan_out.count} (phase "{self.fan_out.phase}") failed: {item.error}'


def _no_saves(state: Any) -> None:
    raise InvalidInputError("An item phase cannot save_state: it returns Done(result) when its item is done")


def collected(items: list[MapItem]) -> tuple[list[Any], dict[str, float], list[Any]]:
    """The results in item order, the summed usage, and the log entries of finished items."""
    usage: dict[str, float] = {}
    for item in items:
        for key, value in item.usage.items():
            usage[key] = usage.get(key, 0) + value
    return [item.result for item in items], usage, [entry for item in items for entry in item.log]
