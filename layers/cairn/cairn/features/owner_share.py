"""A fair share per owner: at most N phases of one owner's jobs run at once.

Jobs belong to owners (a store is bound to one: :attr:`OwnerShares.share_owner`). Without a limit a
burst of one owner's jobs can take every phase function's concurrency; with one, a claimed run takes
one of its owner's *slots* before its phase runs, and gives it back once it has committed. The store
keeps the shares through the storage port's owners' shares capability (:mod:`cairn.core.share_port`,
:meth:`cairn.Storage.owner_shares`); a wrapper carries its inner store's.

The mechanism, built for crashes, duplicates and races:

- A slot is a lease in the store, one per job (keyed by the job id, naming the claim that holds it:
  ``<worker>#<claim sequence>``), and it expires with the claim's lease: a worker that dies holding
  one frees it when its claim would have expired, with nothing to clean up.
- Taking a slot is one atomic conditional write: it lands only while fewer than the limit of the
  owner's *other* jobs hold a live slot. A job holds at most one slot (only one claim of a job is ever
  live), so a resent take, or a takeover by a crash report, replaces the job's own slot, never adds one.
- A run that finds the share taken does not run its phase (a *look*): it gives its claim back (a
  ``release`` commit, adding no history) with a *wait reason* on the job (``Job.share_wait``, e.g.
  "waiting for its owner's share: 2 of 2 phases running") and ``not_before`` set to when it looks again.
  Then the store notes the job in its owner's share (one atomic write with the slots: if a slot was given
  back meanwhile, the job looks again at once instead), and the scheduler is asked to advance it after
  the delay: the fallback should the wake-up below be lost. Lost too, that message is made up by the sweep,
  which revives a running job left alone (``not_before`` passed). A duplicate of the message finds the
  sequence moved and does nothing, as any stale advance does.
- A run that gives its slot back takes the oldest noted job of its owner off the share in the same write
  and wakes it at once: an advance for the sequence the job was noted at, through the scheduler port
  (:class:`~cairn.core.scheduler_port.WakeScheduler` for a job of another pipeline; a plain scheduler wakes
  only the jobs of its own pipeline). So a freed slot is taken as soon as a message can carry it.
- A look costs what it costs (:mod:`cairn.features.metering`): its invocation, the claim and the release, the
  note; the job's cost counts it, its budget never does (waiting is not running).
- Map items do not count: a map's own ``max_concurrency`` bounds them; the phase that starts the map
  and the one that takes its results (``then``) each count as a phase run.

The share is on when there is a default limit: the store's own (:attr:`OwnerShares.owner_concurrency`),
else the stack's ``CAIRN_OWNER_CONCURRENCY`` (the template's ``OwnerConcurrency``); 0 or unset: off, and
no run reads or writes a share. While it is on, an owner's own limit kept in the store
(:meth:`OwnerShares.set_owner_limit`; ``cairn ops owner-limit OWNER N``) replaces the default for that
owner, higher or lower (0: no limit for it); the take reads it in the same atomic step. A share set for a
store that keeps none, or a setting that is not a limit, is refused at start-up (:func:`check_share`).
"""

from __future__ import annotations

import contextlib
import logging
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import CairnError, ConfigurationError, StorageError
from ..core.models import Job, JobStatus
from ..core.pipeline import Pipeline
from ..core.run_features import Run, RunHooks
from ..core.scheduler_port import WakeScheduler
from ..core.settings import MAX_OWNER_LIMIT, OWNER_CONCURRENCY, stack_owner_concurrency
from ..core.share_port import (
    DEFAULT_SHARE_WAIT_SECONDS,
    UNLIMITED,
    NoteOutcome,
    OwnerShares,
    ShareTaken,
    Slot,
    SlotRequest,
    Waiter,
    WaiterNote,
    admit_slot,
    checked_limit,
)
from .metering import share_note_usage

