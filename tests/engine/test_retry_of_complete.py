"""A retry (resume) of a complete job through the front door is refused and changes nothing; the seed's
``run_pipeline`` keeps its own rule (no checkpoint: a fresh start)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cairn import (
    Cairn,
    Done,
    FileStorage,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    TransitionRefusedError,
    run_pipeline,
)

REFUSAL = 'Job "job-1" is already complete; Start over (mode full) runs it again'


def counted(ran: list[str]) -> Pipeline[Any]:
    """Two phases, each noting in ``ran`` that it ran (its side effect)."""
    pipeline: Pipeline[Any] = Pipeline("counted")

    @pipeline.phase
    def send(ctx: PhaseContext[Any]) -> Next:
        ran.append("send")
        return Next("finish", ctx.state)

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        ran.append("finish")
        return Done({"sent": True})

    return pipeline


def stored_bytes(directory: Path) -> dict[str, bytes]:
    """Every file the store holds, byte for byte."""
    return {
        str(path.relative_to(directory)): path.read_bytes() for path in sorted(directory.rglob("*")) if path.is_file()
    }


@pytest.mark.parametrize("state", [None, {"again": True}])
def test_a_resume_of_a_complete_job_is_refused_and_changes_nothing(tmp_path: Path, state: Any) -> None:
    ran: list[str] = []
    app = Cairn(counted(ran), storage=FileStorage(tmp_path / "jobs"))
    app.start("counted", "job-1", state={})
    app.run_until_idle()
    before = stored_bytes(tmp_path / "jobs")

    with pytest.raises(TransitionRefusedError) as refused:
        app.retry("job-1", state=state)

    assert str(refused.value) == REFUSAL
    assert stored_bytes(tmp_path / "jobs") == before
    assert app.run_until_idle() == 0
    assert ran == ["send", "finish"]  # no side effect ran twice


def test_start_over_runs_a_complete_job_again() -> None:
    ran: list[str] = []
    app = Cairn(counted(ran))
    app.start("counted", "job-1", state={})
    app.run_until_idle()

    app.retry("job-1", mode="full")
    app.run_until_idle()

    assert ran == ["send", "finish", "send", "finish"]
    assert app.get("job-1").status == JobStatus.COMPLETE


def test_the_seeds_run_pipeline_still_starts_a_complete_job_fresh_on_resume() -> None:
    ran: list[str] = []
    pipeline = counted(ran)
    app = Cairn(pipeline)
    app.start(pipeline, "job-1", state={})
    app.run_until_idle()

    run_pipeline("job-1", pipeline, storage=app.storage, scheduler=app.scheduler, retry_mode="resume")
    app.run_until_idle()

    assert ran == ["send", "finish", "send", "finish"]
