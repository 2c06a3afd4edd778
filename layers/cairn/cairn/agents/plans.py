"""Typed plans: steps an agent decided on, run by a plan phase with a checkpoint after each top-level step.

A :class:`Plan` has an ``id`` and top-level ``steps``. A step calls a tool (``tool`` with ``input``),
runs a phase of the pipeline in-process on its input (``phase``: the phase returns ``Done(result)``,
as a map's item phase does), or groups ``steps`` of its own. ``each`` repeats a step once per input
(a loop), ``when`` runs it only when a saved value is truthy (a branch), ``save_as`` keeps its result
as a saved value, and an input value ``{"$saved": "name"}`` is replaced by a saved value.

``pipeline.plan_phase(name, plan=..., tools=[...], next=...)`` runs the plan from the first step not
yet completed. After each successful top-level step it saves its :class:`PlanProgress` (the plan's
id, the run's id, how many top-level steps are complete, their results, the saved values and the
usage they added) in one field of the state; what a step does inside (its loop, its branches, its
nested steps) shares that step's checkpoint and runs again whole if the step is cut short. A resume
continues at the next step only when the stored plan id is the plan's; a plan with another id is
refused with a message that offers Start over.

Each entry of the phase is its own run (the rule of :mod:`cairn.agents.progress`): the progress is
handed to the next phase marked finished, so a pipeline that comes back to the plan phase runs its
steps again, as a new run with its own id (``<job id>/<phase>/<entry>``), while a crash or a retry
before the phase moved on continues the unfinished run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from ..core.errors import CairnError, InvalidInputError, PipelineError
from ..core.failures import message_of
from ..core.outcomes import Done, Fail, Next, PhaseResult
from ..core.pipeline import NAME_PATTERN, to_json
from ..core.retry import RetryPolicy
from . import progress as progress_field
from .messages import ToolUse
from .tools import Tool, Toolset

if TYPE_CHECKING:
    from ..core.context import PhaseContext
    from ..core.pipeline import Pipeline

STEP_ID_PATTERN = NAME_PATTERN.pattern


class PlanStepFailed(CairnError):
    """A plan step failed (a tool's error, a phase's ``Fail``); retryable: the step runs again on retry."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


DEFAULT_RETRY = RetryPolicy(max_attempts=3, backoff=2.0, retry_on=(PlanStepFailed,))
"""A plan phase's attempts: a failed step is tried again (the steps before it are not)."""


class PlanStep(BaseModel):
    """One step of a plan: a tool call, a phase run in-process, or a group of steps."""

    # defer_build: the validator is built on first use, not at import (a cold start uses few of these models).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    id: str = Field(pattern=STEP_ID_PATTERN)
    tool: str | None = None
    phase: str | None = None
    steps: list[PlanStep] = Field(default_factory=list)
    input: dict[str, JsonValue] = Field(default_factory=dict)
    each: list[dict[str, JsonValue]] | None = None
    """Run the step once per entry (each merged over ``input``); its result is the list of results."""
    when: str | None = None
    """Run the step only when the saved value of this name is truthy; else its result is None."""
    save_as: str | None = None
    """Keep the step's result as the saved value of this name."""

    @model_validator(mode="after")
    def _one_kind(self) -> PlanStep:
        kinds = [kind for kind in ("tool", "phase") if getattr(self, kind)] + (["steps"] if self.steps else [])
        if len(kinds) != 1:
            raise ValueError(f'step "{self.id}" needs exactly one of tool, phase or steps (got {kinds or "none"})')
        return self


class Plan(BaseModel):
    """A typed plan: its id (a resume continues only the same plan) and its top-level steps."""

    # defer_build: the validator is built on first use, not at import (a cold start uses few of these models).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    id: str = Field(pattern=STEP_ID_PATTERN)
    goal: str = ""
    steps: list[PlanStep] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> Plan:
        seen: set[str] = set()
        for step in _walk(self.steps):
            if step.id in seen:
                raise ValueError(f'two steps of plan "{self.id}" have the id "{step.id}"')
            seen.add(step.id)
        return self

    @classmethod
    def parse(cls, text: str) -> Plan:
        """A plan from a model's answer: its JSON (a fenced ```json block, or the first ``{`` to the last ``}``)."""
        body = text.strip()
        if "```" in body:
            body = body.split("```", 2)[1].removeprefix("json").strip()
        start, end = body.find("{"), body.rfind("}")
        if start < 0 or end < start:
            raise InvalidInputError("The answer holds no plan: no JSON object in it")
        try:
            return cls.model_validate_json(body[start : end + 1])
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"]) or "plan"
            raise InvalidInputError(f"The answer's plan is not valid: {where}: {first['msg']}") from exc


