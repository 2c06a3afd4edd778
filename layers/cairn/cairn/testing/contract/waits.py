"""The contract of waits: a signal hands a waiting job its payload; a wait past its deadline ends."""

from __future__ import annotations

import pytest

from ...core.errors import TransitionRefusedError
from ...core.models import JobStatus
from ...core.storage_port import Storage
from ...core.transitions import SignalDelivery, WaitExpiry
from ..clock import SkippingClock
from .base import JOB, ContractBase, started, stored


class WaitContract(ContractBase):
    """``deliver_signal`` and ``expire_wait``: each once, whatever is sent again."""

    def test_a_signal_wakes_the_job_waiting_for_it_once(self, storage: Storage, clock: SkippingClock) -> None:
        started(storage, clock, phase="review", waiting_for="approval")
        assert stored(storage).status == JobStatus.WAITING

        delivery = SignalDelivery(name="approval", payload={"ok": True}, now_ms=clock())
        woken = storage.deliver_signal(JOB, delivery)
        again = storage.deliver_signal(JOB, delivery)  # its response was lost

        job = stored(storage)
        assert job.status == JobStatus.RUNNING
        assert job.waiting_for is None
        assert job.signal is not None
        assert (job.signal.name, job.signal.payload) == ("approval", {"ok": True})
        assert again.sequence == woken.sequence == job.sequence

    def test_a_signal_no_one_waits_for_is_refused(self, storage: Storage, clock: SkippingClock) -> None:
        started(storage, clock, phase="review", waiting_for="approval")

        with pytest.raises(TransitionRefusedError):
            storage.deliver_signal(JOB, SignalDelivery(name="other", payload=None, now_ms=clock()))
        assert stored(storage).status == JobStatus.WAITING

    def test_a_wait_ends_at_its_deadline_in_its_timeout_phase(self, storage: Storage, clock: SkippingClock) -> None:
        deadline = clock() + 30_000
        job = started(storage, clock, phase="review", waiting_for="approval", wait_deadline=deadline)
        job = started(
            storage,
            clock,
            phase="review",
            waiting_for="approval",
            wait_deadline=deadline,
            timeout_phase="late",
            seen=job,
        )

        assert storage.expire_wait(JOB, WaitExpiry(sequence=job.sequence, now_ms=clock())) is None  # not yet
        clock.advance(31)
        expiry = WaitExpiry(sequence=job.sequence, now_ms=clock())
        ended = storage.expire_wait(JOB, expiry)

        assert ended is not None
        after = stored(storage)
        assert after.status == JobStatus.RUNNING
        assert after.checkpoint is not None
        assert after.checkpoint.next_phase == "late"
        again = storage.expire_wait(JOB, expiry)  # sent again: recognised, or no such wait any more
        assert again is None or again.sequence == after.sequence
        assert stored(storage).sequence == after.sequence

    def test_a_wait_without_a_timeout_phase_ends_in_error(self, storage: Storage, clock: SkippingClock) -> None:
        job = started(storage, clock, phase="review", waiting_for="approval", wait_deadline=clock() + 1000)
        clock.advance(2)

        assert storage.expire_wait(JOB, WaitExpiry(sequence=job.sequence, now_ms=clock())) is not None
        assert stored(storage).status == JobStatus.ERROR

    def test_no_wait_no_expiry(self, storage: Storage, clock: SkippingClock) -> None:
        job = started(storage, clock)
        clock.advance(60)

        assert storage.expire_wait(JOB, WaitExpiry(sequence=job.sequence, now_ms=clock())) is None
        assert storage.expire_wait("nobody", WaitExpiry(sequence=1, now_ms=clock())) is None
        assert stored(storage).status == JobStatus.RUNNING
