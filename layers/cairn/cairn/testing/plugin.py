"""pytest fixtures for testing your own pipelines (registered as the ``cairn`` pytest plugin by the dev extra).

- ``cairn_clock``: a clock that moves only when slept on or advanced, so retry backoffs and delays
  take no real time;
- ``cairn_local``: makes a :class:`cairn.Cairn` for your pipelines on memory storage (or the storage
  you pass) with an inline scheduler on that clock: ``start``, then ``run_until_idle()``;
- :func:`crash_on`: a storage whose worker dies (:class:`SimulatedCrash`) at the n-th call of one
  storage operation (``"save"``, ``"commit"``...), as a process killed there would.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import pytest

from ..app import Cairn
from ..pipeline import Pipeline
from ..registry import PipelineRegistry
from ..scheduling.inline import InlineScheduler
from ..storage.base import Storage
from ..storage.delegating import DelegatingStorage
from ..storage.memory import MemoryStorage
from .faults import SimulatedCrash

_T = TypeVar("_T")
Pipelines = Pipeline[Any] | Iterable[Pipeline[Any]] | PipelineRegistry


class SkippingClock:
    """Unix milliseconds that move only when told to: ``sleep`` and ``advance`` skip time instantly."""

    def __init__(self, start_ms: int | None = None) -> None:
        self.now_ms = int(time.time() * 1000) if start_ms is None else start_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``."""
        self.now_ms += int(seconds * 1000)

    def monotonic(self) -> float:
        """The time in seconds (what the inline scheduler reads)."""
        return self.now_ms / 1000

    def sleep(self, seconds: float) -> None:
        """Skip ``seconds`` at once."""
        self.advance(seconds)


class CrashOn(DelegatingStorage):
    """A storage whose worker dies at the ``nth`` call of ``operation``, before the call is made."""

    def __init__(self, inner: Storage, operation: str, nth: int = 1) -> None:
        super().__init__(inner)
        self.operation = operation
        self.nth = nth
        self.calls = 0

    @property
    def crashed(self) -> bool:
        """Whether the worker has died."""
        return self.calls >= self.nth

    def around(self, name: str, operation: Callable[[], _T]) -> _T:
        if name == self.operation:
            self.calls += 1
            if self.calls == self.nth:
                raise SimulatedCrash(f"the worker died at {name} #{self.nth}")
        return operation()


def crash_on(operation: str, nth: int = 1, *, storage: Storage | None = None) -> CrashOn:
    """``storage`` (memory by default) with a worker that dies at the ``nth`` call of ``operation``.

    Operations: ``start_job``, ``claim``, ``save`` (a phase's ``ctx.save_state``), ``commit`` (a phase's
    outcome), ``pause``, ``cancel``, ``get_job``. The job is left as a real crash leaves it; a
    ``retry`` of it resumes from its checkpoint.
    """
    return CrashOn(storage if storage is not None else MemoryStorage(), operation, nth)


def local_cairn(pipelines: Pipelines, *, clock: SkippingClock, storage: Storage | None = None) -> Cairn:
    """A front door for ``pipelines`` on ``storage`` (memory by default), advanced in-process on ``clock``."""
    scheduler = InlineScheduler(now=clock.monotonic, sleep=clock.sleep)
    chosen = storage if storage is not None else MemoryStorage(clock=clock)
    layer: Storage | None = chosen
    while layer is not None:  # the wrappers and the store they wrap all read the same clock
        layer.clock = clock
        layer = layer.inner if isinstance(layer, DelegatingStorage) else None
    return Cairn(pipelines, storage=chosen, scheduler=scheduler)


@pytest.fixture
def cairn_clock() -> SkippingClock:
    """A clock that skips time: retry backoffs and delays take none."""
    return SkippingClock()


@pytest.fixture
def cairn_local(cairn_clock: SkippingClock) -> Callable[..., Cairn]:
    """Makes a :class:`cairn.Cairn` for your pipelines on memory storage (or ``storage=``) and ``cairn_clock``."""

    def make(pipelines: Pipelines, *, storage: Storage | None = None) -> Cairn:
        return local_cairn(pipelines, clock=cairn_clock, storage=storage)

    return make


__all__ = ["CrashOn", "SimulatedCrash", "SkippingClock", "cairn_clock", "cairn_local", "crash_on", "local_cairn"]
