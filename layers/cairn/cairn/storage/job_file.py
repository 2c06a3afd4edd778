"""A job file: one job pulled from an API (``cairn jobs pull``), to load into a local store and replay.

The file is one JSON document: a format marker and version, where and when the job was pulled, the job
(its input, status, checkpoint with its state, result, error, usage, attempt), its whole history oldest
first (each write's log entries and phase record, and the checkpoint it entered when the API gave it),
and which dotted paths were redacted. :func:`read_job_file` refuses anything else with a clear
:class:`~cairn.core.errors.InvalidInputError`; :func:`redact` replaces fields by ``"[redacted]"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final, Literal, TypeVar

from pydantic import Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from ..core.admission import checked_usage
from ..core.errors import InvalidInputError
from ..core.ids import validate_job_id
from ..core.models import Checkpoint, JobStatus, LogEntry, PhaseRecord, WireModel
from ..core.redaction import Redaction, parts_of, redacted_document, values_at

FORMAT: Final = "cairn-job"
"""The marker every job file carries in ``format``."""
VERSION: Final = 1
"""The version of the file format this code writes and reads."""
SUFFIX = ".cairn-job.json"
"""The end of a job file's default name: ``<job id>.cairn-job.json``."""


class PulledWrite(WireModel):
    """What one write added to the job's history: its log entries, its phase record, the checkpoint it entered."""

    log: list[LogEntry] = Field(default_factory=list)
    record: PhaseRecord | None = None
    entry: Checkpoint | None = Field(
        default=None, description="The checkpoint this write entered (its phase's newest entry), when known"
    )


class PulledSignal(WireModel):
    """A signal delivered to the job, as its log records it (the API does not show a delivered payload)."""

    name: str
    delivered_at: int
    by: str | None = None


class PulledJob(WireModel):
    """The job as the API showed it when it was pulled: its id one the API takes, its usage figures counts."""

    job_id: str
    pipeline: str
    status: JobStatus
    input: Any = None
    checkpoint: Checkpoint | None = None
    result: Any = None
    error: str | None = None
    usage: dict[str, int | float] = Field(default_factory=dict)
    attempt: int = 1
    sequence: int = 0
    waiting_for: str | None = None
    created_at: int
    updated_at: int

    @field_validator("job_id")
    @classmethod
    def _an_id_the_api_takes(cls, job_id: str) -> str:
        _checked(validate_job_id, job_id)
        return job_id

    @field_validator("usage")
    @classmethod
    def _counts(cls, usage: dict[str, int | float]) -> dict[str, int | float]:
        _checked(checked_usage, usage)
        return usage


_Checked = TypeVar("_Checked")


def _checked(check: Callable[[_Checked], object], value: _Checked) -> None:
    """``check(value)``, its InvalidInputError as a validation error of the field (its message as it is)."""
    try:
        check(value)
    except InvalidInputError as exc:
        raise PydanticCustomError("refused", str(exc)) from None


class JobFile(WireModel):
    """The whole file: the marker, where it came from, the job, its history, its maps and the redactions."""

    format: Literal["cairn-job"] = FORMAT
    version: Literal[1] = VERSION
    pulled_at: int = Field(description="Unix ms: when the job was read")
    pulled_from: str = Field(description="The API's URL")
    job: PulledJob
    history: list[PulledWrite] = Field(default_factory=list, description="Every write of the job's run, oldest first")
    code_versions: dict[str, list[str]] = Field(
        default_factory=dict, description="Each phase's code versions, as its records name them"
    )
    signals: list[PulledSignal] = Field(default_factory=list, description="The signals delivered, oldest first")
    maps: list[Any] = Field(default_factory=list, description="The job's maps as the API showed them (not loaded)")
    redacted: list[str] = Field(default_factory=list, description="The dotted paths replaced by [redacted]")

    def to_json(self) -> str:
        """The file's text."""
        return json.dumps(self.to_wire(), indent=2, ensure_ascii=False) + "\n"


