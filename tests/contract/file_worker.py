"""A worker process for the FileStorage concurrency test: it starts jobs and advances every job it sees.

It runs in a separate OS process (multiprocessing 'spawn'), so it must be importable on its own.
Each phase run appends its phase name and process id to ``<runs>/<job id>.runs`` so the test can count executions.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Protocol

from cairn import (
    Done,
    FileStorage,
    InlineScheduler,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    advance_phase,
    run_pipeline,
)


class Barrier(Protocol):
    def wait(self, timeout: float | None = None) -> int: ...


def note_run(runs: Path, job_id: str, phase: str) -> None:
    """Record one execution of ``phase`` for ``job_id`` (one small O_APPEND write)."""
    with open(runs / f"{job_id}.runs", "a", encoding="utf-8") as handle:
        handle.write(f"{phase} {os.getpid()}\n")


def build_pipeline(runs: Path) -> Pipeline[Any]:
    """a -> b -> c; each phase notes its run and adds to the state."""
    pipeline: Pipeline[Any] = Pipeline("concurrent")

    @pipeline.phase
    def a(ctx: PhaseContext[Any]) -> Next:
        note_run(runs, ctx.job_id, "a")
        return Next("b", {**ctx.state, "a": True})

    @pipeline.phase
    def b(ctx: PhaseContext[Any]) -> Next:
        note_run(runs, ctx.job_id, "b")
        ctx.save_state({**ctx.state, "b_half": True})
        return Next("c", {**ctx.state, "b": True})

    @pipeline.phase
    def c(ctx: PhaseContext[Any]) -> Done:
        note_run(runs, ctx.job_id, "c")
        return Done(sorted(ctx.state))

    return pipeline


def work(directory: str, runs: str, own: list[str], every: list[str], shared: str, barrier: Barrier) -> None:
    """Start ``own`` jobs and a full restart of ``shared``, then advance every job until all are complete."""
    storage = FileStorage(directory)
    pipeline = build_pipeline(Path(runs))
    scheduler = InlineScheduler()  # advances are found by polling the store, not by draining this queue
    barrier.wait(timeout=60)
    run_pipeline(shared, pipeline, storage=storage, scheduler=scheduler, initial_state={}, retry_mode="full")
    for job_id in own:
        run_pipeline(job_id, pipeline, storage=storage, scheduler=scheduler, initial_state={"owner": job_id})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        unfinished = False
        for job_id in [*every, shared]:
            job = storage.get_job(job_id)
            if job is None or job.status == JobStatus.RUNNING:
                unfinished = True
            if job is not None and job.status == JobStatus.RUNNING and job.checkpoint is not None:
                advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, phase=job.checkpoint.next_phase)
        if not unfinished:
            return
    raise TimeoutError("jobs did not all complete in time")