class PlanProgress(progress_field.PhaseRun):
    """A plan phase's checkpointed progress: what the plan's completed top-level steps gave."""

    model_config = ConfigDict(extra="forbid")

    plan_id: str
    run_id: str
    """This run's id: the job's id, the phase and the entry (``<job id>/<phase>/<entry>``)."""
    entry: int = 1
    """Which entry of its phase in the job this run is (1 for the first)."""
    completed: int = 0
    """How many top-level steps are complete (the next to run is ``steps[completed]``)."""
    results: dict[str, JsonValue] = Field(default_factory=dict)
    """Each completed step's result, by step id (nested steps' results inside their group's)."""
    saved: dict[str, JsonValue] = Field(default_factory=dict)
    usage: dict[str, float] = Field(default_factory=dict)
    """What the completed steps added to the job's usage."""


class PlanPhase:
    """The code of one plan phase (see the module's docstring); registered by :func:`register`."""

    def __init__(
        self,
        name: str,
        pipeline: Pipeline[Any],
        *,
        plan: Callable[[Any], Plan | Mapping[str, Any]],
        tools: Iterable[Tool | Callable[..., Any]],
        next: str | None,
        progress: str,
    ) -> None:
        self.name = name
        self.pipeline = pipeline
        self.plan_of = plan
        self.toolset = Toolset(tools)
        self.next = next
        self.progress = progress

    def __call__(self, ctx: PhaseContext[Any]) -> PhaseResult:
        found = self.plan_of(ctx.state)
        plan = found if isinstance(found, Plan) else Plan.model_validate(found)
        found_progress = progress_field.read(ctx.state, self.progress, PlanProgress)
        progress = progress_field.resumable(found_progress, self.name)
        if progress is None:
            progress = self._begin(ctx, plan, found_progress)
        elif progress.plan_id != plan.id:
            return Fail(
                f'The saved progress belongs to plan "{progress.plan_id}", not to plan "{plan.id}": a resume '
                f'continues only the same plan. Start over (retry mode "full") to run plan "{plan.id}" from its '
                "first step."
            )
        elif progress.completed >= len(plan.steps):
            ctx.decide(f"Resume plan {plan.id} after its last step", reason="every step is in the checkpoint")
        elif progress.completed:
            ctx.decide(
                f"Resume plan {plan.id} at step {progress.completed + 1} of {len(plan.steps)}",
                reason=f"steps 1-{progress.completed} are in the checkpoint",
            )
        for index in range(progress.completed, len(plan.steps)):
            step = plan.steps[index]
            usage: dict[str, float] = {}
            saved = dict(progress.saved)
            result = self._run(ctx, step, saved, usage)
            progress = progress.model_copy(
                update={
                    "completed": index + 1,
                    "results": {**progress.results, step.id: result},
                    "saved": saved,
                    "usage": {key: progress.usage.get(key, 0) + usage.get(key, 0) for key in {*progress.usage, *usage}},
                }
            )
            ctx.log(f"Plan {plan.id}: step {index + 1} of {len(plan.steps)} ({step.id}) done")
            ctx.save_state(progress_field.write(ctx.state, self.progress, progress))
        if self.next is None:
            return Done(progress.results)
        return Next(self.next, progress_field.write(ctx.state, self.progress, progress_field.finished(progress)))

    def _begin(self, ctx: PhaseContext[Any], plan: Plan, previous: PlanProgress | None) -> PlanProgress:
        """A new run of ``plan``: the entry after ``previous`` (this phase's finished run) or the first."""
        entry = previous.entry + 1 if previous is not None and previous.phase in ("", self.name) else 1
        return PlanProgress(phase=self.name, plan_id=plan.id, run_id=f"{ctx.job_id}/{self.name}/{entry}", entry=entry)

    def _run(self, ctx: PhaseContext[Any], step: PlanStep, saved: dict[str, Any], usage: dict[str, float]) -> Any:
        if step.when is not None and not saved.get(step.when):
            ctx.log(f'Skipped step {step.id}: "{step.when}" is not set')
            return None
        if step.each is None:
            result = self._once(ctx, step, _resolved(step.input, saved), saved, usage)
        else:
            result = [
                self._once(ctx, step, _resolved({**step.input, **entry}, saved), saved, usage) for entry in step.each
            ]
        if step.save_as is not None:
            saved[step.save_as] = result
        return result

    def _once(
        self,
        ctx: PhaseContext[Any],
        step: PlanStep,
        arguments: dict[str, Any],
        saved: dict[str, Any],
        usage: dict[str, float],
    ) -> Any:
        if step.steps:
            return {child.id: self._run(ctx, child, saved, usage) for child in step.steps}
        if step.tool is not None:
            outcome = self.toolset.call(ToolUse(id=step.id, name=step.tool, input=arguments))
            _count(ctx, usage, tool_calls=1)
            if outcome.is_error:
                raise PlanStepFailed(f"Step {step.id} ({step.tool}) failed: {outcome.content}")
            return outcome.content
        assert step.phase is not None
        return self._phase(ctx, step, step.phase, arguments, usage)

    def _phase(
        self, ctx: PhaseContext[Any], step: PlanStep, name: str, arguments: dict[str, Any], usage: dict[str, float]
    ) -> Any:
        if not self.pipeline.has_phase(name) or self.pipeline.resolve_name(name) == self.name:
            raise PlanStepFailed(f'Step {step.id}: the pipeline has no phase "{name}" a plan can run')
        inner = ctx.inline(name, arguments)
        try:
            outcome = self.pipeline.get_phase(name).run(inner)
        except Exception as exc:  # a process death (BaseException) passes through
            failed = f"{type(exc).__name__}: {message_of(exc)}"
            raise PlanStepFailed(f'Step {step.id} (phase "{name}") failed: {failed}') from exc
        finally:
            for key, value in ctx.absorb(inner).items():
                usage[key] = usage.get(key, 0) + value
        if isinstance(outcome, Done):
            return to_json(outcome.result, what=f'The result of phase "{name}"')
        if isinstance(outcome, Fail):
            raise PlanStepFailed(f'Step {step.id} (phase "{name}") failed: {outcome.error}')
        raise PlanStepFailed(f'Step {step.id}: phase "{name}" must return Done(result) in a plan, not {outcome!r}')


