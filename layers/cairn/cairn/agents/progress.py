"""Where an agent or plan phase keeps its progress between checkpoints: one field of the pipeline's state.

A pipeline with a state model declares the field (``agent: AgentRun | None = None``,
``plan_progress: PlanProgress | None = None``); a plain JSON state gets a key. The phase reads it
on entry (a crash or a retry resumes from it) and writes it with every ``ctx.save_state``.

Which run an entry of the phase is, one rule for both kinds (:func:`resumable`): the progress in the
state is continued only when it is this phase's and unfinished. The write that leaves the phase hands
the progress on marked finished (:func:`finished`), in the same commit, so a later entry of the phase
(a pipeline that loops back to it, a rerun from it) begins a new run, while a crash or a retry before
that commit resumes the run where its last checkpoint left it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from ..core.errors import PipelineError
from ..core.pipeline import PhaseFunction, Pipeline
from ..core.retry import RetryPolicy

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound="PhaseRun")


class PhaseRun(BaseModel):
    """What an agent's or a plan's progress records to tell a resume of its run from a later entry of its phase."""

    # defer_build: the validator is built on first use, not at import (a cold start uses few of these models).
    model_config = ConfigDict(defer_build=True)

    phase: str = ""
    """The phase whose run this is ("" in progress saved before it was recorded: taken as the reader's)."""
    finished: bool = False
    """Set in the write that leaves the phase: a later entry of the phase begins a new run."""


def resumable(progress: R | None, phase: str) -> R | None:
    """The run an entry of ``phase`` continues: ``progress`` when it is that phase's and unfinished, else None."""
    if progress is None or progress.finished or progress.phase not in ("", phase):
        return None
    return progress


def finished(progress: R) -> R:
    """``progress`` marked finished, to hand on in the write that leaves its phase."""
    return progress.model_copy(update={"finished": True})


def check_field(pipeline: Pipeline[Any], phase: str, field: str, model: type[BaseModel]) -> None:
    """Refuse, when the phase is registered, a state model that has no ``field`` to keep the progress in."""
    state_model = pipeline.state_model
    if state_model is None or not isinstance(state_model, type) or not issubclass(state_model, BaseModel):
        return
    if field not in state_model.model_fields:
        raise PipelineError(
            f'Phase "{phase}" keeps its progress in the state field "{field}": add '
            f"`{field}: {model.__name__} | None = None` to {state_model.__name__}"
        )


def read(state: Any, field: str, model: type[P]) -> P | None:
    """The progress kept in ``state`` (a model instance or a dict), or None when there is none."""
    raw = getattr(state, field, None) if isinstance(state, BaseModel) else _get(state, field)
    if raw is None:
        return None
    return raw if isinstance(raw, model) else model.model_validate(raw)


def write(state: Any, field: str, progress: BaseModel | None) -> Any:
    """A copy of ``state`` with ``progress`` in ``field`` (None clears it)."""
    if isinstance(state, BaseModel):
        return state.model_copy(update={field: progress})
    if state is None:
        state = {}
    if not isinstance(state, dict):
        raise PipelineError(f"An agent or plan phase needs a state that is an object, not {type(state).__name__}")
    return {**state, field: progress.model_dump(mode="json") if progress is not None else None}


def _get(state: Any, field: str) -> Any:
    return state.get(field) if isinstance(state, dict) else None


def register_phase(
    pipeline: Pipeline[Any],
    name: str,
    code: PhaseFunction,
    *,
    retry: RetryPolicy,
    timeout: int,
    memory: int,
    environment: dict[str, Any] | None,
    statements: Iterable[dict[str, Any]],
) -> None:
    """Register an agent's or a plan's phase ``code`` under ``name``, with its function's settings."""
    pipeline.phase(
        name=name, retry=retry, timeout=timeout, memory=memory, environment=environment, statements=statements
    )(code)
