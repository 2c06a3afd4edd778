"""What a phase sees while it runs: its job, its state, and ways to record progress."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Generic, Literal, TypeVar, cast

from .admission import check_text
from .clock import Clock
from .errors import InvalidInputError
from .models import Checkpoint, EntryKind, Lesson, LogEntry, LogLevel
from .redaction import NO_REDACTION, Redaction
from .steps import StepBook
from .transitions import Journal

S = TypeVar("S")
T = TypeVar("T")
_NO_STEPS = "this context was made outside a phase run: it keeps no steps"

logger = logging.getLogger("cairn")

_LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
_ALIASES: dict[str, LogLevel] = {"warn": "warning"}
"""Other names accepted for a level (cl-pipelines writes ``"warn"``); the log stores the level's own name."""


class JournalBuffer:
    """Log entries and usage recorded since the last write; handed over with it."""

    def __init__(self, redaction: Redaction = NO_REDACTION) -> None:
        self._log: list[LogEntry] = []
        self._usage: dict[str, float] = {}
        #: What each entry's message and reason are redacted with before they are queued (:mod:`.redaction`).
        self.redaction = redaction

    def add_entry(self, entry: LogEntry) -> None:
        """Queue one log entry or annotation, redacted."""
        if self.redaction.active:
            redact = self.redaction
            entry = entry.model_copy(
                update={"message": redact.text(entry.message), "reason": redact.maybe_text(entry.reason)}
            )
        self._log.append(entry)

    def add_usage(self, counters: dict[str, float]) -> None:
        """Add to the usage counters."""
        for key, value in counters.items():
            self._usage[key] = self._usage.get(key, 0) + value

    def peek(self) -> Journal:
        """What is queued, without clearing it."""
        return Journal(log=tuple(self._log), usage=dict(self._usage))

    def clear(self) -> None:
        """Forget what was queued (after it was written)."""
        self._log.clear()
        self._usage.clear()


