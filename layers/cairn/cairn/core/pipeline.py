"""A pipeline: a named, ordered set of phases and the shape of the state they share."""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, overload

from pydantic import BaseModel, ValidationError

from .admission import Admitted, admit, json_value
from .async_phases import as_sync
from .errors import InvalidInputError, PipelineError, UnknownPhaseError
from .migrations import (
    Migration,
    checked_migrations,
    checked_state_version,
    migrate_state,
    saved_version,
    version_stamp,
)
from .models import Checkpoint
from .redaction import Redaction, redaction_of, register
from .retry import RetryPolicy
from .settings import stack_redaction
from .signals import admit_payload, checked_signal_models
from .state_fit import read_state
from .text import validation_problems

if TYPE_CHECKING:
    from .context import PhaseContext
    from .outcomes import PhaseResult

S = TypeVar("S")
PhaseFunction = Callable[["PhaseContext[Any]"], "PhaseResult"]
"""A phase's code as the engine runs it: a plain function of the context."""
AsyncPhaseFunction = Callable[["PhaseContext[Any]"], "Awaitable[PhaseResult]"]
"""An ``async def`` phase: registered as it is, run to completion each time (:mod:`.async_phases`)."""
F = TypeVar("F", bound=PhaseFunction | AsyncPhaseFunction)

DEFAULT_MAX_TRANSITIONS = 100_000
"""Generous: a self-loop of a minute a turn runs for more than two months before it is stopped
(:mod:`cairn.features.transition_guard`)."""


def checked_budget(pipeline: str, value: Any) -> float | None:
    """``max_cost_usd`` checked: a positive, finite number of dollars, or None (no budget)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise PipelineError(f"Pipeline {pipeline!r}: max_cost_usd must be a positive number of dollars, got {value!r}")
    return float(value)


#: What a pipeline or a phase may be called (matched whole: a trailing newline is not a name).
NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")


#: An environment variable's name as Lambda accepts it; cairn's own and AWS's are reserved.
ENVIRONMENT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
RESERVED_PREFIXES = ("CAIRN_", "AWS_", "POWERTOOLS_", "_")
#: Lambda's bounds on a function's timeout (seconds) and memory (MB).
TIMEOUT_RANGE = (1, 900)
MEMORY_RANGE = (128, 10240)
#: The most reserved concurrency a phase may ask for (Lambda refuses what the account cannot spare).
MAX_RESERVED_CONCURRENCY = 10_000
#: How much longer than its function's timeout a claim lasts by default: a claim never ends while the
#: function holding it may still run.
LEASE_MARGIN_SECONDS = 30.0


@dataclass(frozen=True)
class FunctionSettings:
    """What a phase needs from its Lambda function; the template is generated from these.

    ``environment`` values and ``statements`` (IAM policy statements) are
    CloudFormation values: plain strings, or intrinsic functions written as
    dicts (``{"Ref": "DocumentsBucket"}``).
    """

    timeout: int = 120
    memory: int = 512
    environment: Mapping[str, Any] = field(default_factory=dict)
    statements: tuple[Mapping[str, Any], ...] = ()
    reserved_concurrency: int | None = None
    """The function's reserved concurrency; None: the stack's PhaseReservedConcurrency (or none)."""


@dataclass(frozen=True)
class Phase:
    """One registered phase: its name, its code, its retry policy, its claim's lease and its function."""

    name: str
    run: PhaseFunction
    retry: RetryPolicy
    lease_seconds: float
    function: FunctionSettings = field(default_factory=FunctionSettings)


