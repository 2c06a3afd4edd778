"""A pipeline for the dashboard's browser tests: a phase that fails while a gate is closed, a hold, a signal.

``gather`` -> ``check`` -> ``finish``. ``gather`` holds ``hold_seconds``, or while the file
``hold_while`` exists (so that a test can pause or cancel the job while it runs, however loaded the
machine), then goes on to ``check``, or first waits for the signal ``wait_for`` when one is named.
``check`` fails while the file ``gate`` reads "closed" (a test opens it, then retries), and raises
TypeError (a bug in the user's code) while it reads "broken". Every phase that
runs adds its name to ``ran`` and logs "ran <phase>", so that a test can tell which phases a retry ran
again.

Copied into a scratch project as ``functions/gated/pipeline.py`` (see ``devstack.scratch_project``).
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cairn import Done, Fail, Next, PhaseContext, Pipeline, WaitFor

STEP_SECONDS = 0.05
BULK_ALPHABET = "αβγδεζηθικλμνξοπρστυφχψω漢字かな"
"""What a large result is written in: each character takes six bytes of a reply once escaped."""
HOLD_WHILE_LIMIT = 60.0
"""The longest ``gather`` holds for a ``hold_while`` file that is never removed."""


class Gated(BaseModel):
    """The gate's file, how long ``gather`` holds, the signal to wait for, what ran and what was said."""

    model_config = ConfigDict(extra="forbid")

    gate: str = ""
    """A file: while it reads "closed", ``check`` fails. Empty: no gate."""
    hold_seconds: float = Field(default=0.0, ge=0.0, le=60.0)
    hold_while: str = ""
    """A file: ``gather`` holds while it exists (at most 60 s). Empty: hold ``hold_seconds``."""
    wait_for: str | None = None
    wait_timeout: float | None = Field(default=None, gt=0, le=86_400)
    """How long ``gather``'s wait for ``wait_for`` lasts (None: until the job's TTL)."""
    note: str = ""
    result_characters: int = Field(default=0, ge=0, le=4_000_000)
    """Random non-ASCII characters ``finish`` adds to the result (``bulk``): a million escape to 6 MB of reply."""
    ran: list[str] = Field(default_factory=list)
    signal: Any = None


class Approval(BaseModel):
    """The payload of the ``approval`` signal, which the pipeline declares (other signals take any JSON)."""

    model_config = ConfigDict(extra="forbid")

    approved: bool
    note: str = ""


pipeline = Pipeline("gated", state=Gated, signals={"approval": Approval})


def ran(ctx: PhaseContext[Gated], **changes: Any) -> Gated:
    """The state with this phase added to ``ran`` (and ``changes``), and a log line saying it ran."""
    ctx.log(f"ran {ctx.phase}")
    return ctx.state.model_copy(update={"ran": [*ctx.state.ran, ctx.phase], **changes})


@pipeline.phase(timeout=90)
def gather(ctx: PhaseContext[Gated]) -> Next | WaitFor:
    """Holds ``hold_seconds`` or while ``hold_while`` exists, then goes on to ``check`` (after the awaited signal)."""
    held = Path(ctx.state.hold_while) if ctx.state.hold_while else None
    deadline = time.monotonic() + (HOLD_WHILE_LIMIT if held else ctx.state.hold_seconds)
    while time.monotonic() < deadline and (held is None or held.exists()):
        time.sleep(min(STEP_SECONDS, max(deadline - time.monotonic(), 0.0)))
    state = ran(ctx)
    if ctx.state.wait_for:
        return WaitFor(ctx.state.wait_for, "check", state, timeout=ctx.state.wait_timeout)
    return Next("check", state)


@pipeline.phase(timeout=10)
def check(ctx: PhaseContext[Gated]) -> Next | Fail:
    """Fails while the gate reads "closed"; keeps the signal's payload, if one came."""
    gate = Path(ctx.state.gate) if ctx.state.gate else None
    position = gate.read_text().strip() if gate is not None and gate.is_file() else ""
    if gate is not None and position == "closed":
        ctx.log(f"the gate {gate.name} is closed", level="error")
        return Fail(f"The gate {gate.name} is closed")
    if position == "broken":
        return Next("finish", _count_passes(ctx.state.note))
    return Next("finish", ran(ctx, signal=ctx.signal if ctx.signal is not None else ctx.state.signal))


def _count_passes(note: Any) -> Any:
    return note + 1  # a str note: TypeError, from the user's code


@pipeline.phase(timeout=10)
def finish(ctx: PhaseContext[Gated]) -> Done:
    """The result: what ran, the note and the signal's payload (and ``result_characters`` of random text)."""
    state = ran(ctx)
    result = {"ran": state.ran, "note": state.note, "signal": state.signal}
    if state.result_characters:
        result["bulk"] = "".join(random.Random(0).choices(BULK_ALPHABET, k=state.result_characters))
    return Done(result)
