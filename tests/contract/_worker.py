"""A worker process for the multi-process contract test: it advances one shared job once.

The pipeline's ``work`` phase appends this process's id to a shared file
(opened with ``O_APPEND``) as its effect. The process exits with
:data:`ADVANCED` when its advance committed and :data:`NOTHING_TO_DO` when
advance_phase returned None.
"""

from __future__ import annotations

import os
import sys
from multiprocessing.synchronize import Barrier
from typing import Any

from cairn import Done, FileStorage, Next, PhaseContext, Pipeline, advance_phase

ADVANCED = 0
NOTHING_TO_DO = 3

PIPELINE: Pipeline[Any] = Pipeline("process-race")


@PIPELINE.phase
def work(ctx: PhaseContext[Any]) -> Next:
    fd = os.open(ctx.state["effect_file"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{os.getpid()}\n".encode())
    finally:
        os.close(fd)
    return Next("finish", {**ctx.state, "runs": ctx.state["runs"] + 1, "worker_pid": os.getpid()})


@PIPELINE.phase
def finish(ctx: PhaseContext[Any]) -> Done:
    return Done(ctx.state)


class DiscardingScheduler:
    """A scheduler port that drops every request (the test inspects the stored job instead)."""

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        return None


def advance_once(directory: str, job_id: str, barrier: Barrier) -> None:
    """Wait for every worker to be ready, advance ``work`` once, and exit with the outcome."""
    storage = FileStorage(directory)
    barrier.wait(timeout=60)
    job = advance_phase(job_id, PIPELINE, storage=storage, scheduler=DiscardingScheduler(), phase="work")
    sys.exit(ADVANCED if job is not None else NOTHING_TO_DO)
