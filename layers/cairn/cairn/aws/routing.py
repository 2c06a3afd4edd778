"""Which Lambda function runs a phase: the one home of the rule the direct driver and the state machine share.

A phase runs in its own function, ``<prefix><pipeline>-<phase>`` under the
phase's current name (a checkpoint may still name it by an alias; the name
itself is :func:`cairn.core.naming.function_name`'s). A phase the
pipeline does not know goes to the scheduler function, which records it on
the job as an unknown phase (the ``{"action": "advance"}`` event).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..core.errors import SchedulingError
from ..core.pipeline import Pipeline
from ..core.settings import Settings
from ..scheduling.messages import AdvanceMessage


def function_for(pipeline: Pipeline[Any], phase: str, settings: Settings) -> str:
    """The function that runs ``phase`` of ``pipeline``; for an unknown phase the scheduler's ("" without one)."""
    if pipeline.has_phase(phase):
        return settings.phase_function(pipeline.name, pipeline.resolve_name(phase))
    return settings.scheduler_function or ""


class Invocation(NamedTuple):
    """What to invoke for one advance: the function and its event."""

    function: str
    payload: dict[str, Any]


def invocation_for(message: AdvanceMessage, pipeline: Pipeline[Any], settings: Settings) -> Invocation:
    """The function that runs ``message``'s phase and the event it takes.

    An unknown phase goes to the scheduler function as ``{"action": "advance", ...}``;
    without a scheduler function it cannot be reported: SchedulingError.
    """
    function = function_for(pipeline, message.phase, settings)
    if pipeline.has_phase(message.phase):
        return Invocation(function, message.to_wire())
    if not function:
        raise SchedulingError("An unknown phase is reported through the scheduler (CAIRN_SCHEDULER_FUNCTION)")
    return Invocation(function, {"action": "advance", **message.to_wire()})
