"""A fair share per owner: at most N phases of one owner's jobs run at once.

Jobs belong to owners (a store is bound to one: :attr:`OwnerShares.share_owner`). Without a limit a
burst of one owner's jobs can take every phase function's concurrency; with one, a claimed run takes
one of its owner's *slots* before its phase runs, and gives it back once it has committed.

The mechanism, built for crashes, duplicates and races:

- A slot is a lease in the store, one per job (keyed by the job id, naming the claim that holds it:
  ``<worker>#<claim sequence>``), and it expires with the claim's lease: a worker that dies holding
  one frees it when its claim would have expired, with nothing to clean up.
- Taking a slot is one atomic conditional write: it lands only while fewer than the limit of the
  owner's *other* jobs hold a live slot. A job holds at most one slot (only one claim of a job is ever
  live), so a resent take, or a takeover by a crash report, replaces the job's own slot, never adds one.
- A run that finds the share taken does not run its phase: it gives its claim back (a ``release``
  commit, adding no history) with a *wait reason* on the job (``Job.share_wait``, e.g. "waiting for its
  owner's share: 2 of 2 phases running") and ``not_before`` set to when it looks again; the job stays
  ``running`` and the scheduler is asked to advance it after that delay. Lost, that message is made up
  by the sweep, which revives a running job left alone (``not_before`` passed). A duplicate of the
  message finds the sequence moved and does nothing, as any stale advance does.
- Map items do not count: a map's own ``max_concurrency`` bounds them; the phase that starts the map
  and the one that takes its results (``then``) each count as a phase run.

The share is on when there is a default limit: the store's own (:attr:`OwnerShares.owner_concurrency`),
else the stack's ``CAIRN_OWNER_CONCURRENCY`` (the template's ``OwnerConcurrency``); 0 or unset: off, and
no run reads or writes a share. While it is on, an owner's own limit kept in the store
(:meth:`OwnerShares.set_owner_limit`; ``cairn ops owner-limit OWNER N``) replaces the default for that
owner, higher or lower (0: no limit for it); the take reads it in the same atomic step.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import InvalidInputError, StorageError
from .ids import validate_owner
from .settings import stack_owner_concurrency

if TYPE_CHECKING:
    from .engine.claimed_run import ClaimedRun
    from .models import Job
    from .scheduler_port import Scheduler
    from .storage_port import Storage

UNLIMITED = 0
"""A limit of 0: no limit (every phase of the owner's jobs may run at once)."""
DEFAULT_SHARE_WAIT_SECONDS = 2.0
"""How long a job past its owner's share waits before it looks again (jittered up to twice as long)."""
MAX_OWNER_LIMIT = 100_000


@dataclass(frozen=True)
class Slot:
    """One job's slot in its owner's share: the claim holding it and when it expires (Unix ms)."""

    holder: str
    expires_at: int


@dataclass(frozen=True)
class SlotRequest:
    """Take a slot of ``owner``'s share for ``job_id``'s claim ``holder``, while fewer than ``limit`` are live."""

    owner: str
    job_id: str
    holder: str
    limit: int
    now_ms: int
    expires_at: int


@dataclass(frozen=True)
class ShareTaken:
    """The owner's share is taken: ``running`` of its ``limit`` slots are live."""

    running: int
    limit: int
    unread: bool = False
    """The share could not be read (a store error): the job waits and looks again, as if it were full."""

    @property
    def reason(self) -> str:
        """The job's wait reason, as its view shows it."""
        if self.unread:
            return "waiting for its owner's share: it could not be read just now"
        return f"waiting for its owner's share: {self.running} of {self.limit} phases running"


def admit_slot(slots: Mapping[str, Slot], request: SlotRequest) -> dict[str, Slot] | ShareTaken:
    """The owner's slots with ``request``'s taken (expired ones dropped), or ShareTaken when the share is full.

    The one rule every store applies inside its atomic write: the job's own slot (a resend, a takeover)
    never counts against it.
    """
    live = {job: slot for job, slot in slots.items() if slot.expires_at > request.now_ms and job != request.job_id}
    if request.limit > 0 and len(live) >= request.limit:
        return ShareTaken(len(live), request.limit)
    return {**live, request.job_id: Slot(request.holder, request.expires_at)}


def checked_limit(limit: object) -> int:
    """``limit`` as an owner's limit: a whole number from 0 (no limit) to :data:`MAX_OWNER_LIMIT`."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= MAX_OWNER_LIMIT:
        raise InvalidInputError(
            f"An owner's limit must be a whole number from 0 (no limit) to {MAX_OWNER_LIMIT}, got {limit!r}"
        )
    return limit


class OwnerShares(ABC):
    """A store that keeps owners' shares: their slots and their limits (mixed into a :class:`Storage`)."""

    owner_concurrency: int | None = None
    """This store's default limit per owner (None: ``CAIRN_OWNER_CONCURRENCY``; 0: no limit)."""
    share_wait_seconds: float = DEFAULT_SHARE_WAIT_SECONDS
    """How long a job past its owner's share waits before it looks again (jittered up to twice as long)."""

    @property
    @abstractmethod
    def share_owner(self) -> str:
        """The owner whose jobs this store holds."""

    @abstractmethod
    def owner_limit(self, owner: str) -> int | None:
        """The limit kept for ``owner`` (None: none kept, the default applies)."""

    @abstractmethod
    def set_owner_limit(self, owner: str, limit: int | None) -> None:
        """Keep ``limit`` for ``owner`` (0: no limit for it; None: drop its override, the default applies)."""

    @abstractmethod
    def take_slot(self, request: SlotRequest) -> ShareTaken | None:
        """Take a slot for the request's job in one atomic step (:func:`admit_slot`); None when it is taken.

        ``request.limit`` is the default: the owner's own limit, read in the same step, replaces it.
        """

    @abstractmethod
    def give_slot(self, owner: str, job_id: str, holder: str) -> None:
        """Give back the job's slot, if ``holder`` still holds it (idempotent)."""

    @abstractmethod
    def running_slots(self, owner: str, now_ms: int) -> int:
        """How many live slots ``owner`` holds now."""

    def default_limit(self) -> int:
        """The share every owner has unless it has its own: this store's default, else the stack's (0: off)."""
        if self.owner_concurrency is not None:
            return checked_limit(self.owner_concurrency)
        return stack_owner_concurrency() or UNLIMITED

    def limit_for(self, owner: str) -> int:
        """The limit in force for ``owner``: 0 (none) while the share is off, else its own limit or the default.

        The share is on when there is a default limit; an owner's own limit then raises or lowers it
        (0: no limit for that owner). While it is off no run reads or writes a share: it costs nothing.
        """
        default = self.default_limit()
        if default == UNLIMITED:
            return UNLIMITED
        kept = self.owner_limit(validate_owner(owner))
        return default if kept is None else kept


def shares_of(storage: Storage) -> OwnerShares | None:
    """The store's owners' shares, when it keeps them."""
    return storage if isinstance(storage, OwnerShares) else None


@dataclass
class HeldSlot:
    """A slot a claimed run holds: given back once the run has committed (or lost its claim)."""

    shares: OwnerShares
    owner: str
    job_id: str
    holder: str

    def give_back(self) -> None:
        """Give the slot back; a failure is left to the slot's expiry."""
        try:
            self.shares.give_slot(self.owner, self.job_id, self.holder)
        except Exception:  # the slot expires with the claim's lease anyway
            from .engine.writes import logger

            logger.warning("Job %s: could not give back its owner's slot; it frees at its lease", self.job_id)


def take_share(run: ClaimedRun) -> HeldSlot | ShareTaken | None:
    """Take a slot of the run's owner's share: the slot held, ShareTaken (wait), or None (no limit applies)."""
    shares = shares_of(run.storage)
    if shares is None:
        return None
    owner = shares.share_owner
    limit = shares.default_limit()  # the owner's own limit is read by the take itself
    if limit == UNLIMITED:
        return None
    job = run.job
    holder = f"{run.fence.worker}#{run.fence.claim_sequence}"
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
        from .engine.writes import logger

        logger.warning("Job %s: could not take its owner's share (%s); it looks again later", job.job_id, exc)
        return ShareTaken(0, limit, unread=True)
    if taken is not None:
        return taken
    return HeldSlot(shares, owner, job.job_id, holder)


def wait_for_share(run: ClaimedRun, taken: ShareTaken, scheduler: Scheduler) -> Job:
    """Give the claim back with the wait reason, and have the job advanced again after a jittered delay."""
    from .models import JobStatus

    shares = shares_of(run.storage)
    base = shares.share_wait_seconds if shares is not None else DEFAULT_SHARE_WAIT_SECONDS
    delay = base * (1.0 + random.random())
    job = run.commit("release", delay=delay, share_wait=taken.reason)
    if job.status == JobStatus.RUNNING:
        scheduler.schedule_advance(job.job_id, phase=run.phase_name, sequence=job.sequence, delay=delay)
    return job
