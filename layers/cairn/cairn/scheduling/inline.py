"""An in-process scheduler: a FIFO of advances, run by ``drain()``."""

from __future__ import annotations

import heapq
import inspect
import itertools
import time
from collections.abc import Callable
from typing import Any, Literal

from ..core.errors import CairnError, InvalidInputError

AdvanceFunction = Callable[..., Any]
Triage = Callable[[str, int | None], Literal["run", "hold", "drop"]]
"""Decides what ``drain`` does with an advance that is not due yet (see :meth:`InlineScheduler.bind`)."""

_Entry = tuple[float, int, str, str, int | None, dict[str, Any]]

ADVANCE_SIGNATURE = "def advance(job_id, *, phase, sequence=None, **extra)"
"""How a function given to :meth:`InlineScheduler.bind` can be written: ``extra`` takes a map item's
``fan_out=`` and ``item=``."""


class InlineScheduler:
    """Queues advances in memory and runs them in order when drained.

    Advances run in the order they fall due (first in, first out among equal
    due times); ``drain`` waits for delayed ones. Delays are in seconds, as
    ``now`` returns and ``sleep`` takes them; both can be replaced to run
    delays on a fake clock.
    """

    def __init__(
        self,
        *,
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._now = now
        self._sleep = sleep
        self._queue: list[_Entry] = []
        self._order = itertools.count()
        self._advance: AdvanceFunction | None = None
        self._triage: Triage | None = None

    def bind(self, fn: AdvanceFunction, *, triage: Triage | None = None) -> None:
        """Set what runs an advance: called as ``fn(job_id, phase=phase, sequence=sequence)`` (and, for a
        map's item, with ``fan_out=`` and ``item=``).

        ``triage(job_id, sequence)`` is asked about an advance that is not due yet, before ``drain``
        waits for it: ``"run"`` (wait, then run it), ``"hold"`` (a wait's timeout: leave it queued for
        a later drain, the job waits for a signal) or ``"drop"`` (the job has moved on: it would do
        nothing).

        ``fn`` is checked here: one that cannot be called that way raises InvalidInputError naming
        the line to write (:data:`ADVANCE_SIGNATURE`).
        """
        _check_advance(fn)
        self._advance = fn
        self._triage = triage

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        """Queue an advance of ``phase`` for ``job_id`` (at ``sequence``) after ``delay`` seconds."""
        if delay < 0:
            raise InvalidInputError(f"delay must not be negative, got {delay}")
        heapq.heappush(self._queue, (self._now() + delay, next(self._order), job_id, phase, sequence, {}))

    def schedule_wake(self, job_id: str, *, pipeline: str, phase: str, sequence: int | None) -> None:
        """Queue an advance of ``job_id`` now, whatever its pipeline: the function bound runs it as any advance
        (:meth:`cairn.Cairn.advance` finds the job's pipeline; a job of a pipeline it does not run is left alone)."""
        self.schedule_advance(job_id, phase=phase, sequence=sequence)

    def schedule_item(self, job_id: str, *, phase: str, fan_out: str, item: int, delay: float = 0.0) -> None:
        """Queue an advance of item ``item`` of the map ``fan_out`` (run by ``phase``) after ``delay`` seconds."""
        if delay < 0:
            raise InvalidInputError(f"delay must not be negative, got {delay}")
        extra = {"fan_out": fan_out, "item": item}
        heapq.heappush(self._queue, (self._now() + delay, next(self._order), job_id, phase, None, extra))

    @property
    def bound(self) -> bool:
        """Whether :meth:`bind` has given this scheduler the function it runs advances with."""
        return self._advance is not None

    def pending(self) -> int:
        """How many advances are queued."""
        return len(self._queue)

    def queued_jobs(self) -> set[str]:
        """The ids of the jobs with an advance (or a map item) queued here."""
        return {entry[2] for entry in self._queue}

    def drain(self, *, max_steps: int | None = None) -> int:
        """Run queued advances in order until none is left to run; returns how many ran.

        An advance not due yet is waited for, unless triage holds it (a wait's timeout: it is set
        aside, still queued for a later drain, and the drain goes on with the others; it ends when
        only held advances are left) or drops it (the job has moved past it).

        A process-death style ``BaseException`` from an advance passes straight
        through (the advance it came from is gone, as it would be in a real crash).
        """
        if self._advance is None:
            raise CairnError("InlineScheduler.drain() needs bind(fn) first")
        ran = 0
        held: list[_Entry] = []
        try:
            while self._queue and (max_steps is None or ran < max_steps):
                due, _, job_id, phase, sequence, extra = self._queue[0]
                wait = due - self._now()
                if wait > 0 and self._triage is not None:
                    verdict = self._triage(job_id, sequence)
                    if verdict == "hold":
                        held.append(heapq.heappop(self._queue))
                        continue
                    if verdict == "drop":
                        heapq.heappop(self._queue)
                        continue
                heapq.heappop(self._queue)
                if wait > 0:
                    self._sleep(wait)
                ran += 1
                self._advance(job_id, phase=phase, sequence=sequence, **extra)
        finally:
            for entry in held:
                heapq.heappush(self._queue, entry)
        return ran


def _check_advance(fn: AdvanceFunction) -> None:
    """Refuse a function ``drain`` could not call with the arguments it passes (a map item's among them)."""
    if not callable(fn):
        raise InvalidInputError(f"InlineScheduler.bind() needs a function, got {type(fn).__name__}")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # no signature to read (a builtin): nothing to check
    try:
        signature.bind("job", phase="phase", sequence=None, fan_out="map", item=0)
    except TypeError as exc:
        name = getattr(fn, "__qualname__", None) or type(fn).__name__
        raise InvalidInputError(
            f"InlineScheduler.bind(): {name}{signature} cannot take what the drain passes "
            f"(job_id, phase=, sequence= and, for a map item, fan_out= and item=): {exc}. "
            f"Write it as: {ADVANCE_SIGNATURE}"
        ) from None
