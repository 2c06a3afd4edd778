"""What the API accepts and returns: pydantic models with the wire's camelCase names."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)
from pydantic.alias_generators import to_camel

from ..core.engine import SIGNAL_NAME_PATTERN, validate_signal_name
from ..core.errors import InvalidInputError
from ..core.ids import JOB_ID_PATTERN, JOB_ID_PREFIX_PATTERN, validate_job_id
from ..core.models import LogEntry, PhaseRecord, RetryMode, WireModel
from ..core.pipeline import NAME_PATTERN, Pipeline
from ..core.signals import validation_schema
from .api_job_view import JobView
from .listing import MAX_ID_PREFIX, MAX_TIME_MS

#: The longest job id (``JOB_ID_PATTERN``: a first character and up to 127 more), declared in the schema.
JOB_ID_MAX_LENGTH = 128
#: The longest pipeline name (``NAME_PATTERN``: a first letter and up to 63 more).
PIPELINE_MAX_LENGTH = 64
#: The longest signal name (``SIGNAL_NAME_PATTERN``: a first character and up to 63 more).
SIGNAL_NAME_MAX_LENGTH = 64
#: The longest cursor the listing reads (one it returned is a few hundred characters).
MAX_CURSOR_CHARS = 2048
#: A cursor's alphabet: the listing returns unpadded URL-safe base64.
CURSOR_PATTERN = r"^[A-Za-z0-9_-]+$"
#: The retry modes that rerun from a phase: they need ``phase``; the others refuse it.
MODES_WITH_PHASE = frozenset({RetryMode.FROM})


def _engine_rule(validate: Callable[[str], str]) -> AfterValidator:
    """The engine's rule ``validate``, its refusal reported as a validation error of the field."""

    def checked(value: str) -> str:
        try:
            return validate(value)
        except InvalidInputError as exc:
            raise ValueError(exc.message) from None

    return AfterValidator(checked)


JobId = Annotated[
    str,
    Field(
        description="1-128 letters, digits, '.', '_' or '-', starting with a letter or digit",
        json_schema_extra={"pattern": JOB_ID_PATTERN.pattern, "minLength": 1, "maxLength": JOB_ID_MAX_LENGTH},
    ),
    _engine_rule(validate_job_id),
]
"""A job id as the API accepts it, in a body or a path: checked by :func:`cairn.core.ids.validate_job_id`,
whose rule the schema declares (pattern and length) so that a generated client never sends another."""


SignalName = Annotated[
    str,
    Field(
        description="1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
        json_schema_extra={
            "pattern": f"^{SIGNAL_NAME_PATTERN.pattern}$",  # matched whole, as the engine matches it
            "minLength": 1,
            "maxLength": SIGNAL_NAME_MAX_LENGTH,
        },
    ),
    _engine_rule(validate_signal_name),
]
"""A signal's name, as a phase's ``WaitFor`` names it."""


def _text(pattern: str, max_length: int, description: str) -> Any:
    """A field of 1 to ``max_length`` characters that match ``pattern``."""
    return Field(min_length=1, max_length=max_length, pattern=pattern, description=description)


PipelineName = Annotated[
    str, _text(NAME_PATTERN.pattern, PIPELINE_MAX_LENGTH, "The name of a pipeline this deployment runs")
]
"""A pipeline's name: a letter, then up to 63 letters, digits, '_', '.' or '-' (matched whole)."""

PhaseName = Annotated[str, _text(NAME_PATTERN.pattern, 64, "The name of a pipeline's phase")]
"""A phase's name, by the same rule as a pipeline's."""

Cursor = Annotated[
    str,
    _text(
        CURSOR_PATTERN,
        MAX_CURSOR_CHARS,
        "The cursor of the previous page, as the listing returned it (with the same status filter); "
        "a cursor it did not return is refused (400), which a schema cannot state",
    ),
]
"""A listing's cursor: opaque, in the alphabet the listing writes it in."""


IdPrefix = Annotated[
    str,
    _text(
        JOB_ID_PREFIX_PATTERN.pattern,
        MAX_ID_PREFIX,
        "Only jobs whose id starts with this (a job id's characters, at most 128)",
    ),
]
"""A prefix of a job id, by the job id's own rule."""

CreatedTime = Annotated[
    datetime,
    Field(description="An ISO 8601 date-time, UTC unless it names its offset (e.g. 2026-12-01T09:30:00Z)"),
]
"""A creation time a listing is bounded by."""


def epoch_ms(moment: datetime | None) -> int | None:
    """A listing bound as Unix milliseconds (a time without an offset is UTC); None stays None.

    A time before 1970 is 1970 (no job was created before) and one past the year 9999 is its end.
    """
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    milliseconds = (moment - EPOCH) // timedelta(milliseconds=1)
    return min(max(milliseconds, 0), MAX_TIME_MS)


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class RequestModel(BaseModel):
    """Base for request bodies: camelCase names only, and unknown fields are refused (a typo is not ignored)."""

    # defer_build: the validator is built on first use, not at import (a cold start uses few of these models).
    model_config = ConfigDict(alias_generator=to_camel, extra="forbid", frozen=True, defer_build=True)


class CreateJobRequest(RequestModel):
    """Start a job of ``pipeline``; ``jobId`` defaults to a new UUID, ``state`` is the initial state."""

    pipeline: PipelineName
    job_id: JobId | None = Field(default=None, description="The job's id; a new UUID when absent")
    state: Any = Field(default=None, description="The initial state, checked against the pipeline's state model")