class PhaseContext(Generic[S]):
    """The running phase's view of its job.

    ``state`` is the state from the checkpoint (a model instance when the
    pipeline has a state model); ``checkpoint`` is the checkpoint itself;
    ``attempt`` counts from 1 for each phase.
    """

    def __init__(
        self,
        *,
        job_id: str,
        phase: str,
        state: S,
        checkpoint: Checkpoint,
        attempt: int,
        clock: Clock,
        saver: Callable[[Any], None],
        journal: JournalBuffer,
        signal: Any = None,
        results: list[Any] | None = None,
        item: int | None = None,
        recaller: Callable[[int], list[Lesson]] | None = None,
        steps: StepBook | None = None,
    ) -> None:
        self.job_id = job_id
        self.phase = phase
        self.state = state
        self.checkpoint = checkpoint
        self.attempt = attempt
        self._clock = clock
        self._saver = saver
        self._journal = journal
        self.signal = signal
        """The payload of the signal this phase was waiting for (``WaitFor``); None otherwise."""
        self.results = results
        """The results of a map's items, in item order, in the phase after the map (``Map(then=)``)."""
        self.item = item
        """In an item phase of a map: the item's index (its input is ``state``); None otherwise."""
        self._recaller = recaller
        self._steps = steps if steps is not None else StepBook(f"{job_id}\x00{phase}", refusal=_NO_STEPS)

    def save_state(self, state: S) -> None:
        """Checkpoint ``state`` now, as ``{nextPhase: <this phase>, state}``.

        A crash after this re-enters this same phase with this state.
        """
        self._saver(state)
        self.state = state

    def idempotency_key(self, name: str) -> str:
        """A key for the external call ``name``, to pass as that API's idempotency key (``Idempotency-Key``...).

        The same on every retry and resume of this run of the phase, in any process; another after a rerun from
        this phase or a start over, and another for another name. ``cairn-`` and 32 hex digits: safe as an HTTP
        header value. The first key of a run of the phase saves the run's id with the checkpoint (one write) before
        it is returned. In a map's item phase it names the item (every attempt of it). See :mod:`cairn.core.steps`.
        """
        return self._steps.key(name)

    def step(self, name: str, fn: Callable[[], T]) -> T:
        """``fn()``, called once per run of the phase: its result is saved with the checkpoint before it is returned.

        A retry or a resume of this run of the phase gets the saved result without calling ``fn`` again; a
        crash after ``fn``'s effect and before the save lands calls it again (pass :meth:`idempotency_key` to the
        external API to close that window). The result must be JSON data (a pydantic model is dumped): it is
        returned as it was saved. Each step of a run has its own name; the steps are forgotten when the phase
        commits. ``fn`` is a plain function: in an ``async def`` phase use :meth:`step_async`.
        """
        result: T = self._steps.run(name, fn)
        return result

    async def step_async(self, name: str, fn: Callable[[], Any]) -> Any:
        """As :meth:`step`, awaited: ``fn`` may be an ``async def`` function (its coroutine awaited) or a plain one."""
        return await self._steps.run_async(name, fn)

    def log(self, message: str, level: LogLevel | Literal["warn"] = "info") -> None:
        """Add a line to the job's log (stored with the next checkpoint write); ``"warn"`` is ``"warning"``."""
        named: str = _ALIASES.get(level, level)
        if named not in _LEVELS:
            raise InvalidInputError(f"Unknown log level {level!r}; use one of {', '.join(_LEVELS)}")
        self._record(message, level=cast(LogLevel, named), kind="log")

    def observe(self, text: str) -> None:
        """Record something the phase noticed."""
        self._record(text, kind="observation")

    def decide(self, text: str, reason: str) -> None:
        """Record a decision and the reason for it."""
        self._record(text, kind="decision", reason=reason)

    def insight(self, text: str) -> None:
        """Record a reusable lesson: in the job's log, and in the pipeline's memory for later jobs (``recall``)."""
        self._record(text, kind="insight")

    def inline(self, phase: str, state: Any) -> PhaseContext[Any]:
        """A context for running another phase's code inside this phase (a plan's step) on ``state``.

        It cannot ``save_state``; what it logs and the usage it adds join this phase's with :meth:`absorb`.
        """
        return PhaseContext(
            job_id=self.job_id,
            phase=phase,
            state=state,
            checkpoint=Checkpoint(next_phase=phase, state=state, created_at=self._clock()),
            attempt=self.attempt,
            clock=self._clock,
            saver=_no_inline_saves,
            journal=JournalBuffer(self._journal.redaction),
            recaller=self._recaller,
            steps=self._steps,  # a plan's steps keep their ctx.step results with the plan phase's checkpoint
        )

    def absorb(self, inner: PhaseContext[Any]) -> dict[str, float]:
        """Take over what an :meth:`inline` context recorded (its log and usage); the usage it added."""
        recorded = inner._journal.peek()
        for entry in recorded.log:
            self._journal.add_entry(entry)
        self._journal.add_usage(dict(recorded.usage))
        inner._journal.clear()
        return dict(recorded.usage)

    def recall(self, limit: int = 10) -> list[Lesson]:
        """The ``limit`` newest lessons of this pipeline (``insight`` of earlier jobs and phases), newest first.

        Deployed, they are the lessons of this job's owner only. An insight recorded by this phase run is
        kept with its next write (``save_state`` or the end of the phase), so it is recalled after that.
        """
        return self._recaller(limit) if self._recaller is not None else []

    def record_error(self, text: str) -> None:
        """Record a failure signal without failing the phase."""
        self._record(text, level="error", kind="error")

    def add_usage(self, **counters: float) -> None:
        """Add to the job's usage counters (summed across phases and retries)."""
        for key, value in counters.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidInputError(f"Usage counter {key!r} must be a number, got {value!r}")
        self._journal.add_usage(counters)

    def _record(self, message: str, *, kind: EntryKind, level: LogLevel = "info", reason: str | None = None) -> None:
        what = "A log line" if kind == "log" else f"An annotation ({kind})"
        check_text(message, what)
        if reason is not None:
            check_text(reason, f"The reason of {what[0].lower()}{what[1:]}")
        entry = LogEntry(
            message=message, level=level, phase=self.phase, timestamp=self._clock(), kind=kind, reason=reason
        )
        self._journal.add_entry(entry)
        logger.log(_LEVELS[level], message, extra={"job_id": self.job_id, "phase": self.phase, "kind": kind})


def _no_inline_saves(state: Any) -> None:
    raise InvalidInputError("A phase run inside another (a plan's step) cannot save_state: it returns Done(result)")
