"""The agent phase: a loop of model turns and tool calls, checkpointed after each one.

``pipeline.agent_phase(name, model=..., tools=[...], prompt=..., next=...)`` registers a phase that
talks to a model until it answers without asking for a tool:

- each model turn is added to the conversation and saved (``ctx.save_state``) before anything else
  happens, with its tokens added to the job's usage (``model_calls``, ``input_tokens``,
  ``output_tokens``, and by model id ``input_tokens:<model id>`` and ``output_tokens:<model id>``: what the
  job's cost prices them by);
- each tool the model asks for is called, and its result saved, one at a time (``tool_calls``); a
  tool's exception is the model's error result, not a crash;
- a crash or a timeout resumes at the first turn or tool call not saved: a finished turn is never
  paid for again and a finished tool call never runs again;
- ``max_turns`` model calls without a final answer is a clear failure, or ``on_max_turns`` names the
  phase to go to instead;
- a retryable model error (throttling, a timeout) fails the attempt and the phase's ``RetryPolicy``
  runs it again from the last saved turn; any other model error fails the phase with its message.

The conversation lives in one field of the state (``progress``, default ``agent``) while the phase
runs and is cleared when it ends; ``finish(state, answer)`` puts the final answer into the state.
The phase named by ``on_max_turns`` gets the conversation marked finished: each entry of an agent
phase is its own run (the rule of :mod:`cairn.agents.progress`), so a pipeline that comes back to
the phase starts a new conversation, while a crash or a retry continues the unfinished one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ..core.errors import ModelError, PipelineError
from ..core.outcomes import Done, Fail, Next, PhaseResult
from ..core.retry import RetryPolicy
from . import progress as progress_field
from .messages import Message, ModelTurn, StopReason, ToolResult, ToolUse, Usage
from .model import Model
from .tools import Tool, Toolset

if TYPE_CHECKING:
    from ..core.context import PhaseContext
    from ..core.pipeline import Pipeline

S = TypeVar("S")
ModelSource = Model | Callable[[], Model]
"""A model, or a function that makes one on first use (so importing a pipeline builds no client)."""
Text = str | Callable[[Any], str]
"""A fixed text, or one made from the state."""

FINISHED: frozenset[StopReason] = frozenset({"end_turn", "stop_sequence"})
"""Stop reasons of a final answer (when the model asks for no tool)."""
DEFAULT_RETRY = RetryPolicy(max_attempts=3, backoff=2.0, retry_on=(ModelError,))
"""An agent phase's attempts: a retryable model error is tried again from the last saved turn."""


class AgentRun(progress_field.PhaseRun):
    """An agent phase's progress, kept in the state between checkpoints: the conversation so far."""

    model_config = ConfigDict(extra="forbid")

    phase: str
    system: str | None = None
    """The system prompt, fixed when the run began (lessons recalled then included), so a resume sends the same."""
    messages: list[Message] = Field(default_factory=list)
    turns: int = 0
    """Model calls made."""
    tool_calls: int = 0
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason | None = None
    """Why the model stopped in its latest turn."""

    def pending(self) -> list[ToolUse]:
        """The tool uses of the latest model turn that have no saved result yet, in order."""
        if not self.messages:
            return []
        last = self.messages[-1]
        if last.role == "assistant":
            return last.tool_uses
        if len(self.messages) < 2 or self.messages[-2].role != "assistant":
            return []
        answered = {result.tool_use_id for result in last.tool_results}
        return [use for use in self.messages[-2].tool_uses if use.id not in answered]

    @property
    def answered(self) -> bool:
        """Whether the latest model turn is a final answer (it asks for no tool)."""
        return bool(self.messages) and self.messages[-1].role == "assistant" and not self.messages[-1].tool_uses

    @property
    def answer(self) -> str:
        """The text of the final answer ("" before there is one)."""
        return self.messages[-1].text if self.answered else ""

    def with_turn(self, turn: ModelTurn) -> AgentRun:
        """This run after one more model turn."""
        return self.model_copy(
            update={
                "messages": [*self.messages, turn.message],
                "turns": self.turns + 1,
                "usage": self.usage + turn.usage,
                "stop_reason": turn.stop_reason,
            }
        )

    def with_result(self, result: ToolResult) -> AgentRun:
        """This run after one more tool result (added to the user message that answers the latest turn)."""
        messages = list(self.messages)
        if messages[-1].role == "assistant":
            messages.append(Message(role="user", content=[result]))
        else:
            messages[-1] = Message(role="user", content=[*messages[-1].content, result])
        return self.model_copy(update={"messages": messages, "tool_calls": self.tool_calls + 1})


