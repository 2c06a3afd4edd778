"""FileStorage with hostile or damaged files: each is a CorruptJobError naming the file, and listings,
health() and cleanup() go on with the other jobs; a history line torn by a crash is skipped."""

from __future__ import annotations

import gzip
import logging
from datetime import timedelta
from pathlib import Path

import pytest

from cairn import FileStorage, JobStatus, run_pipeline
from cairn.adapters import CorruptJobError
from tests.support import FakeClock, make_scheduler, record_figure, two_phase_pipeline

#: Job files that cannot be read: each must be named, never raise anything else.
BAD_FILES: dict[str, bytes] = {
    "deep nesting": b"[" * 100_000,
    "deep nesting closed": b"[" * 5_000 + b"]" * 5_000,
    "deep nesting in a field": b'{"jobId": "x", "state": ' + b"{" * 100_000,
    "truncated": b'{"jobId": "bad", "pipeline": "p", "status": "runn',
    "garbage": bytes(range(256)) * 4,
    "gzip": gzip.compress(b'{"jobId": "bad"}'),
    "not utf-8": b'{"jobId": "\xff\xfe"}',
    "a list": b"[1, 2, 3]",
    "null": b"null",
    "empty": b"",
    "wrong types": b'{"jobId": 5, "pipeline": [], "status": "zombie", "createdAt": "then"}',
    "missing fields": b'{"jobId": "bad"}',
    "a huge number": b'{"jobId": "bad", "pipeline": "p", "createdAt": 1' + b"0" * 5000 + b"}",
}


def read_error(storage: FileStorage, job_id: str, case: str) -> CorruptJobError:
    """The CorruptJobError reading ``job_id`` raises (fails the test, naming ``case``, if it reads)."""
    try:
        storage.get_job(job_id)
    except CorruptJobError as exc:
        return exc
    raise AssertionError(f"{case}: read as a job")


def with_jobs(directory: Path, clock: FakeClock, *job_ids: str) -> FileStorage:
    storage = FileStorage(directory, clock=clock)
    pipeline = two_phase_pipeline("files")
    for job_id in job_ids:
        clock.advance(1)
        run_pipeline(job_id, pipeline, storage=storage, scheduler=make_scheduler(pipeline, storage), initial_state={})
    return storage


def test_every_damaged_job_file_is_named_and_the_other_jobs_stay_usable(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    storage = with_jobs(tmp_path, clock, "good", "newer")
    bad = {f"bad-{number:02}": name for number, name in enumerate(sorted(BAD_FILES))}
    for job_id, name in bad.items():
        storage.path_for(job_id).write_bytes(BAD_FILES[name])
    record_figure("corrupt_records", tried=len(bad))

    for job_id, name in bad.items():
        assert read_error(storage, job_id, name).location == str(storage.path_for(job_id)), name
    with caplog.at_level(logging.WARNING, logger="cairn.storage.file"):
        assert [job.job_id for job in storage.list_jobs()] == ["newer", "good"]
    assert all(str(storage.path_for(job_id)) in caplog.text for job_id in bad)
    assert [job.job_id for job in storage.list_jobs(status=JobStatus.RUNNING)] == ["newer", "good"]

    health = storage.health()
    assert not health.healthy
    assert sorted(health.unreadable_files) == sorted(str(storage.path_for(job_id)) for job_id in bad)
    assert health.job_count == 2

    clock.advance(timedelta(days=3).total_seconds())
    assert sorted(storage.cleanup()) == ["good", "newer"]  # expired; the damaged files are left for a person
    assert all(storage.path_for(job_id).exists() for job_id in bad)


def test_a_history_line_torn_by_a_crash_is_skipped_and_the_next_write_starts_a_line_of_its_own(
    tmp_path: Path, clock: FakeClock
) -> None:
    storage = with_jobs(tmp_path, clock, "torn")
    history = storage.history_path_for("torn")
    before = storage.get_job("torn")
    assert before is not None
    assert before.log
    with history.open("ab") as file:
        file.write(b'{"token": "half-writ')  # a crash mid-append: no newline
    record_figure("corrupt_records", tried=1)

    assert storage.get_job("torn") == before
    scheduler = make_scheduler(two_phase_pipeline("files"), storage)
    run_pipeline("torn", two_phase_pipeline("files"), storage=storage, scheduler=scheduler, initial_state={})  # resumes
    scheduler.drain()

    done = storage.get_job("torn")
    assert done is not None
    assert done.status == JobStatus.COMPLETE
    assert "first ran" in [entry.message for entry in done.log]
    starts = [entry.message for entry in done.log if entry.message.startswith(("Job started", "Job retried"))]
    assert starts == ['Job started at phase "first"', 'Job retried (resume) at phase "first"']  # none lost
    assert [record.phase for record in done.phases] == ["first", "second"]
    lines = history.read_bytes().split(b"\n")
    assert b'{"token": "half-writ' in lines  # the torn line stands alone; the items after it are whole
