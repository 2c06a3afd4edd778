"""What FileStorage adds to the contract: files on disk, corruption, retention, health, several processes."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from cairn import (
    Cairn,
    CairnError,
    Done,
    Fail,
    FileStorage,
    InlineScheduler,
    InvalidInputError,
    Job,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    run_pipeline,
)
from cairn.adapters import CorruptJobError, StorageError
from cairn.core.engine import cancel_job, pause_job
from tests.contract import file_worker
from tests.support import FakeClock, job_of, make_scheduler

HOUR = 3600


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    return tmp_path / "jobs"


@pytest.fixture
def files(directory: Path, clock: FakeClock) -> FileStorage:
    return FileStorage(directory, clock=clock)


def _pipeline(outcome: str = "done") -> Pipeline[Any]:
    """fetch -> finish; ``finish`` ends with ``outcome``: done, fail or raise."""
    pipeline: Pipeline[Any] = Pipeline("intake")

    @pipeline.phase
    def fetch(ctx: PhaseContext[Any]) -> Next:
        for step in range(3):
            ctx.save_state({**ctx.state, "step": step})
        return Next("finish", {**ctx.state, "fetched": True})

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done | Fail:
        if outcome == "raise":
            raise RuntimeError("finish broke")
        return Fail("finish refused") if outcome == "fail" else Done({"ok": True})

    return pipeline


def _run(files: FileStorage, clock: FakeClock, job_id: str, outcome: str = "done", *, drain: bool = True) -> None:
    pipeline = _pipeline(outcome)
    scheduler = make_scheduler(pipeline, files, clock)
    run_pipeline(job_id, pipeline, storage=files, scheduler=scheduler, initial_state={"id": job_id})
    if drain:
        scheduler.drain()


def _visible(directory: Path) -> list[str]:
    """Names in the directory that are not hidden (the job files and their histories)."""
    return sorted(path.name for path in directory.iterdir() if not path.name.startswith("."))


def _job_files(directory: Path) -> list[str]:
    """The job files (not their histories)."""
    return [name for name in _visible(directory) if name.endswith(".json")]


def _stray_files(directory: Path) -> list[str]:
    """Regular files that are neither job files nor their histories (left-over temporary files, for instance)."""
    return sorted(
        path.name
        for path in directory.iterdir()
        if path.is_file() and not path.name.endswith((".json", ".history.jsonl"))
    )


def _health(files: FileStorage) -> dict[str, Any]:
    report: Any = files.health()
    return dict(report) if isinstance(report, dict) else dict(report.model_dump())


# --- files on disk ------------------------------------------------------------------------------


def test_each_job_is_one_json_file_with_its_wire_form_and_an_append_only_history(
    files: FileStorage, directory: Path, clock: FakeClock
) -> None:
    _run(files, clock, "job-a")
    _run(files, clock, "job-b", drain=False)

    assert _visible(directory) == ["job-a.history.jsonl", "job-a.json", "job-b.history.jsonl", "job-b.json"]
    assert _job_files(directory) == ["job-a.json", "job-b.json"]
    for job_id in ("job-a", "job-b"):
        content = json.loads((directory / f"{job_id}.json").read_text(encoding="utf-8"))
        job = job_of(files, job_id)
        assert content == job.model_copy(update={"log": [], "phases": []}).to_wire()
        assert content["jobId"] == job_id
        history = (directory / f"{job_id}.history.jsonl").read_text(encoding="utf-8").splitlines()
        assert [entry for line in history for entry in json.loads(line)["log"]] == [
            entry.to_wire() for entry in job.log
        ]
    running = json.loads((directory / "job-b.json").read_text(encoding="utf-8"))
    assert running["checkpoint"] == {"nextPhase": "fetch", "state": {"id": "job-b"}, "createdAt": clock()}


def test_the_directory_is_created_when_missing(tmp_path: Path, clock: FakeClock) -> None:
    nested = tmp_path / "a" / "b" / "jobs"
    files = FileStorage(nested, clock=clock)

    _run(files, clock, "job-a")

    assert (nested / "job-a.json").is_file()


def test_a_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    occupied = tmp_path / "jobs"
    occupied.write_text("not a directory", encoding="utf-8")

    with pytest.raises(InvalidInputError):
        FileStorage(occupied)


def test_jobs_survive_a_restart(directory: Path, clock: FakeClock) -> None:
    before_restart = FileStorage(directory, clock=clock)
    pipeline = _pipeline("raise")
    scheduler = make_scheduler(pipeline, before_restart, clock)
    run_pipeline("job-a", pipeline, storage=before_restart, scheduler=scheduler, initial_state={"id": "job-a"})
    scheduler.drain()

    after_restart = FileStorage(directory, clock=clock)
    job = job_of(after_restart, "job-a")

    assert job == job_of(before_restart, "job-a")
    assert job.status == JobStatus.ERROR
    assert job.checkpoint is not None
    assert job.checkpoint.next_phase == "finish"
    retry_pipeline = _pipeline("done")
    retry = make_scheduler(retry_pipeline, after_restart, clock)
    run_pipeline("job-a", retry_pipeline, storage=after_restart, scheduler=retry)
    retry.drain()
    assert job_of(after_restart, "job-a").result == {"ok": True}


def test_writes_leave_no_temporary_files_behind(files: FileStorage, directory: Path, clock: FakeClock) -> None:
    for index, outcome in enumerate(["done", "fail", "raise"]):
        _run(files, clock, f"job-{index}", outcome=outcome)
    _run(files, clock, "job-3", drain=False)
    pause_job("job-3", storage=files)
    cancel_job("job-2", storage=files)

    assert _stray_files(directory) == []
    for index in range(4):
        raw = json.loads((directory / f"job-{index}.json").read_bytes())
        assert Job.model_validate(raw) == job_of(files, f"job-{index}").model_copy(update={"log": [], "phases": []})


def test_a_failed_write_leaves_the_previous_file_intact(
    files: FileStorage, directory: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(files, clock, "job-a", outcome="fail")
    path = directory / "job-a.json"
    before = path.read_bytes()

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    monkeypatch.setattr(os, "fdatasync", disk_full, raising=False)
    pipeline = _pipeline()
    scheduler = make_scheduler(pipeline, files, clock)
    clock.advance(5)
    with pytest.raises((OSError, StorageError)):
        run_pipeline("job-a", pipeline, storage=files, scheduler=scheduler)
    monkeypatch.undo()

    assert path.read_bytes() == before
    assert _stray_files(directory) == []
    assert scheduler.pending() == 0
    assert job_of(files, "job-a").status == JobStatus.ERROR


def test_a_failed_write_is_reported_as_a_storage_error(
    files: FileStorage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(files, clock, "job-a", outcome="fail")

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    monkeypatch.setattr(os, "fdatasync", disk_full, raising=False)
    pipeline = _pipeline()
    with pytest.raises(CairnError) as info:
        run_pipeline("job-a", pipeline, storage=files, scheduler=make_scheduler(pipeline, files, clock))
    monkeypatch.undo()

    assert isinstance(info.value, StorageError)
    assert info.value.retryable


# --- corrupt files ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [b"", b"{not json", b'{"hello": "world"}', b"[]", b"\xff\xfe\x00", b'{"jobId": "job-b"}'],
)
def test_a_corrupt_file_is_named_but_does_not_hide_the_other_jobs(
    files: FileStorage, directory: Path, clock: FakeClock, content: bytes
) -> None:
    _run(files, clock, "job-a")
    _run(files, clock, "job-b")
    bad = directory / "job-b.json"
    bad.write_bytes(content)

    with pytest.raises(CorruptJobError) as info:
        files.get_job("job-b")

    assert str(bad) in str(info.value)
    assert info.value.location == str(bad)
    assert [job.job_id for job in files.list_jobs()] == ["job-a"]
    health = _health(files)
    assert health["healthy"] is False
    assert health["job_count"] == 1
    assert str(bad) in health["recommendation"]
    assert str(bad) in health.get("unreadable_files", [str(bad)])


def test_a_corrupt_job_is_neither_started_over_nor_advanced(
    files: FileStorage, directory: Path, clock: FakeClock
) -> None:
    _run(files, clock, "job-b", drain=False)
    bad = directory / "job-b.json"
    bad.write_bytes(b"{half a jo")
    pipeline = _pipeline()
    scheduler = make_scheduler(pipeline, files, clock)

    with pytest.raises(CorruptJobError):
        run_pipeline("job-b", pipeline, storage=files, scheduler=scheduler, retry_mode="full")
    scheduler.schedule_advance("job-b", phase="fetch")
    with pytest.raises(CorruptJobError):
        scheduler.drain()

    assert bad.read_bytes() == b"{half a jo", "an unreadable file is left for a person to look at"


# --- cleanup ------------------------------------------------------------------------------------


def _populate(files: FileStorage, clock: FakeClock) -> None:
    """Jobs finished an hour apart, plus a running and a paused job that started first.

    At the end the clock is 3 hours after the first finished job.
    """
    _run(files, clock, "running", drain=False)
    _run(files, clock, "paused", drain=False)
    pause_job("paused", storage=files)
    _run(files, clock, "done-old")
    clock.advance(HOUR)
    _run(files, clock, "failed")
    clock.advance(HOUR)
    _run(files, clock, "cancelled", drain=False)
    cancel_job("cancelled", storage=files)
    clock.advance(HOUR)
    _run(files, clock, "done-new")


def test_cleanup_keeps_the_newest_finished_jobs(files: FileStorage, directory: Path, clock: FakeClock) -> None:
    _populate(files, clock)

    removed = files.cleanup(keep=2)

    assert sorted(removed) == ["done-old", "failed"]
    assert _job_files(directory) == ["cancelled.json", "done-new.json", "paused.json", "running.json"]
    assert files.get_job("done-old") is None


def test_cleanup_removes_finished_jobs_older_than_max_age(
    files: FileStorage, directory: Path, clock: FakeClock
) -> None:
    _populate(files, clock)

    removed = files.cleanup(max_age=timedelta(minutes=150))

    assert removed == ["done-old"]
    assert _job_files(directory) == ["cancelled.json", "done-new.json", "failed.json", "paused.json", "running.json"]


def test_cleanup_never_removes_running_or_paused_jobs(files: FileStorage, directory: Path, clock: FakeClock) -> None:
    _populate(files, clock)

    removed = files.cleanup(keep=0, max_age=timedelta(0))

    assert sorted(removed) == ["cancelled", "done-new", "done-old", "failed"]
    assert _job_files(directory) == ["paused.json", "running.json"]
    assert job_of(files, "running").status == JobStatus.RUNNING
    assert job_of(files, "paused").status == JobStatus.PAUSED


def test_cleanup_without_limits_removes_only_expired_jobs(
    files: FileStorage, directory: Path, clock: FakeClock
) -> None:
    _populate(files, clock)
    assert files.cleanup() == []

    clock.advance(21 * HOUR)
    removed = files.cleanup()

    assert sorted(removed) == ["done-old", "paused", "running"]
    assert _job_files(directory) == ["cancelled.json", "done-new.json", "failed.json"]


def test_cleanup_leaves_unreadable_files_alone(files: FileStorage, directory: Path, clock: FakeClock) -> None:
    _run(files, clock, "done")
    (directory / "broken.json").write_bytes(b"garbage")

    removed = files.cleanup(keep=0)

    assert removed == ["done"]
    assert (directory / "broken.json").read_bytes() == b"garbage"


def test_cleanup_removes_stale_temporary_files_only(files: FileStorage, directory: Path, clock: FakeClock) -> None:
    _run(files, clock, "done")
    stale = directory / ".tmp-done-abandoned"
    fresh = directory / ".tmp-done-in-flight"
    stale.write_bytes(b"{")
    fresh.write_bytes(b"{")
    two_hours_ago = time.time() - 2 * HOUR
    os.utime(stale, (two_hours_ago, two_hours_ago))

    files.cleanup()

    assert not stale.exists()
    assert fresh.exists(), "another process may still be writing it"


def test_cleanup_refuses_a_negative_keep(files: FileStorage, clock: FakeClock) -> None:
    _run(files, clock, "done")

    with pytest.raises(InvalidInputError):
        files.cleanup(keep=-1)

    assert files.get_job("done") is not None


# --- health -------------------------------------------------------------------------------------


def test_health_of_an_empty_store(files: FileStorage) -> None:
    health = _health(files)

    assert health["healthy"] is True
    assert health["last_checkpoint_age"] is None
    assert health["job_count"] == 0
    assert health["can_recover"] is False
    assert isinstance(health["recommendation"], str)
    assert health["recommendation"]


def test_health_reports_a_stalled_job_that_can_be_resumed(files: FileStorage, clock: FakeClock) -> None:
    _run(files, clock, "stalled", drain=False)
    clock.advance(30)

    health = _health(files)

    assert health["healthy"] is True
    assert health["last_checkpoint_age"] == pytest.approx(30.0)
    assert health["job_count"] == 1
    assert health["can_recover"] is True
    assert "resume" in health["recommendation"].lower()


def test_health_age_follows_the_newest_checkpoint(files: FileStorage, clock: FakeClock) -> None:
    _run(files, clock, "older", outcome="raise")
    clock.advance(100)
    _run(files, clock, "newer", outcome="fail")
    clock.advance(7)

    health = _health(files)

    assert health["last_checkpoint_age"] == pytest.approx(7.0)
    assert health["job_count"] == 2
    assert health["can_recover"] is True


def test_health_with_only_finished_jobs_has_nothing_to_recover(files: FileStorage, clock: FakeClock) -> None:
    _run(files, clock, "done-1")
    _run(files, clock, "done-2")

    health = _health(files)

    assert health["healthy"] is True
    assert health["job_count"] == 2
    assert health["can_recover"] is False
    assert health["last_checkpoint_age"] is None


def test_health_does_not_count_expired_jobs(files: FileStorage, clock: FakeClock) -> None:
    _run(files, clock, "old", outcome="raise")
    clock.advance(25 * HOUR)

    health = _health(files)

    assert health["job_count"] == 0
    assert health["can_recover"] is False


# --- several processes --------------------------------------------------------------------------


def test_two_processes_sharing_a_directory_neither_corrupt_files_nor_double_commit(tmp_path: Path) -> None:
    directory = tmp_path / "jobs"
    runs = tmp_path / "runs"
    runs.mkdir()
    FileStorage(directory)
    own = [[f"w{worker}-job-{index}" for index in range(6)] for worker in range(2)]
    every = own[0] + own[1]
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    workers = [
        context.Process(
            target=file_worker.work,
            args=(str(directory), str(runs), own[worker], every, "shared-job", barrier),
        )
        for worker in range(2)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=90)
    for process in workers:
        if process.is_alive():
            process.kill()
    assert [process.exitcode for process in workers] == [0, 0]

    storage = FileStorage(directory)
    assert _stray_files(directory) == []
    assert _job_files(directory) == sorted(f"{job_id}.json" for job_id in [*every, "shared-job"])
    for job_id in every:
        job = job_of(storage, job_id)
        assert job.status == JobStatus.COMPLETE, job_id
        assert [(record.phase, record.outcome) for record in job.phases] == [
            ("a", "next"),
            ("b", "next"),
            ("c", "done"),
        ], job_id
        assert job.result == ["a", "b", "b_half", "owner"]
        lines = (runs / f"{job_id}.runs").read_text(encoding="utf-8").splitlines()
        runs_of_job = [line.split()[0] for line in lines]
        assert runs_of_job == ["a", "b", "c"], f"{job_id}: each phase must run exactly once"
    shared = job_of(storage, "shared-job")
    assert shared.status == JobStatus.COMPLETE
    assert [record.phase for record in shared.phases] == ["a", "b", "c"]
    assert shared.result == ["a", "b", "b_half"]


def test_a_transition_rewrites_only_the_small_job_file_whatever_the_history(
    files: FileStorage, directory: Path, clock: FakeClock
) -> None:
    pipeline: Pipeline[Any] = Pipeline("long")
    sizes: dict[int, int] = {}

    @pipeline.phase
    def loop(ctx: PhaseContext[Any]) -> Next | Done:
        count = ctx.state["count"] + 1
        sizes[count] = (directory / "long-1.json").stat().st_size
        ctx.log(f"loop {count}")
        return Next("loop", {"count": count}) if count < 300 else Done({"count": count})

    scheduler = make_scheduler(pipeline, files, clock)
    run_pipeline("long-1", pipeline, storage=files, scheduler=scheduler, initial_state={"count": 0})
    scheduler.drain()

    job = job_of(files, "long-1")
    assert job.result == {"count": 300}
    assert len(job.phases) == 300
    assert [entry.message for entry in job.log if entry.message.startswith("loop")][-1] == "loop 300"
    assert sizes[300] <= sizes[10] + 16, "the job file grows with the job's history"
    assert (directory / "long-1.history.jsonl").stat().st_size > 300 * sizes[10] // 10


def test_a_step_forces_to_disk_what_must_survive_a_power_cut_and_no_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim flushes its new file (never a torn job) but not the folder; a commit flushes its history, its file
    and the folder, so the job it leaves survives a power cut."""
    calls: list[str] = []
    real_fsync, real_fdatasync = os.fsync, os.fdatasync

    def fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    def fdatasync(fd: int) -> None:
        calls.append("fdatasync")
        real_fdatasync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "fdatasync", fdatasync)
    pipeline: Pipeline[Any] = Pipeline("steps")

    @pipeline.phase
    def only(ctx: PhaseContext[Any]) -> Done:
        calls.append("ran")
        return Done(None)

    jobs = Cairn(pipeline, storage=FileStorage(tmp_path / "jobs"), scheduler=InlineScheduler())
    jobs.start("steps", "job-1")
    calls.clear()
    jobs.run_until_idle()

    claim, commit = calls[: calls.index("ran")], calls[calls.index("ran") + 1 :]
    assert claim == ["fdatasync"]
    assert commit == ["fdatasync", "fdatasync", "fsync"]  # history, job file, folder
    assert jobs.get("job-1").status == "complete"
