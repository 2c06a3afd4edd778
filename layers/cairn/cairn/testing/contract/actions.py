"""The contract of operator actions in the log: who paused, cancelled or signalled a job, kept exactly once.

A pause, a cancel or a signal's delivery adds an entry of kind ``action`` naming who asked to the job's
pending log (the log shows it last); the next start, or the commit of a claim that saw it, moves it
into its history item, and an action made after that claim stays pending until a later write moves it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from ...core.errors import ClaimLostError
from ...core.models import Job, JobStatus, LogEntry
from ...core.storage_port import Storage
from ...core.transitions import Journal, SignalDelivery
from ..clock import SkippingClock
from .base import JOB, ContractBase, claim_request, claimed, commit_request, fence_of, start_request, started, stored


def actions(job: Job) -> list[tuple[str, str | None]]:
    """The job's action entries, oldest first: (message, actor)."""
    return [(entry.message, entry.actor) for entry in job.log if entry.kind == "action"]


def messages(log: list[LogEntry]) -> list[str]:
    return [entry.message for entry in log]


class ActionContract(ContractBase):
    """Pause, cancel and signal name who asked, in the log, once each, in the order they happened."""

    def test_a_pause_and_a_cancel_are_logged_with_who_asked_once(self, storage: Storage, clock: SkippingClock) -> None:
        started(storage, clock)
        clock.advance(1)
        paused = storage.pause(JOB, by="alice")
        storage.pause(JOB, by="alice")  # already paused: nothing more
        clock.advance(1)
        storage.cancel(JOB, by="bob")
        storage.cancel(JOB, by="bob")

        job = stored(storage)
        assert actions(job) == [("Job paused by alice", "alice"), ("Job cancelled by bob", "bob")]
        assert job.log[-1].timestamp > job.log[-2].timestamp  # in the order they happened
        assert paused.status == JobStatus.PAUSED
        page = storage.log_page(JOB, None, 100)
        assert page is not None
        assert messages(page.entries) == messages(job.log)  # the log's last page shows them too
        view = storage.get_job_view(JOB)
        assert view is not None
        assert messages(view.job.log)[-2:] == ["Job paused by alice", "Job cancelled by bob"]

    def test_a_start_moves_the_pending_actions_into_its_history_before_its_own_line(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        started(storage, clock)
        clock.advance(1)
        storage.pause(JOB, by="alice")
        clock.advance(1)
        note = LogEntry(message="Job resumed", timestamp=clock())
        storage.start_job(replace(start_request(clock, seen=stored(storage)), journal=Journal(log=(note,))))

        after = stored(storage)
        assert after.pending_log == []
        assert actions(after) == [("Job paused by alice", "alice")]
        assert messages(after.log)[-2:] == ["Job paused by alice", "Job resumed"]
        page = storage.history_page(JOB, None, 1)  # the start's own history item holds it now
        assert page is not None
        assert messages(page.items[0].log) == ["Job paused by alice", "Job resumed"]

    def test_a_cancel_keeps_when_the_run_it_cut_short_began_and_fences_it(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        job, fence = claimed(storage, clock)
        clock.advance(5)
        storage.cancel(JOB, by="erin")

        after = stored(storage)
        assert (after.status, after.lease_owner, after.claimed_at) == (JobStatus.CANCELLED, None, job.claimed_at)
        with pytest.raises(ClaimLostError):
            storage.commit(JOB, fence, commit_request(clock, job, "done"))
        resumed = storage.start_job(start_request(clock, seen=stored(storage)))
        assert resumed.claimed_at is None  # a start begins no run: the next claim does
        assert stored(storage).claimed_at is None

    def test_a_pause_during_a_phase_stays_pending_past_that_phases_commit(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        job, fence = claimed(storage, clock)
        clock.advance(1)
        storage.pause(JOB, by="carol")  # the worker goes on: the pause meets the phase boundary
        clock.advance(1)
        storage.commit(JOB, fence, commit_request(clock, job, "next", next_phase="second", state={"n": 2}))

        after = stored(storage)
        assert after.status == JobStatus.PAUSED
        assert actions(after) == [("Job paused by carol", "carol")]
        assert after.log[-1].message == "Job paused by carol"  # still pending, shown last
        assert [entry.message for entry in after.pending_log] == ["Job paused by carol"]

    def test_a_signal_is_logged_and_the_commit_of_the_claim_that_saw_it_moves_it(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        started(storage, clock, phase="review", waiting_for="approval")
        clock.advance(1)
        delivery = SignalDelivery(name="approval", payload={"ok": True}, now_ms=clock(), actor="dave")
        woken = storage.deliver_signal(JOB, delivery)
        storage.deliver_signal(JOB, delivery)  # its response was lost: sent again, logged once
        assert actions(stored(storage)) == [('Signal "approval" delivered by dave', "dave")]

        claimed_job = storage.claim(claim_request(clock, woken))
        assert claimed_job is not None
        clock.advance(1)
        storage.commit(JOB, fence_of(claimed_job), commit_request(clock, claimed_job, "done"))

        after = stored(storage)
        assert after.pending_log == []
        assert actions(after) == [('Signal "approval" delivered by dave', "dave")]
        assert messages(after.log).count('Signal "approval" delivered by dave') == 1

    def test_a_commit_moves_only_the_actions_its_claim_saw_and_a_resent_commit_moves_nothing_again(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        started(storage, clock, phase="review", waiting_for="approval")
        clock.advance(1)
        woken = storage.deliver_signal(JOB, SignalDelivery(name="approval", payload=None, now_ms=clock(), actor="dave"))
        claimed_job = storage.claim(claim_request(clock, woken))
        assert claimed_job is not None
        clock.advance(1)
        storage.pause(JOB, by="frank")  # during the phase: after the claim read the job
        clock.advance(1)
        commit = commit_request(clock, claimed_job, "next", next_phase="after", state={"n": 1})
        storage.commit(JOB, fence_of(claimed_job), commit)
        storage.commit(JOB, fence_of(claimed_job), commit)  # its response was lost: sent again

        after = stored(storage)
        assert [entry.message for entry in after.pending_log] == ["Job paused by frank"]
        assert actions(after) == [('Signal "approval" delivered by dave', "dave"), ("Job paused by frank", "frank")]
        page = storage.history_page(JOB, None, 1)  # the commit's own history item: the signal, once
        assert page is not None
        assert messages(page.items[0].log)[:1] == ['Signal "approval" delivered by dave']
