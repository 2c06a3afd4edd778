"""A pipeline for the dashboard's browser tests: a map whose items a test holds, to see it mid-run.

``spread`` maps ``hold_item`` over ``holds`` (one item each), then ``gathered`` counts them. An item holds
while the file it names exists (at most a minute); an empty name finishes at once.

Copied into a scratch project as ``functions/held_map/pipeline.py`` (see ``devstack.scratch_project``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cairn import Done, Map, PhaseContext, Pipeline

STEP_SECONDS = 0.05
HOLD_LIMIT = 60.0
"""The longest an item holds for a file that is never removed."""


class HeldMap(BaseModel):
    """The files the map's items hold on (one item each; "": no hold)."""

    model_config = ConfigDict(extra="forbid")

    holds: list[str] = Field(default_factory=list, max_length=50)


pipeline = Pipeline("held-map", state=HeldMap)


@pipeline.phase(timeout=10)
def spread(ctx: PhaseContext[HeldMap]) -> Map:
    """One item per file of ``holds``."""
    return Map(ctx.state.holds, phase="hold_item", then="gathered", max_concurrency=10)


@pipeline.phase(timeout=90)
def hold_item(ctx: PhaseContext[Any]) -> Done:
    """Holds while the item's file exists."""
    held = Path(ctx.state) if ctx.state else None
    deadline = time.monotonic() + HOLD_LIMIT
    while held is not None and held.exists() and time.monotonic() < deadline:
        time.sleep(STEP_SECONDS)
    return Done(ctx.state)


@pipeline.phase(timeout=10)
def gathered(ctx: PhaseContext[HeldMap]) -> Done:
    """How many items ran."""
    return Done({"items": len(ctx.results or [])})