def read_job_file(text: str | bytes, *, name: str = "the file") -> JobFile:
    """The job file ``text`` holds; InvalidInputError (naming ``name``) for anything that is not one."""
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidInputError(f"{name} is not a cairn job file: it is not JSON ({exc})") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise InvalidInputError(f'{name} is not a cairn job file (no "format": "{FORMAT}"; made by cairn jobs pull)')
    if raw.get("version") != VERSION:
        raise InvalidInputError(
            f"{name} is a cairn job file of version {raw.get('version')!r}; this cairn reads version {VERSION}"
        )
    try:
        return JobFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(the file)"
        raise InvalidInputError(f"{name} is a damaged cairn job file: {where}: {first['msg']}") from None


def checked_paths(paths: list[str]) -> list[str]:
    """The dotted paths, each checked: non-empty names between dots; InvalidInputError otherwise."""
    for path in paths:
        if not path or any(not part for part in path.split(".")):
            raise InvalidInputError(f"--redact {path!r}: give a dotted path such as state.customer.email")
    return paths


def _reaches(value: Any, parts: list[str]) -> bool:
    """Whether the path's names reach a field of ``value`` (a list's items each may have it), as redaction goes."""
    if not parts:
        return True
    if isinstance(value, dict):
        return parts[0] in value and _reaches(value[parts[0]], parts[1:])
    if isinstance(value, list):
        return any(_reaches(item, parts) for item in value)
    return False


def unmatched(pulled: JobFile, paths: list[str]) -> list[str]:
    """The paths (checked) that reach no field of the file's input, states, result or maps: they redact nothing."""
    checked_paths(paths)
    job = pulled.job
    states = [kept.state for kept in [job.checkpoint, *(write.entry for write in pulled.history)] if kept is not None]
    values = [job.input, *states, job.result, *pulled.maps]
    return [path for path in paths if not any(_reaches(value, parts_of(path)) for value in values)]


def redact(pulled: JobFile, paths: list[str]) -> JobFile:
    """The file with ``paths`` redacted wherever the values they reach are.

    The fields are replaced by ``[redacted]`` in the input, every checkpoint state, the result and the maps; the
    text of each value they held is replaced in every other text of the file too (the job's error, log lines,
    annotations, failures' tracebacks, the maps' errors), as :func:`~cairn.core.redaction.redacted_document` does.
    ``redacted`` lists the paths that reached a field (:func:`unmatched` names the others).
    """
    if not paths:
        return pulled
    checked_paths(paths)
    missed = unmatched(pulled, paths)
    redaction = Redaction(fields=tuple(paths))
    document = pulled.to_wire()
    values = values_at(document["maps"], paths)
    document["maps"] = [redaction.state(lane) for lane in document["maps"]]
    redacted = redacted_document(document, Redaction(fields=tuple(paths), values=frozenset(values)))
    redacted["redacted"] = sorted({*pulled.redacted, *(path for path in paths if path not in missed)})
    return JobFile.model_validate(redacted)


_SIGNAL = re.compile(r'^Signal "(?P<name>[^"]+)" delivered')


def signals_of(history: list[PulledWrite]) -> list[PulledSignal]:
    """The signal deliveries the history's log records, oldest first."""
    found = []
    for write in history:
        for entry in write.log:
            match = _SIGNAL.match(entry.message)
            if match and entry.kind == "action":
                found.append(PulledSignal(name=match["name"], delivered_at=entry.timestamp, by=entry.actor))
    return found


def code_versions(history: list[PulledWrite]) -> dict[str, list[str]]:
    """Each phase's code versions, in the order its records first name them."""
    versions: dict[str, list[str]] = {}
    for write in history:
        record = write.record
        if record is not None and record.code_version:
            kept = versions.setdefault(record.phase, [])
            if record.code_version not in kept:
                kept.append(record.code_version)
    return versions
