"""Agent phases: conversations, the model port, tools, an offline scripted model, the agent loop and plans.

Core: no AWS here. The Bedrock model is ``cairn.aws.bedrock.BedrockModel``. Importing this package
registers the "agent" and "plan" phase kinds with the core (:func:`cairn.core.pipeline.register_phase_kind`), which
``Pipeline.agent_phase`` and ``Pipeline.plan_phase`` build with; :mod:`cairn` imports it.

Importing it loads none of its modules: each name is imported from its module on first use (PEP 562), and
the agent loop and the plans with the first phase of their kind, so a deployment whose pipelines have no
agent phase never loads them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..core.errors import ModelError
from ..core.pipeline import PhaseCode, Pipeline, register_phase_kind

if TYPE_CHECKING:
    from .agent_phase import AgentPhase, AgentRun
    from .messages import ContentBlock, Message, ModelTurn, StopReason, TextBlock, ToolResult, ToolUse, Usage
    from .model import Model, ToolSpec
    from .plans import Plan, PlanPhase, PlanProgress, PlanStep, PlanStepFailed
    from .scripted import ScriptedModel, ScriptedRequest
    from .tools import Tool, Toolset, tool

#: The module of each name this package exports (imported on first use).
_EXPORTS = {
    "AgentPhase": ".agent_phase",
    "AgentRun": ".agent_phase",
    "ContentBlock": ".messages",
    "Message": ".messages",
    "ModelTurn": ".messages",
    "StopReason": ".messages",
    "TextBlock": ".messages",
    "ToolResult": ".messages",
    "ToolUse": ".messages",
    "Usage": ".messages",
    "Model": ".model",
    "ToolSpec": ".model",
    "Plan": ".plans",
    "PlanPhase": ".plans",
    "PlanProgress": ".plans",
    "PlanStep": ".plans",
    "PlanStepFailed": ".plans",
    "ScriptedModel": ".scripted",
    "ScriptedRequest": ".scripted",
    "Tool": ".tools",
    "Toolset": ".tools",
    "tool": ".tools",
}

__all__ = [
    "AgentPhase",
    "AgentRun",
    "ContentBlock",
    "Message",
    "Model",
    "ModelError",
    "ModelTurn",
    "Plan",
    "PlanPhase",
    "PlanProgress",
    "PlanStep",
    "PlanStepFailed",
    "ScriptedModel",
    "ScriptedRequest",
    "StopReason",
    "TextBlock",
    "Tool",
    "ToolResult",
    "ToolSpec",
    "ToolUse",
    "Toolset",
    "Usage",
    "tool",
]


def __getattr__(name: str) -> Any:
    """A name of :data:`__all__`, imported from its module on first use and kept."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _build_agent_phase(pipeline: Pipeline[Any], name: str, /, **options: Any) -> PhaseCode:
    """The "agent" phase kind's builder: :func:`cairn.agents.agent_phase.build`."""
    from .agent_phase import build  # lazy: the agent loop loads with the first agent phase a pipeline registers

    return build(pipeline, name, **options)


def _build_plan_phase(pipeline: Pipeline[Any], name: str, /, **options: Any) -> PhaseCode:
    """The "plan" phase kind's builder: :func:`cairn.agents.plans.build`."""
    from .plans import build  # lazy: the plans load with the first plan phase a pipeline registers

    return build(pipeline, name, **options)


register_phase_kind("agent", _build_agent_phase)
register_phase_kind("plan", _build_plan_phase)