class Pipeline(Generic[S]):
    """A named set of phases; the first phase registered is the initial phase.

    ``state`` is an optional pydantic model for the state the phases share;
    without it the state is plain JSON. ``ttl`` is how long a job and its
    checkpoint live after their last write. ``memory_ttl`` is how long an
    insight stays in the pipeline's memory for later jobs (:mod:`cairn.core.lessons`).
    ``aliases`` maps old phase names to current ones, so checkpoints written
    before a rename still resume. ``signals`` maps a signal's name to the pydantic
    model its payload must fit (:mod:`cairn.core.signals`); other signals take any JSON.
    ``max_transitions`` is how many phase runs and map items a job may take before it is stopped in
    ``error`` (:mod:`cairn.features.transition_guard`; a stack may lower it with ``CAIRN_MAX_TRANSITIONS``).
    ``state_version`` is the version of the state model (default 1) and ``migrations`` maps each older
    version ``k`` to the function turning its JSON state into version ``k + 1``'s (:mod:`cairn.core.migrations`).
    ``max_cost_usd`` is a job's budget in US dollars: a phase run that would pass it is not started, the job
    stops in ``error`` (:mod:`cairn.features.budget`; None: no budget). ``redact_patterns`` (regexes) and
    ``redact_fields`` (dotted paths such as ``state.api_token``) keep secrets out of what is stored, logged and
    served (:mod:`cairn.core.redaction`), with the stack's ``CAIRN_REDACT``.
    """

    def __init__(
        self,
        name: str,
        *,
        state: type[S] | None = None,
        ttl: timedelta = timedelta(hours=24),
        memory_ttl: timedelta = timedelta(days=30),
        aliases: Mapping[str, str] | None = None,
        signals: Mapping[str, type[BaseModel]] | None = None,
        max_transitions: int = DEFAULT_MAX_TRANSITIONS,
        state_version: int = 1,
        migrations: Mapping[int, Migration] | None = None,
        max_cost_usd: float | None = None,
        redact_patterns: Iterable[str] = (),
        redact_fields: Iterable[str] = (),
    ) -> None:
        if not NAME_PATTERN.fullmatch(name):
            raise PipelineError(f"Invalid pipeline name {name!r}: use letters, digits, '_', '.', '-'")
        if ttl <= timedelta(0):
            raise PipelineError(f"Pipeline {name!r}: ttl must be positive, got {ttl}")
        if memory_ttl <= timedelta(0):
            raise PipelineError(f"Pipeline {name!r}: memory_ttl must be positive, got {memory_ttl}")
        if isinstance(max_transitions, bool) or not isinstance(max_transitions, int) or max_transitions <= 0:
            raise PipelineError(
                f"Pipeline {name!r}: max_transitions must be a positive whole number, got {max_transitions!r}"
            )
        self.name = name
        self.state_model = state
        self.ttl = ttl
        self.memory_ttl = memory_ttl
        self.max_transitions = max_transitions
        self.max_cost_usd = checked_budget(name, max_cost_usd)
        self.aliases: dict[str, str] = dict(aliases or {})
        self.signal_models = checked_signal_models(name, signals)
        self._phases: dict[str, Phase] = {}
        self.state_version = checked_state_version(name, state_version)
        self.migrations = checked_migrations(name, self.state_version, migrations)
        #: What the checkpoints of a state given now record (None for version 1: stored as before versions).
        self.version_stamp = version_stamp(self.state_version)
        #: This pipeline's own redaction (``redact_patterns``, ``redact_fields``); :attr:`redaction` adds the stack's.
        self.own_redaction = redaction_of(redact_patterns, redact_fields, where=f"Pipeline {name!r}")
        register(self.own_redaction)

    @overload
    def phase(self, fn: F, /) -> F: ...

    @overload
    def phase(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: int = 120,
        memory: int = 512,
        lease_seconds: float | None = None,
        environment: Mapping[str, Any] | None = None,
        statements: Iterable[Mapping[str, Any]] = (),
        reserved_concurrency: int | None = None,
    ) -> Callable[[F], F]: ...

    def phase(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: int = 120,
        memory: int = 512,
        lease_seconds: float | None = None,
        environment: Mapping[str, Any] | None = None,
        statements: Iterable[Mapping[str, Any]] = (),
        reserved_concurrency: int | None = None,
    ) -> F | Callable[[F], F]:
        """Register a phase, as ``@pipeline.phase`` or ``@pipeline.phase(retry=..., timeout=..., memory=...)``.

        The phase may be a plain function or an ``async def`` one (run to completion on an event loop of its
        own each time it runs: :mod:`cairn.core.async_phases`); either is returned as it was given.

        ``timeout`` (seconds) and ``memory`` (MB) size the phase's Lambda
        function; ``environment`` and ``statements`` add variables and IAM
        statements to it (see :class:`FunctionSettings`); ``reserved_concurrency`` caps how many runs of
        the phase the account gives at once (default: the stack's PhaseReservedConcurrency). ``lease_seconds`` is
        how long a worker's claim on the job lasts: by default the timeout and
        half a minute, and never less than the timeout.
        """

        def register(func: F) -> F:
            phase_name = name or func.__name__
            if not NAME_PATTERN.fullmatch(phase_name):
                raise PipelineError(f"Invalid phase name {phase_name!r}")
            if phase_name in self._phases:
                raise PipelineError(f'Pipeline "{self.name}" already has a phase "{phase_name}"')
            settings = _function_settings(phase_name, timeout, memory, environment, statements, reserved_concurrency)
            lease = float(timeout) + LEASE_MARGIN_SECONDS if lease_seconds is None else lease_seconds
            if lease < timeout:
                raise PipelineError(
                    f'Phase "{phase_name}": lease_seconds ({lease_seconds}) must be at least its timeout ({timeout})'
                )
            # an ``async def`` phase runs to completion on a loop of its own (:mod:`.async_phases`)
            self._phases[phase_name] = Phase(phase_name, as_sync(func), retry or RetryPolicy(), lease, settings)
            return func

        if fn is not None:
            return register(fn)
        return register

    def agent_phase(self, name: str, **options: Any) -> PhaseCode:
        """Register an agent phase: model turns and tool calls, checkpointed one by one.

        Options: ``model``, ``tools``, ``prompt``, ``system``, ``max_turns`` (10), ``next``,
        ``on_max_turns``, ``finish``, ``progress`` ("agent"), ``recall`` (0), and the function settings
        of :meth:`phase`. Built by the "agent" phase kind (:func:`register_phase_kind`), which
        :mod:`cairn.agents` provides; returns the phase's code.
        """
        return self._phase_of_kind("agent", name, options, sys._getframe(1).f_globals.get("__name__"))

    def plan_phase(self, name: str, **options: Any) -> PhaseCode:
        """Register a plan phase: a typed plan's top-level steps, checkpointed one by one.

        Options: ``plan`` (the plan from the state), ``tools``, ``next``, ``progress`` ("plan_progress"),
        and the function settings of :meth:`phase`. Built by the "plan" phase kind, which
        :mod:`cairn.agents` provides; returns the phase's code.
        """
        return self._phase_of_kind("plan", name, options, sys._getframe(1).f_globals.get("__name__"))

    def _phase_of_kind(self, kind: str, name: str, options: dict[str, Any], module: str | None) -> PhaseCode:
        """Register phase ``name`` with the builder of ``kind``; its code names ``module`` (the caller's) as its own."""
        code = phase_builder(kind)(self, name, **options)
        code.__module__ = module or code.__module__
        return code

    @property
    def phase_names(self) -> list[str]:
        """The phases in the order they were registered."""
        return list(self._phases)

    @property
    def initial_phase(self) -> str:
        """The first registered phase; an empty pipeline has none."""
        if not self._phases:
            raise PipelineError(f'Pipeline "{self.name}" has no phases')
        return next(iter(self._phases))

    def resolve_name(self, name: str) -> str:
        """The current name of a phase, following aliases."""
        return self.aliases.get(name, name)

    def get_phase(self, name: str) -> Phase:
        """The phase called ``name`` (or an alias of it); an unknown name is an error."""
        phase = self._phases.get(self.resolve_name(name))
        if phase is None:
            raise UnknownPhaseError(name, self.phase_names)
        return phase

    @property
    def redaction(self) -> Redaction:
        """What this pipeline's texts and shown states are redacted with: its own and the stack's (``CAIRN_REDACT``)."""
        return self.own_redaction.joined(stack_redaction())

    def has_phase(self, name: str) -> bool:
        """Whether ``name`` (or what it is an alias of) is a phase of this pipeline."""
        return self.resolve_name(name) in self._phases

    def dump_state(self, state: Any) -> Any:
        """The JSON form of ``state``; a state that is not valid is refused clearly."""
        return self.admit_state(state).value

    def admit_state(self, state: Any) -> Admitted:
        """``state`` validated and admitted, with the JSON text it was serialised to (once)."""
        what = f'State for pipeline "{self.name}"'
        if self.state_model is not None and issubclass(self.state_model, BaseModel):
            try:
                model = state if isinstance(state, self.state_model) else self.state_model.model_validate(state)
            except ValidationError as exc:
                problems = validation_problems(exc)
                raise InvalidInputError(f'Invalid state for pipeline "{self.name}": {problems}') from exc
            return admit(model, what)
        return admit(state, what)

    def checkpoint(self, next_phase: str, state: Any, created_at: int) -> Checkpoint:
        """The checkpoint entering ``next_phase`` with ``state`` admitted (see :meth:`admit_state`)."""
        return Checkpoint.of_admitted(next_phase, self.admit_state(state), created_at, self.version_stamp)

    def admit_signal(self, name: str, payload: Any) -> Any:
        """The payload of signal ``name`` as JSON, checked against its declared model; else InvalidInputError."""
        return admit_payload(self.name, name, self.signal_models.get(name), payload)

    def load_state(self, raw: Any, version: int | None = None) -> Any:
        """The state a phase sees: the model instance when the pipeline has one.

        ``raw`` is a stored state saved under ``version`` (None: 1); it is migrated to the pipeline's
        state_version first (:func:`~cairn.core.migrations.migrate_state`, StateMigrationError when it cannot be),
        then read into the model strictly (:func:`~cairn.core.state_fit.read_state`: StateMisfitError when the
        model would drop a key or coerce a value).
        """
        if version != self.version_stamp:
            raw = migrate_state(self.name, raw, version, self.state_version, self.migrations)
        if self.state_model is not None and issubclass(self.state_model, BaseModel):
            saved = saved_version(version)
            return read_state(self.name, self.state_model, raw, saved=saved, current=self.state_version)
        return raw


