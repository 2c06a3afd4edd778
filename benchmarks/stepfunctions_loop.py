"""The Step Functions driver's loop, read from its state machine: the states one phase run passes through.

Standard workflows bill every state entered ($25 a million). A phase that goes straight on to the next one
(no delay) passes from its run (the phase's invoke, which reports the next advance: its function and sequence)
through the states that choose what follows, back to the next run. The loop is followed through the shipped
``pipeline.asl.json`` itself, so a change to the state machine changes the figure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ASL = Path(__file__).resolve().parents[1] / "layers" / "cairn" / "cairn" / "aws" / "pipeline.asl.json"
#: The phase run the loop leaves from and comes back to.
RUN = "RunPhase"
#: The choice after a phase run, and where it goes when the phase asked for its next advance at once (the choice
#: that tests the reply's ``next``).
AFTER, NEXT_VARIABLE = "AfterPhase", "$.invoked.Payload.next"


def _next(name: str, state: dict[str, Any]) -> str | None:
    """The state after ``name`` on a phase's straight path (no delay, a next advance asked for at once); None after
    a state that ends the execution."""
    if state["Type"] != "Choice":
        return None if "Next" not in state else str(state["Next"])
    choices = state.get("Choices", [])
    if name == AFTER:
        wanted = [choice["Next"] for choice in choices if NEXT_VARIABLE in json.dumps(choice)]
    else:
        wanted = [choice["Next"] for choice in choices if choice["Next"] == RUN]
    return str(wanted[0] if wanted else state["Default"])


def loop_states(asl: Path = ASL) -> list[str]:
    """The states one phase run enters, from the run to the choice of what follows it, back to the next run."""
    states = json.loads(asl.read_text())["States"]
    path, name = [RUN], _next(RUN, states[RUN])
    while name != RUN:
        if name is None or name in path or name not in states:
            raise ValueError(f"the loop from {RUN} does not come back to it: {[*path, name or 'the end']}")
        path.append(name)
        name = _next(name, states[name])
    return path


def lambda_tasks(asl: Path = ASL) -> int:
    """How many of the loop's states are Lambda invokes (the phase's own, and any the loop adds)."""
    states = json.loads(asl.read_text())["States"]
    return sum(states[name].get("Resource", "").endswith(":lambda:invoke") for name in loop_states(asl))
