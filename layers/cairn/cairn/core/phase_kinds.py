"""Phase kinds: how a plug-in adds a kind of phase (an agent loop, a plan) to every pipeline.

The core knows phases as functions of a :class:`~cairn.core.context.PhaseContext`. A plug-in
registers a builder under a kind's name, ``register_phase_kind("agent", build)``, and
``Pipeline.agent_phase(name, **options)`` calls that builder with the pipeline, the phase's name and
the options; the builder registers the phase (with :meth:`Pipeline.phase`) and returns its code. The
core imports no plug-in: the plug-in imports the core and registers itself when it is imported
(:mod:`cairn` imports the ones it ships).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from .errors import PipelineError

if TYPE_CHECKING:
    from .context import PhaseContext
    from .outcomes import PhaseResult
    from .pipeline import Pipeline


class PhaseCode(Protocol):
    """A phase's code as a phase kind builds it: called with the phase's context, like any phase function."""

    __module__: str

    def __call__(self, ctx: PhaseContext[Any], /) -> PhaseResult:
        """Run the phase once."""
        ...


class PhaseBuilder(Protocol):
    """What a plug-in registers for a kind: registers phase ``name`` on ``pipeline`` and returns its code."""

    def __call__(self, pipeline: Pipeline[Any], name: str, /, **options: Any) -> PhaseCode:
        """Register the phase ``name`` of this kind on ``pipeline``, configured by ``options``."""
        ...


_BUILDERS: dict[str, PhaseBuilder] = {}


def register_phase_kind(kind: str, builder: PhaseBuilder) -> None:
    """Make ``kind`` a phase kind built by ``builder``; registering the same builder again is harmless.

    A second, different builder for a kind already registered is a PipelineError: two plug-ins
    would otherwise decide silently which of them a pipeline gets.
    """
    known = _BUILDERS.get(kind)
    if known is not None and _describe(known) != _describe(builder):  # the same builder reloaded is no clash
        raise PipelineError(f'Phase kind "{kind}" is already registered (by {_describe(known)})')
    _BUILDERS[kind] = builder


def phase_builder(kind: str) -> PhaseBuilder:
    """The builder registered for ``kind``; a kind no plug-in registered is a clear PipelineError."""
    builder = _BUILDERS.get(kind)
    if builder is None:
        known = ", ".join(sorted(_BUILDERS)) or "none"
        raise PipelineError(
            f'No phase kind "{kind}" is registered (registered: {known}); import the package that provides '
            "it (importing the cairn package registers the agent and plan phases)"
        )
    return builder


def phase_kinds() -> list[str]:
    """The registered phase kinds, sorted."""
    return sorted(_BUILDERS)


def _describe(builder: PhaseBuilder) -> str:
    module = getattr(builder, "__module__", None) or "?"
    name = getattr(builder, "__qualname__", None) or type(builder).__qualname__
    return f"{module}.{name}"
