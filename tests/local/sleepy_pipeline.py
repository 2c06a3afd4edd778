"""A pipeline for the local stack's tests: a phase that overruns its timeout once, one that is killed once.

Copied into a scratch project as ``functions/sleepy/pipeline.py`` (see ``devstack.scratch_project``).
"""

from __future__ import annotations

import time

from pydantic import BaseModel

from cairn import Done, Next, PhaseContext, Pipeline, RetryPolicy


class Nap(BaseModel):
    """How long each phase's first attempt sleeps (0: not at all)."""

    overrun_seconds: float = 0.0
    hold_seconds: float = 0.0
    attempts: dict[str, int] = {}


pipeline = Pipeline("sleepy", state=Nap)


@pipeline.phase(timeout=2, retry=RetryPolicy(max_attempts=2, backoff=1.0))
def overrun(ctx: PhaseContext[Nap]) -> Next:
    """Sleeps past the 2-second timeout on its first attempt."""
    if ctx.attempt == 1 and ctx.state.overrun_seconds:
        time.sleep(ctx.state.overrun_seconds)
    state = ctx.state.model_copy(update={"attempts": {**ctx.state.attempts, "overrun": ctx.attempt}})
    return Next("hold", state)


@pipeline.phase(timeout=30, retry=RetryPolicy(max_attempts=2, backoff=1.0))
def hold(ctx: PhaseContext[Nap]) -> Done:
    """Sleeps on its first attempt, long enough for a test to kill its worker."""
    if ctx.attempt == 1 and ctx.state.hold_seconds:
        ctx.log("holding")
        time.sleep(ctx.state.hold_seconds)
    return Done({"attempts": {**ctx.state.attempts, "hold": ctx.attempt}})