def _count(ctx: PhaseContext[Any], usage: dict[str, float], **counters: float) -> None:
    ctx.add_usage(**counters)
    for key, value in counters.items():
        usage[key] = usage.get(key, 0) + value


def _resolved(arguments: Mapping[str, Any], saved: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` with each ``{"$saved": name}`` replaced by that saved value (an unknown name is an error)."""

    def resolve(value: Any) -> Any:
        if isinstance(value, dict):
            if set(value) == {"$saved"}:
                name = value["$saved"]
                if name not in saved:
                    raise PlanStepFailed(f'No saved value "{name}" (saved: {", ".join(saved) or "none"})')
                return saved[name]
            return {key: resolve(item) for key, item in value.items()}
        if isinstance(value, list):
            return [resolve(item) for item in value]
        return value

    return {key: resolve(value) for key, value in arguments.items()}


def _walk(steps: Iterable[PlanStep]) -> Iterable[PlanStep]:
    for step in steps:
        yield step
        yield from _walk(step.steps)


def register(
    pipeline: Pipeline[Any],
    name: str,
    *,
    plan: Callable[[Any], Plan | Mapping[str, Any]],
    tools: Iterable[Tool | Callable[..., Any]] = (),
    next: str | None = None,
    progress: str = "plan_progress",
    retry: RetryPolicy | None = None,
    timeout: int = 300,
    memory: int = 512,
    environment: dict[str, Any] | None = None,
    statements: Iterable[dict[str, Any]] = (),
) -> PlanPhase:
    """Register a plan phase on ``pipeline`` (what ``Pipeline.plan_phase`` does); the phase's code."""
    if not callable(plan):
        raise PipelineError(f'Plan phase "{name}": plan must be a function of the state that returns the Plan')
    progress_field.check_field(pipeline, name, progress, PlanProgress)
    code = PlanPhase(name, pipeline, plan=plan, tools=tools, next=next, progress=progress)
    progress_field.register_phase(
        pipeline,
        name,
        code,
        retry=retry or DEFAULT_RETRY,
        timeout=timeout,
        memory=memory,
        environment=environment,
        statements=statements,
    )
    return code


def build(pipeline: Pipeline[Any], name: str, /, **options: Any) -> PlanPhase:
    """The "plan" phase kind's builder (see :func:`cairn.core.pipeline.register_phase_kind`): :func:`register`."""
    return register(pipeline, name, **options)