if TYPE_CHECKING:
    from ..core.scheduler_port import Scheduler
    from ..core.storage_port import Storage

__all__ = [
    "DEFAULT_SHARE_WAIT_SECONDS",
    "MAX_OWNER_LIMIT",
    "UNLIMITED",
    "HeldSlot",
    "OwnerShare",
    "OwnerShares",
    "ShareHooks",
    "ShareTaken",
    "Slot",
    "SlotRequest",
    "admit_slot",
    "check_share",
    "checked_limit",
    "shares_of",
    "take_share",
    "wait_for_share",
]

logger = logging.getLogger("cairn")
NOTE_LAPSES_AFTER = 4.0
"""A note lasts this many times the wait before a look (twice the longest jittered delay), unless renewed."""


def shares_of(storage: Storage) -> OwnerShares | None:
    """Where the store keeps its owners' shares (a wrapper's inner store's), when it keeps them."""
    return storage.owner_shares()


def check_share(storage: Storage) -> None:
    """Refuse, at start-up, a share setting that is not a limit, or a share set for a store that keeps none.

    ConfigurationError, naming the setting; the store is neither read nor written. Stores that keep no shares
    (one written before shares were kept, say) run as before while no share is set.
    """
    shares = shares_of(storage)
    if shares is not None:
        shares.default_limit()
        return
    limit = stack_owner_concurrency()
    if limit != UNLIMITED:
        raise ConfigurationError(
            f"{OWNER_CONCURRENCY}={limit} sets a fair share per owner, but {type(storage).__name__} keeps no "
            f"owners' shares (Storage.owner_shares() is None): unset {OWNER_CONCURRENCY} (or set it to 0), or use "
            "a store that keeps them"
        )


@dataclass
class HeldSlot:
    """A slot a claimed run holds: given back once the run has committed (or lost its claim)."""

    shares: OwnerShares
    owner: str
    job_id: str
    holder: str
    scheduler: Scheduler | None = None
    """What wakes the next waiting job once the slot is given back (None: nobody is woken)."""
    pipeline: str = ""
    """The run's pipeline: a scheduler that wakes no other pipeline's job wakes one of this one's."""

    def give_back(self) -> None:
        """Give the slot back and wake the oldest job waiting for it; a failure is left to the slot's expiry."""
        scheduler = self.scheduler
        try:
            if scheduler is None:
                self.shares.give_slot(self.owner, self.job_id, self.holder)
                return
            wakes_any = isinstance(scheduler, WakeScheduler)
            pipeline = None if wakes_any else self.pipeline
            waiter = self.shares.give_slot_to_next(self.owner, self.job_id, self.holder, pipeline=pipeline)
        except Exception:  # the slot expires with the claim's lease anyway
            logger.warning("Job %s: could not give back its owner's slot; it frees at its lease", self.job_id)
            return
        if waiter is not None:
            wake(scheduler, waiter)


def wake(scheduler: Scheduler, waiter: Waiter) -> None:
    """Advance ``waiter``'s job now; a message that cannot be sent is left to the job's own next look."""
    try:
        if isinstance(scheduler, WakeScheduler):
            scheduler.schedule_wake(
                waiter.job_id, pipeline=waiter.pipeline, phase=waiter.phase, sequence=waiter.sequence
            )
        else:
            scheduler.schedule_advance(waiter.job_id, phase=waiter.phase, sequence=waiter.sequence)
    except Exception:
        logger.warning("Job %s: could not be woken for its owner's share; it looks again on its own", waiter.job_id)


def _default_limit(run: Run, shares: OwnerShares | None) -> int:
    """The share's default limit for the run (0: off); a setting that cannot be read gives the claim back first."""
    try:
        if shares is None:
            check_share(run.storage)
            return UNLIMITED
        return shares.default_limit()
    except ConfigurationError:  # read after the claim (the setting changed since start-up): leave nothing claimed
        with contextlib.suppress(CairnError):
            run.commit("release")
        raise


