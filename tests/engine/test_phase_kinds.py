"""Phase kinds: the core's plug-in point that agent and plan phases register with."""

from __future__ import annotations

from typing import Any

import pytest

from cairn import Done, PhaseContext, Pipeline
from cairn.agents import AgentPhase, PlanPhase, ScriptedModel
from cairn.core import pipeline as phase_kinds
from cairn.core.errors import PipelineError
from cairn.core.outcomes import PhaseResult


def test_importing_cairn_registers_the_agent_and_plan_kinds() -> None:
    assert {"agent", "plan"} <= set(phase_kinds.phase_kinds())


def test_agent_and_plan_phases_are_built_by_the_agents_package_and_named_after_the_caller() -> None:
    pipeline: Pipeline[Any] = Pipeline("kinds")
    agent = pipeline.agent_phase("think", model=ScriptedModel([]), prompt="Go.")
    plan = pipeline.plan_phase("act", plan=lambda state: state["plan"])

    assert isinstance(agent, AgentPhase)
    assert isinstance(plan, PlanPhase)
    assert agent.__module__ == plan.__module__ == __name__
    assert pipeline.phase_names == ["think", "act"]
    assert pipeline.get_phase("think").run is agent


def test_a_kind_no_plug_in_registered_is_a_clear_pipeline_error() -> None:
    with pytest.raises(PipelineError, match=r'No phase kind "missing" is registered \(registered: .*agent'):
        phase_kinds.phase_builder("missing")


def test_a_second_builder_for_a_registered_kind_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(phase_kinds, "_BUILDERS", dict(phase_kinds._BUILDERS))

    def build(pipeline: Pipeline[Any], name: str, /, **options: Any) -> phase_kinds.PhaseCode:
        def run(ctx: PhaseContext[Any]) -> PhaseResult:
            return Done(options)

        pipeline.phase(name=name)(run)
        return run

    with pytest.raises(PipelineError, match='Phase kind "agent" is already registered'):
        phase_kinds.register_phase_kind("agent", build)
    phase_kinds.register_phase_kind("echo", build)
    phase_kinds.register_phase_kind("echo", build)  # the same builder again is harmless

    pipeline: Pipeline[Any] = Pipeline("custom")
    code = phase_kinds.phase_builder("echo")(pipeline, "say", word="hi")
    assert pipeline.get_phase("say").run is code
