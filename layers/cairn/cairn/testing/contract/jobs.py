"""The contract of a job's own life: start, claim and its fence, save, commit, pause, cancel, reads and TTL."""

from __future__ import annotations

import pytest

from ...core.errors import ClaimLostError, VersionConflict
from ...core.models import JobStatus
from ...core.storage_port import Storage
from ...core.transitions import Fence
from ...core.transitions.changes import changed
from ..clock import SkippingClock
from .base import (
    JOB,
    LEASE_SECONDS,
    PIPELINE,
    ContractBase,
    claim_request,
    claimed,
    commit_request,
    fence_of,
    save_request,
    start_request,
    started,
    stored,
)


class JobContract(ContractBase):
    """Start, claim, save, commit, pause and cancel: one atomic, fenced, idempotent write each."""

    def test_a_start_creates_a_running_job_at_its_first_phase(self, storage: Storage, clock: SkippingClock) -> None:
        returned = started(storage, clock, state={"n": 1})

        job = stored(storage)
        assert (job.job_id, job.pipeline, job.status) == (JOB, PIPELINE, JobStatus.RUNNING)
        assert job.checkpoint is not None
        assert job.checkpoint.next_phase == "first"
        assert job.checkpoint.state == {"n": 1}
        assert job.input == {"n": 1}
        assert job.sequence == returned.sequence > 0
        route = storage.get_route(JOB)
        assert route is not None
        assert (route.pipeline, route.status, route.next_phase, route.sequence) == (
            PIPELINE,
            JobStatus.RUNNING,
            "first",
            job.sequence,
        )

    def test_an_unknown_job_reads_as_none(self, storage: Storage, clock: SkippingClock) -> None:
        assert storage.get_job("nobody") is None
        assert storage.get_route("nobody") is None
        assert storage.entered("nobody", "first") is None
        assert storage.list_jobs() == []

    def test_a_start_sent_again_with_its_token_lands_once(self, storage: Storage, clock: SkippingClock) -> None:
        request = start_request(clock)
        first = storage.start_job(request)

        again = storage.start_job(request)  # its response was lost: the caller sends the same request

        assert again.sequence == first.sequence == stored(storage).sequence

    def test_a_start_refuses_a_live_job_it_has_not_seen(self, storage: Storage, clock: SkippingClock) -> None:
        started(storage, clock)

        with pytest.raises(VersionConflict):
            storage.start_job(start_request(clock, phase="other"))
        assert stored(storage).checkpoint.next_phase == "first"  # type: ignore[union-attr]

    def test_a_start_over_the_job_it_read_takes_it_over_and_fences_its_claim(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        job, fence = claimed(storage, clock)

        taken = storage.start_job(start_request(clock, phase="again", seen=job))

        assert taken.sequence > job.sequence
        assert taken.lease_owner is None
        with pytest.raises(ClaimLostError):
            storage.save(JOB, fence, save_request(clock, job, {"late": True}))
        assert stored(storage).checkpoint.next_phase == "again"  # type: ignore[union-attr]

    def test_a_claim_takes_the_job_and_a_live_claim_blocks_another(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        job = started(storage, clock)
        first = storage.claim(claim_request(clock, job, worker="worker-1"))
        assert first is not None
        assert first.lease_owner == "worker-1"
        assert first.claim_sequence is not None

        second = claim_request(clock, first, worker="worker-2")
        assert storage.claim(second) is None
        assert stored(storage).lease_owner == "worker-1"

        clock.advance(LEASE_SECONDS + 1)  # the first claim's lease ran out: the job is claimable again
        assert storage.claim(claim_request(clock, stored(storage), worker="worker-2")) is not None
        assert stored(storage).lease_owner == "worker-2"

    def test_a_claim_for_another_phase_or_sequence_is_refused(self, storage: Storage, clock: SkippingClock) -> None:
        job = started(storage, clock)

        assert storage.claim(claim_request(clock, job, phase="elsewhere")) is None
        moved = claim_request(clock, changed(job, sequence=job.sequence + 7))
        assert storage.claim(moved) is None
        assert stored(storage).lease_owner is None

    def test_save_keeps_the_checkpoint_under_the_claim(self, storage: Storage, clock: SkippingClock) -> None:
        job, fence = claimed(storage, clock)

        saved = storage.save(JOB, fence, save_request(clock, job, {"done": ["a"]}))

        assert saved.lease_owner == "worker-1"
        assert saved.sequence > job.sequence
        assert stored(storage).checkpoint.state == {"done": ["a"]}  # type: ignore[union-attr]

    def test_a_state_edited_in_place_after_a_write_or_a_read_is_not_what_is_stored(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        start = start_request(clock, state={"n": 1, "items": []})
        job = storage.claim(claim_request(clock, storage.start_job(start)))
        assert job is not None
        assert job.checkpoint is not None
        start.checkpoint.state["n"] = 100  # the caller edits what it wrote...
        job.checkpoint.state["items"].append("read")  # ...and what it read, as a phase edits ctx.state
        save = save_request(clock, job, {"n": 2, "items": ["a"]})
        saved = storage.save(JOB, fence_of(job), save)
        save.checkpoint.state["items"].append("b")
        assert saved.checkpoint is not None
        saved.checkpoint.state["n"] += 100

        after = stored(storage)
        assert after.checkpoint is not None
        assert (after.checkpoint.state, after.input) == ({"n": 2, "items": ["a"]}, {"n": 1, "items": []})
        after.checkpoint.state["n"] = 7
        assert after.input is not None
        after.input["n"] = 7
        entered = storage.entered(JOB, "first")
        assert entered is not None
        entered.state["items"].append("entered")
        again = stored(storage)
        assert again.checkpoint is not None
        assert (again.checkpoint.state, again.input) == ({"n": 2, "items": ["a"]}, {"n": 1, "items": []})
        first = storage.entered(JOB, "first")
        assert first is not None
        assert first.state == {"n": 1, "items": []}

    def test_a_stale_fence_is_refused(self, storage: Storage, clock: SkippingClock) -> None:
        job, stale = claimed(storage, clock, worker="worker-1")
        clock.advance(LEASE_SECONDS + 1)
        taken = storage.claim(claim_request(clock, stored(storage), worker="worker-2"))
        assert taken is not None

        with pytest.raises(ClaimLostError):
            storage.save(JOB, stale, save_request(clock, job, {"late": True}))
        with pytest.raises(ClaimLostError):
            storage.commit(JOB, stale, commit_request(clock, job, "done", result="late"))
        after = stored(storage)
        assert (after.lease_owner, after.status, after.sequence) == ("worker-2", JobStatus.RUNNING, taken.sequence)

    def test_a_fence_of_no_claim_is_refused(self, storage: Storage, clock: SkippingClock) -> None:
        job, fence = claimed(storage, clock)

        for forged in (Fence("intruder", fence.claim_sequence), Fence(fence.worker, fence.claim_sequence - 1)):
            with pytest.raises(ClaimLostError):
                storage.save(JOB, forged, save_request(clock, job, {"forged": True}))
        with pytest.raises(ClaimLostError):
            storage.save("nobody", fence, save_request(clock, job, {}))

    def test_a_commit_enters_the_next_phase_releases_the_claim_and_keeps_history(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        job, fence = claimed(storage, clock)

        storage.commit(JOB, fence, commit_request(clock, job, "next", next_phase="second", state={"n": 2}))

        after = stored(storage)
        assert after.status == JobStatus.RUNNING
        assert after.lease_owner is None
        assert after.checkpoint is not None
        assert after.checkpoint.next_phase == "second"
        assert [(record.phase, record.outcome) for record in after.phases] == [("first", "next")]
        entered = storage.entered(JOB, "second")
        assert entered is not None
        assert entered.state == {"n": 2}

    def test_a_commit_done_completes_the_job_with_its_result(self, storage: Storage, clock: SkippingClock) -> None:
        job, fence = claimed(storage, clock)

        storage.commit(JOB, fence, commit_request(clock, job, "done", result={"answer": 42}))

        after = stored(storage)
        assert (after.status, after.result, after.lease_owner) == (JobStatus.COMPLETE, {"answer": 42}, None)

    def test_save_and_commit_sent_again_after_a_lost_response_land_once(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        job, fence = claimed(storage, clock)
        save = save_request(clock, job, {"n": 1})
        saved = storage.save(JOB, fence, save)
        storage.save(JOB, fence, save)  # its response was lost: sent again, recognised, never applied twice
        assert stored(storage).sequence == saved.sequence

        commit = commit_request(clock, saved, "next", next_phase="second", state={"n": 2})
        committed = storage.commit(JOB, fence, commit)
        storage.commit(JOB, fence, commit)  # the claim is gone, yet the commit is its own: landed, not refused
        assert stored(storage).sequence == committed.sequence

        assert [record.phase for record in stored(storage).phases] == ["first"]

    def test_pause_and_cancel_are_idempotent_and_cancel_fences_the_worker(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        job, fence = claimed(storage, clock)

        assert storage.pause(JOB).status == JobStatus.PAUSED
        assert storage.pause(JOB).status == JobStatus.PAUSED
        assert storage.cancel(JOB).status == JobStatus.CANCELLED
        assert storage.cancel(JOB).status == JobStatus.CANCELLED

        with pytest.raises(ClaimLostError):
            storage.commit(JOB, fence, commit_request(clock, job, "done", result="late"))
        assert stored(storage).status == JobStatus.CANCELLED

    def test_listings_are_newest_first_and_filter_by_status(self, storage: Storage, clock: SkippingClock) -> None:
        for job_id in ("job-a", "job-b", "job-c"):
            started(storage, clock, job_id=job_id)
            clock.advance(1)
        storage.pause("job-b")

        assert [job.job_id for job in storage.list_jobs()] == ["job-c", "job-b", "job-a"]
        assert [job.job_id for job in storage.list_jobs(status=JobStatus.PAUSED)] == ["job-b"]
        assert [job.job_id for job in storage.list_jobs(status=JobStatus.RUNNING)] == ["job-c", "job-a"]

    def test_a_job_past_its_ttl_is_gone_and_may_start_afresh(self, storage: Storage, clock: SkippingClock) -> None:
        started(storage, clock, ttl_seconds=60)
        clock.advance(61)

        assert storage.get_job(JOB) is None
        assert storage.get_route(JOB) is None
        assert storage.list_jobs() == []
        again = storage.start_job(start_request(clock, phase="fresh"))
        assert again.checkpoint is not None
        assert again.checkpoint.next_phase == "fresh"