class AgentPhase:
    """The code of one agent phase (see the module's docstring); registered by :func:`register`."""

    def __init__(
        self,
        name: str,
        *,
        model: ModelSource,
        tools: Iterable[Tool | Callable[..., Any]],
        prompt: Text,
        system: Text | None,
        max_turns: int,
        next: str | None,
        on_max_turns: str | None,
        finish: Callable[[Any, str], Any] | None,
        progress: str,
        recall: int,
    ) -> None:
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise PipelineError(f'Agent phase "{name}": max_turns must be a whole number of at least 1')
        self.name = name
        self._model_source = model
        self._model: Model | None = None
        self.toolset = Toolset(tools)
        self.prompt = prompt
        self.system = system
        self.max_turns = max_turns
        self.next = next
        self.on_max_turns = on_max_turns
        self.finish = finish
        self.progress = progress
        self.recall = recall

    @property
    def model(self) -> Model:
        """The model, made on first use when a factory was given."""
        if self._model is None:
            source = self._model_source
            self._model = source if isinstance(source, Model) else source()
        return self._model

    def __call__(self, ctx: PhaseContext[Any]) -> PhaseResult:
        run = progress_field.resumable(progress_field.read(ctx.state, self.progress, AgentRun), self.name)
        if run is None:
            run = self._begin(ctx)
        elif run.turns or run.messages:
            ctx.decide(
                f"Resume the conversation at turn {run.turns + 1}",
                reason=f"{run.turns} model turns and {run.tool_calls} tool calls are in the checkpoint",
            )
        while not run.answered:
            pending = run.pending()
            if pending:
                run = self._call_tool(ctx, run, pending[0])
                continue
            if run.turns >= self.max_turns:
                return self._out_of_turns(ctx, run)
            try:
                turn = self.model.converse(run.messages, system=run.system, tools=self.toolset.specs)
            except ModelError as exc:
                if exc.retryable:
                    raise
                return Fail(f'Agent phase "{self.name}": the model refused the request: {exc}')
            run = self._record_turn(ctx, run, turn)
            if turn.stop_reason not in FINISHED and not turn.tool_uses:
                return Fail(f'Agent phase "{self.name}": the model stopped without an answer ({turn.stop_reason})')
        return self._end(ctx, run)

    def _begin(self, ctx: PhaseContext[Any]) -> AgentRun:
        system = _text(self.system, ctx.state) if self.system is not None else None
        if self.recall:
            lessons = ctx.recall(limit=self.recall)
            if lessons:
                count = f"{len(lessons)} lesson{'' if len(lessons) == 1 else 's'}"
                ctx.decide(f"Start from {count} of earlier runs", reason="; ".join(lesson.text for lesson in lessons))
                remembered = "\n".join(f"- {lesson.text}" for lesson in lessons)
                system = f"{system}\n\n" if system else ""
                system += f"Lessons from earlier runs:\n{remembered}"
        return AgentRun(phase=self.name, system=system, messages=[Message.user(_text(self.prompt, ctx.state))])

    def _record_turn(self, ctx: PhaseContext[Any], run: AgentRun, turn: ModelTurn) -> AgentRun:
        ctx.add_usage(model_calls=1, input_tokens=turn.usage.input_tokens, output_tokens=turn.usage.output_tokens)
        model = self.model.model_id  # the tokens again by model id: what the job's cost prices them by
        by_model = {f"input_tokens:{model}": turn.usage.input_tokens}
        by_model[f"output_tokens:{model}"] = turn.usage.output_tokens
        ctx.add_usage(**by_model)
        asked = ", ".join(use.name for use in turn.tool_uses)
        ctx.log(f"Turn {run.turns + 1}: " + (f"asked for {asked}" if asked else "answered"))
        run = run.with_turn(turn)
        self._save(ctx, run)
        return run

    def _call_tool(self, ctx: PhaseContext[Any], run: AgentRun, use: ToolUse) -> AgentRun:
        result = self.toolset.call(use)
        ctx.add_usage(tool_calls=1)
        if result.is_error:
            ctx.record_error(f"Tool {use.name} failed: {result.content}")
        else:
            ctx.log(f"Called {use.name}")
        run = run.with_result(result)
        self._save(ctx, run)
        return run

    def _save(self, ctx: PhaseContext[Any], run: AgentRun) -> None:
        ctx.save_state(progress_field.write(ctx.state, self.progress, run))

    def _out_of_turns(self, ctx: PhaseContext[Any], run: AgentRun) -> PhaseResult:
        message = f'Agent phase "{self.name}" reached max_turns ({self.max_turns}) without a final answer'
        if self.on_max_turns is None:
            return Fail(message)
        ctx.decide(f'Go to "{self.on_max_turns}"', reason=message)
        return Next(self.on_max_turns, progress_field.write(ctx.state, self.progress, progress_field.finished(run)))

    def _end(self, ctx: PhaseContext[Any], run: AgentRun) -> PhaseResult:
        state = progress_field.write(ctx.state, self.progress, None)
        if self.finish is not None:
            state = self.finish(state, run.answer)
        ctx.observe(f"The model answered after {run.turns} turns and {run.tool_calls} tool calls")
        if self.next is None:
            return Done(state.model_dump(mode="json") if isinstance(state, BaseModel) else state)
        return Next(self.next, state)


def _text(source: Text, state: Any) -> str:
    text = source(state) if callable(source) else source
    if not isinstance(text, str) or not text:
        raise PipelineError("An agent phase's prompt (and system prompt) must be non-empty text")
    return text


def register(
    pipeline: Pipeline[Any],
    name: str,
    *,
    model: ModelSource,
    tools: Sequence[Tool | Callable[..., Any]] = (),
    prompt: Text,
    system: Text | None = None,
    max_turns: int = 10,
    next: str | None = None,
    on_max_turns: str | None = None,
    finish: Callable[[Any, str], Any] | None = None,
    progress: str = "agent",
    recall: int = 0,
    retry: RetryPolicy | None = None,
    timeout: int = 300,
    memory: int = 512,
    environment: dict[str, Any] | None = None,
    statements: Iterable[dict[str, Any]] = (),
) -> AgentPhase:
    """Register an agent phase on ``pipeline`` (what ``Pipeline.agent_phase`` does); the phase's code."""
    progress_field.check_field(pipeline, name, progress, AgentRun)
    code = AgentPhase(
        name,
        model=model,
        tools=tools,
        prompt=prompt,
        system=system,
        max_turns=max_turns,
        next=next,
        on_max_turns=on_max_turns,
        finish=finish,
        progress=progress,
        recall=recall,
    )
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


def build(pipeline: Pipeline[Any], name: str, /, **options: Any) -> AgentPhase:
    """The "agent" phase kind's builder (see :func:`cairn.core.pipeline.register_phase_kind`): :func:`register`."""
    return register(pipeline, name, **options)