def _function_settings(
    phase: str,
    timeout: int,
    memory: int,
    environment: Mapping[str, Any] | None,
    statements: Iterable[Mapping[str, Any]],
    reserved_concurrency: int | None = None,
) -> FunctionSettings:
    """The phase's function settings, each checked against what Lambda accepts."""
    for what, value, (low, high) in (("timeout", timeout, TIMEOUT_RANGE), ("memory", memory, MEMORY_RANGE)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise PipelineError(f'Phase "{phase}": {what} must be a whole number from {low} to {high}, got {value!r}')
    variables = dict(environment or {})
    for key in variables:
        if not isinstance(key, str) or not ENVIRONMENT_NAME.fullmatch(key) or key.startswith(RESERVED_PREFIXES):
            raise PipelineError(f'Phase "{phase}": invalid or reserved environment variable name {key!r}')
    if reserved_concurrency is not None and (
        isinstance(reserved_concurrency, bool)
        or not isinstance(reserved_concurrency, int)
        or not 0 <= reserved_concurrency <= MAX_RESERVED_CONCURRENCY
    ):
        raise PipelineError(
            f'Phase "{phase}": reserved_concurrency must be a whole number from 0 to {MAX_RESERVED_CONCURRENCY} '
            f"(or None for the stack's PhaseReservedConcurrency), got {reserved_concurrency!r}"
        )
    statements_given = tuple(dict(statement) for statement in statements)
    return FunctionSettings(timeout, memory, variables, statements_given, reserved_concurrency)


def to_json(value: Any, *, what: str = "Value") -> Any:
    """``value`` as plain JSON data (pydantic models are dumped), admitted by :mod:`cairn.core.admission`.

    Anything cairn cannot store and read back (not JSON, nested too deep, not Unicode text) is an
    InvalidInputError naming ``what``.
    """
    return json_value(value, what)


# -- phase kinds: the core's plug-in point ----------------------------------------------------
#
# How a plug-in adds a kind of phase (an agent loop, a plan) to every pipeline.
#
# The core knows phases as functions of a :class:`~cairn.core.context.PhaseContext`. A plug-in
# registers a builder under a kind's name, ``register_phase_kind("agent", build)``, and
# ``Pipeline.agent_phase(name, **options)`` calls that builder with the pipeline, the phase's name and
# the options; the builder registers the phase (with :meth:`Pipeline.phase`) and returns its code. The
# core imports no plug-in: the plug-in imports the core and registers itself when it is imported
# (:mod:`cairn` imports the ones it ships).


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
