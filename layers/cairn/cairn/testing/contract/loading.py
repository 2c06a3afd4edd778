"""The contract of a loaded job (``Storage.put_job``): a job with its whole history, read and run as any other."""

from __future__ import annotations

from typing import Any

import pytest

from ...core.errors import ConfigurationError, InvalidInputError, JobExistsError, StorageError
from ...core.models import Checkpoint, HistoryItem, Job, JobStatus, LogEntry, PhaseRecord
from ...core.storage_port import Storage
from ...storage.job_file import JobFile, PulledJob, PulledWrite
from ...storage.job_loading import loaded_job
from ..clock import SkippingClock
from .base import JOB, PIPELINE, TTL_SECONDS, ContractBase, claim_request, commit_request, fence_of, stored


def pulled_job(clock: SkippingClock, status: JobStatus = JobStatus.RUNNING) -> JobFile:
    """A job pulled after ``first`` ran, entering ``second`` (two writes: the start, the commit)."""
    then = clock() - 60_000
    first = Checkpoint(next_phase="first", state={"n": 1}, created_at=then)
    second = Checkpoint(next_phase="second", state={"n": 2}, created_at=then + 10)
    record = PhaseRecord(
        phase="first", attempt=1, started_at=then, ended_at=then + 10, outcome="next", next_phase="second"
    )
    return JobFile(
        pulled_at=then + 20,
        pulled_from="https://api.example.com",
        job=PulledJob(
            job_id=JOB,
            pipeline=PIPELINE,
            status=status,
            input={"n": 1},
            checkpoint=second,
            usage={"tokens": 3},
            sequence=4,
            created_at=then,
            updated_at=then + 10,
        ),
        history=[
            PulledWrite(log=[LogEntry(message='Job started at phase "first"', timestamp=then)], entry=first),
            PulledWrite(log=[LogEntry(message="ran", timestamp=then + 5)], record=record, entry=second),
        ],
    )


def put(storage: Storage, job: Job, history: list[HistoryItem], *, replace: bool = False) -> Job:
    """``storage.put_job``; the test is skipped for a store that cannot load jobs."""
    try:
        return storage.put_job(job, history, replace=replace)
    except ConfigurationError as exc:
        pytest.skip(f"this store does not load jobs: {exc}")


class LoadingContract(ContractBase):
    """A loaded job keeps its fields and history, reads as any other, is claimed and committed, is never doubled."""

    def test_a_loaded_job_reads_whole_and_enters_its_phases_as_pulled(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        job, history = loaded_job(pulled_job(clock), source="job.json", now_ms=clock(), ttl_seconds=TTL_SECONDS)

        put(storage, job, history)

        loaded = stored(storage)
        assert (loaded.status, loaded.input, loaded.usage) == (JobStatus.RUNNING, {"n": 1}, {"tokens": 3})
        assert loaded.checkpoint is not None
        assert (loaded.checkpoint.next_phase, loaded.checkpoint.state) == ("second", {"n": 2})
        assert [record.phase for record in loaded.phases] == ["first"]
        assert [entry.message for entry in loaded.log][:2] == ['Job started at phase "first"', "ran"]
        assert loaded.log[-1].message.startswith("Loaded from job.json, pulled from https://api.example.com at ")
        assert not loaded.is_expired(clock())
        first = storage.entered(JOB, "first")
        assert first is not None
        assert first.state == {"n": 1}
        page = storage.history_page(JOB)
        assert page is not None
        assert [entry.message for item in reversed(page.items) for entry in item.log] == [
            entry.message for entry in loaded.log
        ]

    def test_a_loaded_running_job_is_claimed_and_committed_as_any_other(
        self, storage: Storage, clock: SkippingClock
    ) -> None:
        job, history = loaded_job(pulled_job(clock), source="job.json", now_ms=clock(), ttl_seconds=TTL_SECONDS)
        put(storage, job, history)

        held = storage.claim(claim_request(clock, stored(storage)))
        assert held is not None
        done = storage.commit(JOB, fence_of(held), commit_request(clock, held, "done", result={"n": 3}))

        assert done.status == JobStatus.COMPLETE
        after = stored(storage)
        assert [record.phase for record in after.phases] == ["first", "second"]
        assert after.result == {"n": 3}

    def test_a_live_job_with_the_id_is_refused_unless_replaced(self, storage: Storage, clock: SkippingClock) -> None:
        job, history = loaded_job(pulled_job(clock), source="job.json", now_ms=clock(), ttl_seconds=TTL_SECONDS)
        put(storage, job, history)
        again, again_history = loaded_job(
            pulled_job(clock, JobStatus.ERROR), source="job.json", now_ms=clock(), ttl_seconds=TTL_SECONDS
        )

        with pytest.raises(JobExistsError):
            storage.put_job(again, again_history)
        assert stored(storage).status == JobStatus.RUNNING

        storage.put_job(again, again_history, replace=True)
        replaced = stored(storage)
        assert replaced.status == JobStatus.ERROR
        assert [record.phase for record in replaced.phases] == ["first"]

    @pytest.mark.parametrize(
        "change",
        [
            {"job_id": "../../etc/passwd"},
            {"job_id": ""},
            {"job_id": "a\x00b"},
            {"job_id": "a\nb"},
            {"job_id": "j" * 5000},
            {"job_id": "café"},
            {"usage": {"tokens": float("nan")}},
            {"usage": {"tokens": float("inf")}},
            {"usage": {"tokens": -1}},
        ],
        ids=["dots", "empty", "nul", "newline", "long", "accented", "nan", "infinite", "negative"],
    )
    def test_a_job_with_an_id_the_api_refuses_or_usage_that_is_not_a_count_is_refused(
        self, storage: Storage, clock: SkippingClock, change: dict[str, Any]
    ) -> None:
        job, history = loaded_job(pulled_job(clock), source="job.json", now_ms=clock(), ttl_seconds=TTL_SECONDS)

        with pytest.raises(InvalidInputError, match=r"job id|usage") as refused:
            put(storage, job.model_copy(update=change), history)

        assert not isinstance(refused.value, StorageError)
        assert storage.list_jobs() == []
