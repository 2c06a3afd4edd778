"""The contract of the owners' shares capability (``Storage.owner_shares()``): slots, limits and notes of waiting jobs.

Skipped for a store that keeps no shares (the port's default); the notes' part, for one that keeps no notes.
"""

from __future__ import annotations

import pytest

from ...core.share_port import MAX_WAITERS, OwnerShares, ShareTaken, SlotRequest, Waiter, WaiterNote
from ...core.storage_port import Storage
from ..clock import SkippingClock
from .base import PIPELINE, ContractBase

LEASE_MS = 60_000


def shares_of(storage: Storage, *, notes: bool = False) -> OwnerShares:
    """The store's owners' shares; the test is skipped for a store that keeps none (or, with ``notes``, no notes)."""
    shares = storage.owner_shares()
    if shares is None:
        pytest.skip("this store keeps no owners' shares")
    if notes and not shares.notes_waiters:
        pytest.skip("this store keeps no notes of waiting jobs")
    return shares


def take(
    shares: OwnerShares, clock: SkippingClock, job_id: str, *, limit: int = 1, holder: str = ""
) -> ShareTaken | None:
    """Take a slot of the store's owner's share for ``job_id`` (its claim ``holder``), for a minute."""
    now = clock()
    request = SlotRequest(shares.share_owner, job_id, holder or f"{job_id}#1", limit, now, now + LEASE_MS)
    return shares.take_slot(request)


def noted(shares: OwnerShares, clock: SkippingClock, job_id: str, *, created_at: int, limit: int = 1) -> str:
    """Note ``job_id`` (created at ``created_at``) as waiting for the store's owner's share; what the note did."""
    now = clock()
    waiter = Waiter(job_id, PIPELINE, "first", 7, created_at, now + LEASE_MS)
    return shares.note_waiter(WaiterNote(shares.share_owner, limit, now, waiter))


class ShareContract(ContractBase):
    """Slots within the limit, one per job, given back by their holder; the oldest noted job handed a freed slot."""

    def test_a_share_holds_its_limit_and_a_job_holds_one_slot(self, storage: Storage, clock: SkippingClock) -> None:
        shares = shares_of(storage)
        assert take(shares, clock, "a", limit=2) is None
        assert take(shares, clock, "a", limit=2, holder="a#2") is None  # a takeover replaces the job's own slot
        assert take(shares, clock, "b", limit=2) is None
        assert take(shares, clock, "c", limit=2) == ShareTaken(2, 2)
        assert shares.running_slots(shares.share_owner, clock()) == 2
        shares.give_slot(shares.share_owner, "b", "someone-else#1")  # only the holder gives a slot back
        assert take(shares, clock, "c", limit=2) == ShareTaken(2, 2)
        shares.give_slot(shares.share_owner, "b", "b#1")
        assert take(shares, clock, "c", limit=2) is None
        clock.advance(LEASE_MS / 1000)  # every slot expires with its lease
        assert shares.running_slots(shares.share_owner, clock()) == 0

    def test_an_owners_own_limit_replaces_the_default(self, storage: Storage, clock: SkippingClock) -> None:
        shares = shares_of(storage)
        shares.set_owner_limit(shares.share_owner, 2)
        assert shares.owner_limit(shares.share_owner) == 2
        assert take(shares, clock, "a", limit=1) is None
        assert take(shares, clock, "b", limit=1) is None  # the owner's 2, not the default's 1
        assert take(shares, clock, "c", limit=1) == ShareTaken(2, 2)
        shares.set_owner_limit(shares.share_owner, None)
        assert shares.owner_limit(shares.share_owner) is None

    def test_a_slot_given_back_goes_to_the_oldest_noted_job(self, storage: Storage, clock: SkippingClock) -> None:
        shares = shares_of(storage, notes=True)
        owner = shares.share_owner
        assert take(shares, clock, "running") is None
        assert noted(shares, clock, "newer", created_at=clock() - 1) == "noted"
        assert noted(shares, clock, "older", created_at=clock() - 2) == "noted"
        woken = shares.give_slot_to_next(owner, "running", "running#1")
        assert woken is not None
        assert (woken.job_id, woken.pipeline, woken.phase, woken.sequence) == ("older", PIPELINE, "first", 7)
        assert shares.give_slot_to_next(owner, "running", "running#1") is None  # given back already: nobody woken
        assert take(shares, clock, "newer") is None  # it runs: its note goes with the take
        assert noted(shares, clock, "later", created_at=clock()) == "noted"
        assert shares.give_slot_to_next(owner, "newer", "newer#1", pipeline="another") is None  # none of that pipeline
        assert take(shares, clock, "later") is None
        assert shares.give_slot_to_next(owner, "later", "later#1") is None  # its note went with its take

    def test_a_note_finds_a_freed_slot_or_lapses(self, storage: Storage, clock: SkippingClock) -> None:
        shares = shares_of(storage, notes=True)
        owner = shares.share_owner
        assert noted(shares, clock, "alone", created_at=clock()) == "room"  # nothing runs: look again at once
        assert take(shares, clock, "running", holder="running#1") is None
        assert noted(shares, clock, "waits", created_at=clock()) == "noted"
        clock.advance(LEASE_MS / 1000 - 1)
        assert take(shares, clock, "running", holder="running#2") is None  # renewed: still holds the slot
        clock.advance(1.0)  # the note lapsed (the job never looked again)
        assert shares.give_slot_to_next(owner, "running", "running#2") is None

    def test_the_oldest_jobs_are_noted_at_most(self, storage: Storage, clock: SkippingClock) -> None:
        shares = shares_of(storage, notes=True)
        assert take(shares, clock, "running") is None
        start = clock()
        for index in range(MAX_WAITERS):
            assert noted(shares, clock, f"w-{index:02d}", created_at=start + index) == "noted"
        assert noted(shares, clock, "newest", created_at=start + MAX_WAITERS) == "not noted"
        assert noted(shares, clock, "oldest", created_at=start - 1) == "noted"  # the newest noted makes way
        woken = shares.give_slot_to_next(shares.share_owner, "running", "running#1")
        assert woken is not None
        assert woken.job_id == "oldest"
