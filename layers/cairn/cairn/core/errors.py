"""The one exception hierarchy of cairn. Standard library only.

Every error the library raises derives from :class:`CairnError`. Whether an
error is worth retrying is data on the error (``retryable``), never a guess
made from its message.
"""

from __future__ import annotations


class CairnError(Exception):
    """Root of every error cairn raises."""

    retryable: bool = False

    def __init__(self, message: str, *, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        if retryable is not None:
            self.retryable = retryable


class PipelineError(CairnError):
    """A pipeline is defined or used wrongly (empty, duplicate phase, unknown phase)."""


class UnknownPhaseError(PipelineError):
    """A checkpoint names a phase the pipeline does not have."""

    def __init__(self, phase: str, known: list[str]) -> None:
        super().__init__(
            f'Unknown phase "{phase}": the pipeline has no such phase (known phases: {", ".join(known) or "none"})'
        )
        self.phase = phase
        self.known = known


class ConfigurationError(CairnError):
    """The deployment is misconfigured (a missing table name, an unknown driver): not the caller's fault."""


class PhaseError(CairnError):
    """A phase failed. Raised by phase code to fail with a message of its own.

    ``job_id`` and ``phase`` say where it happened (None: not given); ``recoverable`` whether a
    retry may succeed (the job keeps its checkpoint either way, so it can be resumed).
    """

    def __init__(
        self,
        message: str = "",
        *,
        job_id: str | None = None,
        phase: str | None = None,
        recoverable: bool = True,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message, retryable=retryable)
        self.job_id = job_id
        self.phase = phase
        self.recoverable = recoverable


class PhaseCrashedError(PhaseError):
    """The worker running a phase died (a timeout, out of memory); retried like an exception."""

    phase: str

    def __init__(self, phase: str, detail: str) -> None:
        super().__init__(detail or f'the worker running "{phase}" died', phase=phase)


class VersionConflict(CairnError):
    """The job changed between a start's read and its write (internal: the engine reads again)."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f'Job "{job_id}" changed since it was read')
        self.job_id = job_id


class InvalidInputError(CairnError):
    """A caller passed a value cairn cannot accept; nothing was changed."""


class TransitionRefusedError(InvalidInputError):
    """The job's status does not allow the change asked for (pausing a finished job, say); nothing changed."""


class AlreadyCancelledError(TransitionRefusedError):
    """A cancel of a job that is already cancelled: nothing changed; ``job`` is the job as it is."""

    def __init__(self, job_id: str, job: object) -> None:
        super().__init__(f'Job "{job_id}" is already cancelled')
        self.job_id = job_id
        self.job = job


class JobNotFoundError(CairnError):
    """The job does not exist (or has expired)."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f'Job "{job_id}" was not found (it never existed or has expired)')
        self.job_id = job_id


class EnteredStateNotFoundError(JobNotFoundError):
    """The job keeps no state for a phase: it has not entered it since it last started over, or has no such phase."""

    def __init__(self, job_id: str, phase: str, reason: str | None = None) -> None:
        why = reason or "it has not entered that phase since it last started over (or that history has expired)"
        CairnError.__init__(self, f'Job "{job_id}" keeps no state for phase "{phase}": {why}')
        self.job_id = job_id
        self.phase = phase


class MapItemNotFoundError(JobNotFoundError):
    """The job has no such map, or its map no such item."""

    def __init__(self, job_id: str, message: str) -> None:
        CairnError.__init__(self, message)
        self.job_id = job_id


class JobExistsError(CairnError):
    """A job with this id already exists and was not to be touched; ``job`` is the existing job."""

    def __init__(self, job_id: str, job: object) -> None:
        super().__init__(f'Job "{job_id}" already exists; retry it instead of starting it again')
        self.job_id = job_id
        self.job = job


class ClaimLostError(CairnError):
    """A worker tried to write for a job whose claim it no longer holds.

    Another worker or a retry took the job over; the write was refused and
    nothing was changed.
    """

    def __init__(self, job_id: str, detail: str = "") -> None:
        message = f'Job "{job_id}": this worker no longer holds the claim'
        super().__init__(f"{message} ({detail})" if detail else message)
        self.job_id = job_id


class StorageError(CairnError):
    """The checkpoint store failed. ``retryable`` says whether trying again may help."""


class CorruptJobError(StorageError):
    """A stored job record cannot be read; names where it lives."""

    def __init__(self, location: str, reason: str) -> None:
        super().__init__(f"Stored job at {location} is unreadable: {reason}")
        self.location = location
        self.reason = reason


class StateTooLargeError(StorageError):
    """A phase's state exceeds what the store can hold."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"State is {size} bytes, over the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class SchedulingError(CairnError):
    """An advance could not be scheduled (the invoke, queue or execution start failed)."""


class ModelError(CairnError):
    """A model call failed. ``retryable`` says whether trying again may help.

    Throttling, timeouts and the provider's own failures are retryable; a refused request (invalid,
    not allowed, an unknown model) is not. ``code`` is the provider's error code when there is one.
    """

    def __init__(self, message: str, *, retryable: bool | None = None, code: str | None = None) -> None:
        super().__init__(message, retryable=retryable)
        self.code = code


class TransitionLimitError(CairnError):
    """A job reached its limit of transitions (:mod:`cairn.features.transition_guard`): it is stopped in ``error``.

    ``limit`` is the limit in force; the message names the setting that gives it and how to go on.
    """

    def __init__(self, job_id: str, limit: int, message: str) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.limit = limit


class BudgetExceededError(CairnError):
    """A job's next phase would pass its pipeline's budget (:mod:`cairn.features.budget`): stopped in ``error``.

    ``budget`` is the pipeline's ``max_cost_usd``; ``spent`` what the job cost so far; ``phase`` the phase not started.
    """

    def __init__(self, job_id: str, budget: float, spent: float, phase: str, message: str) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.budget = budget
        self.spent = spent
        self.phase = phase
