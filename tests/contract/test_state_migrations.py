"""State that survives code changes, on every store: a checkpoint saved by a version-1 state model resumes
under a version-3 pipeline (``Pipeline(state_version=3, migrations={1: ..., 2: ...})``), each migration run
once; a state with no path forward stops the job in error with its checkpoint kept, and a retry with
the migration deployed completes it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from cairn import Cairn, Done, InlineScheduler, JobStatus, PhaseContext, Pipeline, WaitFor
from cairn.core.storage_port import Storage
from tests.state_versions import JOB, MIGRATED, V3, IntakeV3, v1_pipeline
from tests.support import FakeClock


def cairn(pipeline: Pipeline[Any], storage: Storage, clock: FakeClock) -> Cairn:
    return Cairn(pipeline, storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))


def started_v1(storage: Storage, clock: FakeClock, *, fail_at_check: bool = False) -> Cairn:
    """A v1 job, left waiting for "go" at ``finish`` (or in error at ``check``)."""
    jobs = cairn(v1_pipeline(fail_at_check=fail_at_check), storage, clock)
    jobs.start("intake", JOB, state={"document": "lease.pdf", "pages": 12})
    jobs.run_until_idle()
    expected = JobStatus.ERROR if fail_at_check else JobStatus.WAITING
    assert jobs.get(JOB).status == expected
    return jobs


def test_a_v1_pipeline_stores_no_state_version(storage: Storage, clock: FakeClock) -> None:
    jobs = started_v1(storage, clock)

    checkpoint = jobs.get(JOB).checkpoint
    assert checkpoint is not None
    assert checkpoint.state_version is None
    assert "stateVersion" not in checkpoint.to_wire()  # stored exactly as before versions existed


def test_a_signal_to_a_v1_wait_resumes_under_v3_with_each_migration_run_once(
    storage: Storage, clock: FakeClock
) -> None:
    started_v1(storage, clock)
    v3 = V3()
    jobs = cairn(v3.pipeline, storage, clock)

    jobs.signal(JOB, "go", {"ok": True})
    jobs.run_until_idle()

    job = jobs.get(JOB)
    assert job.status == JobStatus.COMPLETE, job.error
    assert job.result == MIGRATED
    assert v3.calls == Counter({1: 1, 2: 1})
    assert v3.seen == [("finish", MIGRATED)]


def test_a_resume_migrates_an_old_checkpoint_at_a_renamed_phase(storage: Storage, clock: FakeClock) -> None:
    started_v1(storage, clock, fail_at_check=True)  # checkpoint at "check", renamed "verify" in v3
    v3 = V3()
    jobs = cairn(v3.pipeline, storage, clock)

    jobs.retry(JOB)
    jobs.run_until_idle()

    job = jobs.get(JOB)
    assert job.status == JobStatus.WAITING, job.error
    assert v3.calls == Counter({1: 1, 2: 1})
    assert v3.seen == [("verify", MIGRATED), ("ask", {**MIGRATED, "reviewed": True})]
    assert job.checkpoint is not None
    assert job.checkpoint.state_version == 3
    assert jobs.entered(JOB, "ask").state_version == 3  # its history keeps the version too
    assert jobs.entered(JOB, "check").state_version is None  # the v1 entry as it was

    jobs.signal(JOB, "go")
    jobs.run_until_idle()

    assert jobs.get(JOB).status == JobStatus.COMPLETE
    assert v3.calls == Counter({1: 1, 2: 1})  # a v3 checkpoint is not migrated again


def test_a_rerun_from_a_v1_history_entry_is_migrated(storage: Storage, clock: FakeClock) -> None:
    started_v1(storage, clock)
    v3 = V3()
    jobs = cairn(v3.pipeline, storage, clock)

    jobs.retry(JOB, mode="from", phase="read")
    jobs.run_until_idle()

    assert jobs.get(JOB).status == JobStatus.WAITING
    assert v3.calls == Counter({1: 1, 2: 1})
    assert v3.seen[0] == ("read", MIGRATED)


def test_a_rerun_with_a_state_given_takes_the_current_model_without_migrating(
    storage: Storage, clock: FakeClock
) -> None:
    started_v1(storage, clock)
    v3 = V3()
    jobs = cairn(v3.pipeline, storage, clock)

    job = jobs.retry(JOB, mode="from", phase="finish", state={"title": "new.pdf", "page_count": 1, "reviewed": True})

    assert job.checkpoint is not None
    assert job.checkpoint.state_version == 3
    jobs.run_until_idle()
    assert jobs.get(JOB).result == {"title": "new.pdf", "page_count": 1, "reviewed": True}
    assert not v3.calls


def test_a_missing_migration_stops_the_job_with_its_checkpoint_kept_until_it_is_deployed(
    storage: Storage, clock: FakeClock
) -> None:
    before = started_v1(storage, clock, fail_at_check=True).get(JOB).checkpoint
    incomplete = V3(missing=2)
    jobs = cairn(incomplete.pipeline, storage, clock)

    jobs.retry(JOB)
    jobs.run_until_idle()

    job = jobs.get(JOB)
    assert job.status == JobStatus.ERROR
    assert job.error == (
        "State saved with version 1 cannot be migrated to version 3: no migration from version 2 "
        "(Pipeline(migrations={2: ...}))"
    )
    assert not incomplete.calls  # the path is checked before any migration runs
    assert job.checkpoint == before  # kept as it was: a retry resumes it
    fixed = V3()
    jobs = cairn(fixed.pipeline, storage, clock)
    jobs.retry(JOB)
    jobs.run_until_idle()
    assert jobs.get(JOB).status == JobStatus.WAITING
    assert fixed.calls == Counter({1: 1, 2: 1})
    jobs.signal(JOB, "go")
    jobs.run_until_idle()
    assert (jobs.get(JOB).status, jobs.get(JOB).result) == (JobStatus.COMPLETE, {**MIGRATED, "reviewed": True})


def test_a_migration_that_raises_is_named_and_the_job_keeps_its_checkpoint(storage: Storage, clock: FakeClock) -> None:
    before = started_v1(storage, clock, fail_at_check=True).get(JOB).checkpoint
    jobs = cairn(V3(broken=2).pipeline, storage, clock)

    jobs.retry(JOB)
    jobs.run_until_idle()

    job = jobs.get(JOB)
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert job.error.startswith("State saved with version 1 cannot be migrated to version 3: migration 2 (")
    assert "V3.broken" in job.error
    assert "KeyError" in job.error
    assert job.checkpoint == before


def test_a_migration_that_edits_its_input_then_raises_leaves_the_checkpoint_and_the_fix_resumes(
    storage: Storage, clock: FakeClock
) -> None:
    before = started_v1(storage, clock, fail_at_check=True).get(JOB).checkpoint
    v3 = V3()

    def half_done(state: dict[str, Any]) -> dict[str, Any]:
        state["title"] = state.pop("document")  # edited in place, then it fails
        raise ValueError("forgot pages")

    v3.pipeline.migrations[1] = half_done
    broken = cairn(v3.pipeline, storage, clock)
    broken.retry(JOB)
    broken.run_until_idle()
    assert broken.get(JOB).status == JobStatus.ERROR
    assert broken.get(JOB).checkpoint == before  # the state it was given is its own copy

    fixed = V3()
    jobs = cairn(fixed.pipeline, storage, clock)
    jobs.retry(JOB)
    jobs.run_until_idle()
    assert jobs.get(JOB).status == JobStatus.WAITING, jobs.get(JOB).error
    assert fixed.seen[0] == ("verify", MIGRATED)


def test_a_state_newer_than_the_code_is_refused_with_both_versions(storage: Storage, clock: FakeClock) -> None:
    started_v1(storage, clock, fail_at_check=True)
    v3 = V3()
    newer = cairn(v3.pipeline, storage, clock)
    newer.retry(JOB)
    newer.run_until_idle()  # now waiting for "go" with a v3 state
    older = cairn(v1_pipeline(), storage, clock)  # the code rolled back

    older.signal(JOB, "go")
    older.run_until_idle()
    job = older.get(JOB)
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert job.error.startswith("State saved with version 3 cannot be migrated to version 1: it is newer")
    assert job.checkpoint is not None
    assert job.checkpoint.state_version == 3


def test_a_migrated_state_that_does_not_fit_is_the_usual_clear_error(storage: Storage, clock: FakeClock) -> None:
    started_v1(storage, clock, fail_at_check=True)
    v3 = V3()
    v3.pipeline.migrations[2] = lambda state: {"title": state["title"]}  # forgets page_count and reviewed
    jobs = cairn(v3.pipeline, storage, clock)

    jobs.retry(JOB)
    jobs.run_until_idle()

    job = jobs.get(JOB)
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert job.error.startswith('Stored state does not fit pipeline "intake"')
    assert "page_count" in job.error


@pytest.mark.parametrize("storage_kind", ["file"], indirect=True)
def test_a_file_store_writes_the_version_only_when_it_is_not_1(
    storage: Storage, clock: FakeClock, tmp_path: Path
) -> None:
    started_v1(storage, clock, fail_at_check=True)
    root = tmp_path / "jobs"  # where the fixture's FileStorage keeps its files
    assert any(path.is_file() for path in root.rglob("*"))
    assert "stateVersion" not in "".join(path.read_text() for path in root.rglob("*") if path.is_file())

    jobs = cairn(V3().pipeline, storage, clock)
    jobs.retry(JOB)
    jobs.run_until_idle()

    assert '"stateVersion":3' in "".join(path.read_text() for path in root.rglob("*") if path.is_file())


def timed(model: type[Any], **options: Any) -> Pipeline[Any]:
    """``ask`` waits 60 s for "go", then goes on at ``late`` either way; ``late`` finishes with the state."""
    pipeline: Pipeline[Any] = Pipeline("timed", state=model, **options)

    @pipeline.phase
    def ask(ctx: PhaseContext[Any]) -> WaitFor:
        return WaitFor("go", "late", ctx.state, timeout=60, timeout_phase="late")

    @pipeline.phase
    def late(ctx: PhaseContext[Any]) -> Done:
        assert isinstance(ctx.state, model)
        return Done(ctx.state)

    return pipeline


class IntakeV2(BaseModel):
    """Version 2: ``document`` renamed ``title``."""

    title: str
    pages: int


def test_a_wait_that_times_out_under_new_code_keeps_the_version_of_the_state_it_kept(
    storage: Storage, clock: FakeClock
) -> None:
    old = cairn(timed(IntakeV2, state_version=2, migrations={1: V3().v1_to_v2}), storage, clock)
    old.start("timed", JOB, state={"title": "lease.pdf", "pages": 12})
    old.run_until_idle()
    waiting = old.get(JOB)
    assert waiting.status == JobStatus.WAITING
    clock.sleep(61)  # the wait's timeout passes while the new code is deployed
    v3 = V3()
    new = cairn(timed(IntakeV3, state_version=3, migrations=v3.pipeline.migrations), storage, clock)

    new.advance(JOB, phase="late", sequence=waiting.sequence)  # the timeout's scheduled advance
    new.run_until_idle()

    job = new.get(JOB)
    assert job.status == JobStatus.COMPLETE, job.error
    assert job.result == MIGRATED
    assert v3.calls == Counter({2: 1})  # saved as version 2, kept so through the timeout: only 2 -> 3 runs