def take_share(run: Run, scheduler: Scheduler | None = None) -> HeldSlot | ShareTaken | None:
    """Take a slot of the run's owner's share: the slot held, ShareTaken (wait), or None (no limit applies).

    ``scheduler`` wakes the next waiting job when the slot is given back (None: nobody is woken).
    """
    shares = shares_of(run.storage)
    limit = _default_limit(run, shares)  # the owner's own limit is read by the take itself
    if shares is None or limit == UNLIMITED:
        return None
    owner = shares.share_owner
    job = run.job
    holder = run.holder
    request = SlotRequest(
        owner=owner,
        job_id=job.job_id,
        holder=holder,
        limit=limit,
        now_ms=run.storage.clock(),
        expires_at=job.lease_expires_at or run.storage.clock(),
    )
    try:
        taken = shares.take_slot(request)
    except StorageError as exc:  # the claim is held: give it back and look again rather than leave it to expire
        logger.warning("Job %s: could not take its owner's share (%s); it looks again later", job.job_id, exc)
        return ShareTaken(0, limit, unread=True)
    if taken is not None:
        return taken
    return HeldSlot(shares, owner, job.job_id, holder, scheduler, run.pipeline.name)


def wait_for_share(run: Run, taken: ShareTaken, scheduler: Scheduler) -> Job:
    """Give the claim back with the wait reason, note the job in its owner's share, and have it advanced again.

    Noted, the job is woken when a slot is given back; the advance scheduled after a jittered delay is the
    fallback. A slot given back since the look (the note finds room) has the job look again at once.
    """
    shares = shares_of(run.storage)
    base = shares.share_wait_seconds if shares is not None else DEFAULT_SHARE_WAIT_SECONDS
    delay = base * (1.0 + random.random())
    noting = shares is not None and shares.notes_waiters and not taken.unread
    if noting:
        run.journal.add_usage(share_note_usage())
    job = run.commit("release", delay=delay, share_wait=taken.reason)
    if job.status != JobStatus.RUNNING:
        return job
    if shares is not None and noting and note(shares, run, job, base) == "room":
        delay = 0.0
    scheduler.schedule_advance(job.job_id, phase=run.phase_name, sequence=job.sequence, delay=delay)
    return job


def note(shares: OwnerShares, run: Run, job: Job, wait_seconds: float) -> NoteOutcome:
    """Note the released ``job`` in its owner's share (what the note did); a store error leaves it unnoted."""
    now = run.storage.clock()
    waiter = Waiter(
        job_id=job.job_id,
        pipeline=run.pipeline.name,
        phase=run.phase_name,
        sequence=job.sequence,
        created_at=job.created_at,
        expires_at=now + int(NOTE_LAPSES_AFTER * wait_seconds * 1000),
    )
    try:
        return shares.note_waiter(WaiterNote(shares.share_owner, shares.default_limit(), now, waiter))
    except StorageError as exc:
        logger.warning("Job %s: could not note it waits for its owner's share (%s)", job.job_id, exc)
        return "not noted"


class OwnerShare:
    """The fair share as a run-level feature (:mod:`cairn.core.run_features`): a slot taken after the claim."""

    name = "owner-share"

    def open(self, pipeline: Pipeline[Any]) -> RunHooks:
        """The share of one run (read after the claim, from the store)."""
        return ShareHooks()


@dataclass
class ShareHooks(RunHooks):
    """Takes a slot of the owner's share after the claim (or has the job wait for one), gives it back at the end."""

    held: HeldSlot | None = None

    def admit(self, run: Run, scheduler: Scheduler) -> Job | None:
        share = take_share(run, scheduler)
        if isinstance(share, ShareTaken):
            return wait_for_share(run, share, scheduler)
        self.held = share
        return None

    def close(self, run: Run) -> None:
        held, self.held = self.held, None
        if held is not None:
            held.give_back()
