"""The owners' shares capability of the storage port: slots, owners' limits and notes of waiting jobs.

A store that keeps a fair share per owner (:mod:`cairn.features.owner_share`) gives an :class:`OwnerShares` from
:meth:`cairn.Storage.owner_shares`; one that keeps none gives None (the port's default), and a share set
for it is refused at start-up. The rules every store applies inside its atomic write live here, as pure
functions: :func:`admit_slot` (take a slot), :func:`note_waiter_in` (note a waiting job) and
:func:`next_waiter` (the oldest noted job, woken when a slot is given back).

The notes are optional too: :meth:`OwnerShares.note_waiter` and :meth:`OwnerShares.give_slot_to_next` have
defaults that keep none (a store written before them keeps working; its waiting jobs look again on their own).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from .errors import InvalidInputError
from .ids import validate_owner
from .settings import MAX_OWNER_LIMIT, OWNER_LIMIT_RANGE, stack_owner_concurrency

UNLIMITED = 0
"""A limit of 0: no limit (every phase of the owner's jobs may run at once)."""
DEFAULT_SHARE_WAIT_SECONDS = 2.0
"""How long a job past its owner's share waits before it looks again (jittered up to twice as long)."""
MAX_WAITERS = 32
"""The most waiting jobs an owner's share keeps a note of (the oldest): the others look again on their own."""

NoteOutcome = Literal["noted", "room", "not noted"]
"""What noting a waiting job did: ``noted`` (a slot given back wakes it), ``room`` (a slot is free now: look
again at once), ``not noted`` (no note kept: the job looks again after its delay)."""


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


@dataclass(frozen=True)
class Waiter:
    """A job waiting for its owner's share, as the share notes it: the advance that wakes it, and its place."""

    job_id: str
    pipeline: str
    phase: str
    """The phase as the job's checkpoint names it: the advance that wakes the job names it so."""
    sequence: int
    """The job's sequence once it gave its claim back: the advance that wakes it is for that sequence."""
    created_at: int
    """When the job was created (Unix ms): the oldest waiting job is woken first."""
    expires_at: int
    """When the note lapses (Unix ms) unless the job looks again (a job cancelled while it waited, say)."""


@dataclass(frozen=True)
class WaiterNote:
    """Note ``waiter`` in ``owner``'s share, unless a slot is free now (``limit``: the default, as in a take)."""

    owner: str
    limit: int
    now_ms: int
    waiter: Waiter


def _live_others(slots: Mapping[str, Slot], job_id: str, now_ms: int) -> dict[str, Slot]:
    return {job: slot for job, slot in slots.items() if slot.expires_at > now_ms and job != job_id}


def admit_slot(slots: Mapping[str, Slot], request: SlotRequest) -> dict[str, Slot] | ShareTaken:
    """The owner's slots with ``request``'s taken (expired ones dropped), or ShareTaken when the share is full.

    The one rule every store applies inside its atomic write: the job's own slot (a resend, a takeover)
    never counts against it.
    """
    live = _live_others(slots, request.job_id, request.now_ms)
    if request.limit > 0 and len(live) >= request.limit:
        return ShareTaken(len(live), request.limit)
    return {**live, request.job_id: Slot(request.holder, request.expires_at)}


def _queue_order(waiter: Waiter) -> tuple[int, str]:
    return waiter.created_at, waiter.job_id


def note_waiter_in(
    slots: Mapping[str, Slot], waiters: Mapping[str, Waiter], note: WaiterNote
) -> tuple[NoteOutcome, dict[str, Waiter]]:
    """What noting ``note.waiter`` makes of the owner's notes, in the store's atomic write with the slots.

    ``room`` (the notes unchanged) when fewer than the limit of other jobs hold a live slot: one was given
    back since the job looked, and it looks again at once. Else the job's note is set (replacing its own),
    lapsed notes dropped and the :data:`MAX_WAITERS` oldest kept: ``noted``, or ``not noted`` when the job
    is not among them.
    """
    waiter = note.waiter
    if note.limit == UNLIMITED or len(_live_others(slots, waiter.job_id, note.now_ms)) < note.limit:
        return "room", dict(waiters)
    kept = {job: held for job, held in waiters.items() if held.expires_at > note.now_ms and job != waiter.job_id}
    kept[waiter.job_id] = waiter
    oldest = sorted(kept.values(), key=_queue_order)[:MAX_WAITERS]
    outcome: NoteOutcome = "noted" if waiter in oldest else "not noted"
    return outcome, {held.job_id: held for held in oldest}


def next_waiter(
    waiters: Mapping[str, Waiter], now_ms: int, pipeline: str | None = None
) -> tuple[Waiter | None, dict[str, Waiter]]:
    """The oldest live note (of ``pipeline``'s jobs only, when given) and the notes left without it (lapsed dropped)."""
    live = {job: held for job, held in waiters.items() if held.expires_at > now_ms}
    candidates = [held for held in live.values() if pipeline is None or held.pipeline == pipeline]
    if not candidates:
        return None, live
    woken = min(candidates, key=_queue_order)
    del live[woken.job_id]
    return woken, live


def checked_limit(limit: object) -> int:
    """``limit`` as an owner's limit: a whole number from 0 (no limit) to :data:`MAX_OWNER_LIMIT`."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= MAX_OWNER_LIMIT:
        raise InvalidInputError(f"An owner's limit must be {OWNER_LIMIT_RANGE}, got {limit!r}")
    return limit


class OwnerShares(ABC):
    """Where a store keeps its owners' shares: their slots, their limits, and notes of their waiting jobs."""

    owner_concurrency: int | None = None
    """This store's default limit per owner (None: ``CAIRN_OWNER_CONCURRENCY``; 0: no limit)."""
    share_wait_seconds: float = DEFAULT_SHARE_WAIT_SECONDS
    """How long a job past its owner's share waits before it looks again (jittered up to twice as long)."""
    notes_waiters: bool = False
    """Whether :meth:`note_waiter` keeps notes (a look then writes one), so that a slot given back wakes a job."""

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

        ``request.limit`` is the default: the owner's own limit, read in the same step, replaces it. A store
        that keeps notes drops the job's own in the same step (it runs now).
        """

    @abstractmethod
    def give_slot(self, owner: str, job_id: str, holder: str) -> None:
        """Give back the job's slot, if ``holder`` still holds it (idempotent)."""

    @abstractmethod
    def running_slots(self, owner: str, now_ms: int) -> int:
        """How many live slots ``owner`` holds now."""

    def note_waiter(self, note: WaiterNote) -> NoteOutcome:
        """Note a job that waits for its owner's share, unless a slot is free now (:func:`note_waiter_in`).

        One atomic step with the owner's slots, so that no slot given back between the job's look and its note
        goes unseen. Optional: by default no note is kept (``not noted``).
        """
        return "not noted"

    def give_slot_to_next(self, owner: str, job_id: str, holder: str, *, pipeline: str | None = None) -> Waiter | None:
        """Give back the job's slot and take the oldest note off the owner's share (:func:`next_waiter`), in one step.

        The job noted is the one to wake (None: nobody noted, or ``holder`` held no slot). ``pipeline``: only
        a job of that pipeline is taken. Optional: by default the slot is given back and nobody is woken.
        """
        self.give_slot(owner, job_id, holder)
        return None

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
