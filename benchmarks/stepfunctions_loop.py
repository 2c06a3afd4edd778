"""The Step Functions driver's loop, read from its state machine: the states one phase run passes through.

Standard workflows bill every state entered ($25 a million). A phase that goes straight on to the next one
(no delay) passes, from the state after the phase back to the phase: continue with the advance the phase
reported (its function and sequence), run it (the phase's invoke), and choose what follows. The loop is
followed through the shipped ``pipeline.asl.json`` itself, so a change to the state machine changes the
figure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ASL = Path(__file__).resolve().parents[1] / "layers" / "cairn" / "cairn" / "aws" / "pipeline.asl.json"
#: Where the loop leaves a phase run that asked for the next advance, and the phase run it comes back to.
FOLLOW, RUN = "ContinueAdvance", "RunPhase"


def _next(name: str, state: dict[str, Any]) -> str:
    """The state after ``name`` on a phase's straight path: no delay, a phase to run, a next advance asked for."""
    if state["Type"] != "Choice":
        return str(state["Next"])
    targets = [choice["Next"] for choice in state.get("Choices", [])]
    for wanted in (RUN, FOLLOW):
        if wanted in targets:
            return wanted
    return str(state["Default"])


def loop_states(asl: Path = ASL) -> list[str]:
    """The states one phase run enters, from following the previous advance to choosing what follows it."""
    states = json.loads(asl.read_text())["States"]
    path, name = [FOLLOW], _next(FOLLOW, states[FOLLOW])
    while name != FOLLOW:
        if name in path or len(path) > len(states):
            raise ValueError(f"the loop from {FOLLOW} does not come back to it: {[*path, name]}")
        path.append(name)
        name = _next(name, states[name])
    return path


def lambda_tasks(asl: Path = ASL) -> int:
    """How many of the loop's states are Lambda invokes (the phase's own, and any the loop adds)."""
    states = json.loads(asl.read_text())["States"]
    return sum(states[name].get("Resource", "").endswith(":lambda:invoke") for name in loop_states(asl))
