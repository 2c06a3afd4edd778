"""What a listing may be filtered by, and the one home of the rules a filter obeys.

A :class:`JobFilter` narrows a listing to a status, a pipeline, a range of creation times, a
prefix of the job id and, for failed jobs, the exception type and the phase that failed (a failure group of
``GET /failures``). Stores apply it on their side of the wire, across pages; a listing's cursor is
bound to the filter it was returned for (:meth:`JobFilter.fingerprint`). A filter that cannot match
anything by construction (a reversed time range, a prefix no job id can start with) is refused with
an :class:`~cairn.core.errors.InvalidInputError` rather than answered with an empty page.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from ..core.errors import InvalidInputError
from ..core.ids import JOB_ID_PREFIX_PATTERN
from ..core.models import MAX_TYPE_CHARS, JobStatus, JobSummary
from ..core.pipeline import NAME_PATTERN
from ..core.text import shown

#: The longest id prefix a filter takes: a job id is at most 128 characters (:mod:`cairn.core.ids`).
MAX_ID_PREFIX = 128
#: The exception type a filter names for a failure that raised no exception (no class has this name).
NO_EXCEPTION = "-"
#: The latest creation time a filter may name (Unix ms): the year 9999, as far as a timestamp reads.
MAX_TIME_MS = 253_402_300_799_999


@dataclass(frozen=True)
class JobFilter:
    """A listing's filter: every field set must match (None matches anything).

    ``created_from`` and ``created_to`` are Unix milliseconds, both inclusive. ``error_type`` and ``error_phase``
    match failed jobs only: either implies the status ``error`` (another status with them is refused).
    ``error_type`` :data:`NO_EXCEPTION` matches a failure that raised none (a ``Fail``, a wait's timeout).
    """

    status: JobStatus | None = None
    pipeline: str | None = None
    created_from: int | None = None
    created_to: int | None = None
    id_prefix: str | None = None
    error_type: str | None = None
    error_phase: str | None = None

    def __post_init__(self) -> None:
        self._check_failure()
        if self.status is not None:
            object.__setattr__(self, "status", _status(self.status))
        for name in ("created_from", "created_to"):
            value = getattr(self, name)
            if value is not None and not _is_time(value):
                raise InvalidInputError(f"{name} must be a time between 1970 and 9999 (Unix ms), got {shown(value)}")
        if self.created_from is not None and self.created_to is not None and self.created_from > self.created_to:
            raise InvalidInputError("The created-time range is reversed: its start is after its end")
        if self.pipeline is not None and (not isinstance(self.pipeline, str) or not self.pipeline):
            raise InvalidInputError(f"pipeline must be a pipeline's name, got {shown(self.pipeline)}")
        if self.pipeline is not None and not NAME_PATTERN.fullmatch(self.pipeline):
            raise InvalidInputError(
                f"No pipeline is named '{shown(self.pipeline)}': a name is a letter, then up to 63 letters, digits, "
                "'_', '.' or '-'"
            )
        prefix = self.id_prefix
        if prefix is not None:
            if not isinstance(prefix, str) or not prefix:
                raise InvalidInputError(f"The job id prefix must be non-empty text, got {shown(prefix)}")
            if len(prefix) > MAX_ID_PREFIX:
                raise InvalidInputError(f"The job id prefix is {len(prefix)} characters; a job id has at most 128")
            if not JOB_ID_PREFIX_PATTERN.fullmatch(prefix):
                raise InvalidInputError(
                    f"No job id starts with '{shown(prefix)}': ids are letters, digits, '.', '_' or '-', "
                    "starting with a letter or digit"
                )

    def _check_failure(self) -> None:
        """The exception type and failed phase: text of a bounded length, and only with the status ``error``."""
        if self.error_type is None and self.error_phase is None:
            return
        for name, limit in (("error_type", MAX_TYPE_CHARS), ("error_phase", 64)):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value or len(value) > limit):
                raise InvalidInputError(f"{name} must be text of 1 to {limit} characters, got {shown(value)}")
        if self.error_phase is not None and not NAME_PATTERN.fullmatch(self.error_phase):
            raise InvalidInputError(f"No phase is named '{shown(self.error_phase)}'")
        if self.status is not None and _status(self.status) != JobStatus.ERROR:
            raise InvalidInputError("An exception type or a failed phase filters jobs in error only: status=error")
        object.__setattr__(self, "status", JobStatus.ERROR)

    @property
    def names_failure(self) -> bool:
        """Whether the filter names an exception type or a failed phase (which the listing indexes do not hold)."""
        return self.error_type is not None or self.error_phase is not None

    @property
    def is_empty(self) -> bool:
        """Whether the filter lets every job through."""
        return self == JobFilter()

    def matches(self, summary: JobSummary) -> bool:
        """Whether a listed job passes every part of the filter."""
        return (
            (self.status is None or summary.status == self.status)
            and (self.pipeline is None or summary.pipeline == self.pipeline)
            and (self.created_from is None or summary.created_at >= self.created_from)
            and (self.created_to is None or summary.created_at <= self.created_to)
            and (self.id_prefix is None or summary.job_id.startswith(self.id_prefix))
            and (self.error_type is None or (summary.error_type or NO_EXCEPTION) == self.error_type)
            and (self.error_phase is None or summary.error_phase == self.error_phase)
        )

    def fingerprint(self) -> str:
        """A short digest of the filter, which a cursor carries so that it is taken only with the same filter."""
        parts: tuple[str, ...] = (
            self.status.value if self.status else "",
            self.pipeline or "",
            "" if self.created_from is None else str(self.created_from),
            "" if self.created_to is None else str(self.created_to),
            self.id_prefix or "",
        )
        if self.names_failure:  # added only when set: the cursors of the other filters stay as they were
            parts += ("failure", self.error_type or "", self.error_phase or "")
        return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


def _is_time(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TIME_MS


def _status(value: JobStatus | str) -> JobStatus:
    try:
        return JobStatus(value)
    except ValueError:
        choices = ", ".join(status.value for status in JobStatus)
        raise InvalidInputError(f"Unknown status '{shown(value)}': use one of {choices}") from None


def with_status(where: JobFilter | None, status: JobStatus | str | None) -> JobFilter:
    """``where`` (or no filter) with ``status`` added; a status given twice, two ways, is an InvalidInputError."""
    where = where or JobFilter()
    if status is None:
        return where
    status = _status(status)
    if where.status not in (None, status):
        raise InvalidInputError("The status is given twice, with different values")
    return replace(where, status=status)