def _retry_schema(schema: dict[str, Any]) -> None:
    """The mode and phase rule of :class:`RetryRequest` (:data:`MODES_WITH_PHASE`) as JSON Schema: one of two shapes."""
    with_phase = sorted(mode.value for mode in MODES_WITH_PHASE)
    without = [mode.value for mode in RetryMode if mode not in MODES_WITH_PHASE]
    schema["oneOf"] = [
        {"properties": {"mode": {"enum": without}, "phase": {"type": "null"}}},
        {"properties": {"mode": {"enum": with_phase}, "phase": {"type": "string"}}, "required": ["mode", "phase"]},
    ]


class RetryRequest(RequestModel):
    """Retry a job: ``resume`` continues from its checkpoint, ``full`` starts it again, ``from`` reruns a phase.

    ``phase`` is given with the modes of :data:`MODES_WITH_PHASE` and only with them; the document
    states the rule as a ``oneOf`` built from the same set.
    """

    model_config = ConfigDict(json_schema_extra=_retry_schema)

    mode: RetryMode = Field(
        default=RetryMode.RESUME,
        description="resume: from the saved nextPhase (a fresh start when there is no checkpoint); "
        "full: discard the checkpoint and the old log; from: rerun from the body's phase, keeping the log",
    )
    state: Any = Field(
        default=None,
        description="The state to start from when the job starts fresh; the job's stored input when absent. "
        "Refused with resume when the job has a checkpoint to resume from, which would ignore it (409). With from: "
        "the (edited) state the phase reruns with; absent, the state the job had when it last entered the phase",
    )
    phase: PhaseName | None = Field(
        default=None, description="With mode from (and only then): the phase to rerun the job from"
    )

    @model_validator(mode="after")
    def _phase_with_its_mode(self) -> RetryRequest:
        if self.mode in MODES_WITH_PHASE and self.phase is None:
            raise ValueError(f'A rerun (mode "{self.mode}") names the phase to rerun from')
        if self.mode not in MODES_WITH_PHASE and self.phase is not None:
            raise ValueError(f'A phase is only given to rerun from it (mode "from"), not with mode "{self.mode}"')
        return self


class HistoryWrite(WireModel):
    """What one write added to a job's history: its log entries, and the record of the phase run it ended."""

    log: list[LogEntry]
    record: PhaseRecord | None = Field(default=None, description="The phase run this write ended; null: none")


class JobHistory(WireModel):
    """What a job's writes added to its history, newest first (the current run's only, after a full retry)."""

    job_id: str
    writes: list[HistoryWrite]
    cursor: str | None = Field(default=None, description="The next (older) page's cursor; null: the history begins")


class JobLog(WireModel):
    """A job's log entries and annotations, oldest first (only the current run's after a full retry)."""

    job_id: str
    entries: list[LogEntry]
    cursor: str | None = Field(default=None, description="The next page's cursor; null: the log ends here for now")


class Health(WireModel):
    """Whether the API answers (``checked: api``, public) or also its job table (``checked: table``, signed callers)."""

    status: Literal["ok"]
    driver: str
    checked: Literal["api", "table"]


class SignalView(WireModel):
    """A signal a pipeline declares a payload model for: the payload's JSON schema and a sample payload."""

    payload_schema: dict[str, Any] = Field(description="The JSON schema a payload must fit; {} when it is not known")
    sample: Any = Field(default=None, description="A sample payload (the schema's first example); null: none")


class PipelineView(WireModel):
    """A pipeline this deployment runs: its phases in order, its state's JSON schema and a sample state."""

    name: str
    phases: list[str] = Field(description="The phase names, in the order a job runs them")
    state_schema: dict[str, Any] = Field(
        description="The JSON schema of the pipeline's state model; {} when its state is plain JSON"
    )
    sample: Any = Field(default=None, description="A sample initial state (the schema's first example); null: none")
    signals: dict[str, SignalView] = Field(
        default_factory=dict, description="The signals whose payload must fit a model, by name; others take any JSON"
    )

    @classmethod
    def of(cls, pipeline: Pipeline[Any]) -> PipelineView:
        """The view of a registered pipeline."""
        schema = state_schema(pipeline)
        signals = {}
        for name, model in pipeline.signal_models.items():
            payload = validation_schema(model)
            signals[name] = SignalView(payload_schema=payload, sample=_first_example(payload))
        return cls(
            name=pipeline.name,
            phases=pipeline.phase_names,
            state_schema=schema,
            sample=_first_example(schema),
            signals=signals,
        )


def _first_example(schema: dict[str, Any]) -> Any:
    """A schema's first example; None when it gives none."""
    examples = schema.get("examples")
    return examples[0] if isinstance(examples, list) and examples else None


class PipelineList(WireModel):
    """Every pipeline this deployment runs, by name."""

    pipelines: list[PipelineView]


def state_schema(pipeline: Pipeline[Any]) -> dict[str, Any]:
    """The JSON schema of ``pipeline``'s state model (as input is validated).

    {} without a pydantic model, or for a model JSON schema cannot describe (a field of an arbitrary
    Python type): the API still checks every state it is sent against the model.
    """
    model = pipeline.state_model
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return {}
    return validation_schema(model)


class ErrorDetail(WireModel):
    """What went wrong: a stable ``code`` and a message meant for people."""

    code: str = Field(description="invalid_request, unauthenticated, not_found, job_exists, conflict, ...")
    message: str


class ErrorBody(WireModel):
    """Every error response. A refused create (409) also carries the existing ``job``."""

    error: ErrorDetail
    job: JobView | None = Field(default=None, exclude_if=lambda job: job is None)
