"""Agent phases: conversations, the model port, tools, an offline scripted model, the agent loop and plans.

Core: no AWS here. The Bedrock model is ``cairn.aws.bedrock.BedrockModel``. Importing this package
registers the "agent" and "plan" phase kinds with the core (:func:`cairn.core.pipeline.register_phase_kind`), which
``Pipeline.agent_phase`` and ``Pipeline.plan_phase`` build with; :mod:`cairn` imports it.
"""

from __future__ import annotations

from ..core.errors import ModelError
from ..core.pipeline import register_phase_kind
from . import agent_phase, plans
from .agent_phase import AgentPhase, AgentRun
from .messages import ContentBlock, Message, ModelTurn, StopReason, TextBlock, ToolResult, ToolUse, Usage
from .model import Model, ToolSpec
from .plans import Plan, PlanPhase, PlanProgress, PlanStep, PlanStepFailed
from .scripted import ScriptedModel, ScriptedRequest
from .tools import Tool, Toolset, tool

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

register_phase_kind("agent", agent_phase.build)
register_phase_kind("plan", plans.build)
