"""A pipeline for the local stack's tests: a phase that overruns its timeout once, one that is killed once.

Copied into a scratch project as ``functions/sleepy/pipeline.py`` (see ``devstack.scratch_project``). ``overrun``
prints which worker runs each attempt, and when an attempt wakes from its sleep: ``cairn dev`` shows the lines,
so a test can tell a killed attempt (no line after its sleep, its worker gone) from one that ended on its own.
"""

from __future__ import annotations

import os
import time

from pydantic import BaseModel

from cairn import Done, Next, PhaseContext, Pipeline, RetryPolicy


class Nap(BaseModel):
    """How long each phase's first attempt sleeps (0: not at all)."""

    overrun_seconds: float = 0.0
    hold_seconds: float = 0.0
    attempts: dict[str, int] = {}


pipeline = Pipeline("sleepy", state=Nap)


@pipeline.phase(timeout=5, retry=RetryPolicy(max_attempts=2, backoff=1.0))
def overrun(ctx: PhaseContext[Nap]) -> Next:
    """Sleeps past the 5-second timeout on its first attempt (5 s: room for the second attempt on a busy machine)."""
    print(f"overrun attempt {ctx.attempt} runs in worker {os.getpid()}", flush=True)
    if ctx.attempt == 1 and ctx.state.overrun_seconds:
        time.sleep(ctx.state.overrun_seconds)
        print(f"overrun attempt {ctx.attempt} woke after {ctx.state.overrun_seconds:g}s", flush=True)
    state = ctx.state.model_copy(update={"attempts": {**ctx.state.attempts, "overrun": ctx.attempt}})
    return Next("hold", state)


@pipeline.phase(timeout=30, retry=RetryPolicy(max_attempts=2, backoff=1.0))
def hold(ctx: PhaseContext[Nap]) -> Done:
    """Sleeps on its first attempt, long enough for a test to kill its worker."""
    if ctx.attempt == 1 and ctx.state.hold_seconds:
        ctx.log("holding")
        time.sleep(ctx.state.hold_seconds)
    return Done({"attempts": {**ctx.state.attempts, "hold": ctx.attempt}})
