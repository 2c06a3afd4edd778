"""A pipeline for the local stack's tests of waits: a phase that sleeps (two hours by default), then one that wakes.

Copied into a scratch project as ``functions/napping/pipeline.py`` (see ``devstack.scratch_project``).
"""

from __future__ import annotations

from pydantic import BaseModel

from cairn import Done, PhaseContext, Pipeline, Sleep
from cairn.core.clock import system_clock_ms


class Nap(BaseModel):
    """How long to sleep, and when (the functions' clock, Unix ms) the nap began."""

    seconds: float = 7200.0
    dozed_at: int | None = None


pipeline = Pipeline("napping", state=Nap)


@pipeline.phase(timeout=10)
def doze(ctx: PhaseContext[Nap]) -> Sleep:
    """Sleeps ``seconds`` before ``wake``."""
    return Sleep(ctx.state.seconds, "wake", ctx.state.model_copy(update={"dozed_at": system_clock_ms()}))


@pipeline.phase(timeout=10)
def wake(ctx: PhaseContext[Nap]) -> Done:
    """Says when it woke, by the functions' clock."""
    woke_at = system_clock_ms()
    ctx.log(f"awake after {(woke_at - (ctx.state.dozed_at or woke_at)) / 1000:g}s")
    return Done({"dozed_at": ctx.state.dozed_at, "woke_at": woke_at})
