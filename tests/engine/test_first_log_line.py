"""The line that opens each run of a job, through the front door: it says what happened, at which phase."""

from __future__ import annotations

from typing import Any

import pytest

from cairn import Cairn, Done, FileStorage, MemoryStorage, Next, PhaseContext, Pipeline, run_pipeline
from cairn.core.storage_port import Storage

FIRST_LINE = 'Job started at phase "load"'


def two_phases() -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("two-phases")

    @pipeline.phase
    def load(ctx: PhaseContext[Any]) -> Next:
        return Next("finish", ctx.state)

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        return Done({"ok": True})

    return pipeline


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Storage:
    return MemoryStorage() if request.param == "memory" else FileStorage(tmp_path / "jobs")


def test_a_fresh_job_started_through_the_front_door_logs_a_plain_start_first(store: Storage) -> None:
    pipeline = two_phases()
    app = Cairn(pipeline, storage=store)

    app.start(pipeline, "job-1", state={})

    assert [entry.message for entry in app.get("job-1").log] == [FIRST_LINE]
    app.run_until_idle()
    done = app.get("job-1")
    assert done.log[0].message == FIRST_LINE
    assert done.log[0].phase == "load"


def test_a_fresh_job_reads_the_same_whatever_mode_started_it(store: Storage) -> None:
    pipeline = two_phases()
    app = Cairn(pipeline, storage=store)

    run_pipeline("job-2", pipeline, storage=store, scheduler=app.scheduler, initial_state={}, retry_mode="full")

    assert [entry.message for entry in app.get("job-2").log] == [FIRST_LINE]


def test_a_restart_of_an_existing_job_names_its_mode(store: Storage) -> None:
    pipeline = two_phases()
    app = Cairn(pipeline, storage=store)
    app.start(pipeline, "job-3", state={})
    app.run_until_idle()

    app.retry("job-3", mode="full")

    assert [entry.message for entry in app.get("job-3").log] == ['Job started over at phase "load"']


def test_a_resume_says_it_retried_and_a_rerun_says_it_reran(store: Storage) -> None:
    pipeline = two_phases()
    app = Cairn(pipeline, storage=store)
    app.start(pipeline, "job-4", state={})
    app.cancel("job-4")

    app.retry("job-4")
    assert [entry.message for entry in app.get("job-4").log][-1] == 'Job retried (resume) at phase "load"'
    app.run_until_idle()

    app.retry("job-4", mode="from", phase="finish", by="alice")
    assert [entry.message for entry in app.get("job-4").log][-1].startswith('Job rerun from phase "finish" by alice')
