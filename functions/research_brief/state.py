"""The state the research-brief phases share, as stored in each checkpoint."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from cairn.agents import AgentRun, Plan, PlanProgress


class Review(BaseModel):
    """The reviewer's answer, delivered as the ``approval`` signal's payload."""

    # defer_build: the validator is built on first use, not at import (most phase functions never use it).
    model_config = ConfigDict(extra="forbid", defer_build=True)

    approved: bool
    note: str | None = Field(default=None, max_length=2000)
    """What the reviewer wants kept in mind; kept as a lesson for later briefs."""


class BriefState(BaseModel):
    """The question in, and what each phase adds: the plan, its progress, the draft and its reviews."""

    # defer_build: the validator is built on first use, not at import (another pipeline's functions never use it).
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"question": "Why do long jobs need checkpoints?"}]},
        defer_build=True,
    )

    question: str = Field(min_length=3, max_length=500)
    plan: Plan | None = None
    plan_progress: PlanProgress | None = None
    agent: AgentRun | None = None
    """The conversation of the agent phase in flight (plan, write); cleared when it ends."""
    draft: str | None = None
    feedback: list[str] = Field(default_factory=list)
    """The notes of reviews that sent the draft back."""
