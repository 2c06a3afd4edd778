"""A pipeline for the local stack's test of reads racing saves: one phase saving a large state every few ms.

Copied into a scratch project as ``functions/churning/pipeline.py`` (see ``devstack.scratch_project``). Each save
holds ``pad_chars`` of random text, above the size at which a state goes to S3, so each save replaces the
``saves/`` object the job item names and removes the old one. It saves until ``seconds`` have passed.
"""

from __future__ import annotations

import base64
import os
import time

from pydantic import BaseModel

from cairn import Done, PhaseContext, Pipeline


class Churn(BaseModel):
    """How long to keep saving, how large each saved state is, and how many saves so far."""

    seconds: float = 300.0
    pad_chars: int = 16_000
    saves: int = 0
    pad: str = ""


pipeline = Pipeline("churning", state=Churn)


@pipeline.phase(timeout=600)
def churn(ctx: PhaseContext[Churn]) -> Done:
    """Saves a new state of ``pad_chars`` random characters every 3 ms for ``seconds``."""
    state = ctx.state
    ends = time.monotonic() + state.seconds
    while time.monotonic() < ends:
        pad = base64.b64encode(os.urandom(state.pad_chars)).decode()[: state.pad_chars]
        state = state.model_copy(update={"saves": state.saves + 1, "pad": pad})
        ctx.save_state(state)
        time.sleep(0.003)
    return Done({"saves": state.saves})
