"""Fault injection for tests and the demo: a storage wrapper that dies at a chosen operation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from ..storage.base import Storage
from ..storage.delegating import DelegatingStorage

Moment = Literal["before", "after"]
_T = TypeVar("_T")


class SimulatedCrash(BaseException):
    """A process death, simulated. Not an ``Exception``: it passes through every layer untouched."""


@dataclass(frozen=True)
class CrashPoint:
    """Die just ``moment`` the storage operation numbered ``operation`` (0-based, counting every call)."""

    operation: int
    moment: Moment = "before"


def _raise_crash(point: CrashPoint, name: str) -> None:
    raise SimulatedCrash(f"simulated crash {point.moment} storage operation #{point.operation} ({name})")


class CrashingStorage(DelegatingStorage):
    """Wraps a storage and dies at one chosen point between its operations.

    ``on_crash`` decides what dying means: by default a :class:`SimulatedCrash`
    is raised; the demo passes a function that ends the process for real.
    ``operations`` lists the names of the calls made so far, in order.
    """

    def __init__(
        self,
        inner: Storage,
        crash_at: CrashPoint | None = None,
        *,
        on_crash: Callable[[CrashPoint, str], None] = _raise_crash,
    ) -> None:
        super().__init__(inner)
        self.crash_at = crash_at
        self.on_crash = on_crash
        self.operations: list[str] = []

    @property
    def crashed(self) -> bool:
        """Whether the crash point has been reached."""
        return self.crash_at is not None and len(self.operations) > self.crash_at.operation

    def _step(self, name: str, moment: Moment) -> None:
        point = self.crash_at
        index = len(self.operations) - (1 if moment == "after" else 0)
        if point is not None and point.operation == index and point.moment == moment:
            self.on_crash(point, name)

    def around(self, name: str, operation: Callable[[], _T]) -> _T:
        self._step(name, "before")
        self.operations.append(name)
        result = operation()
        self._step(name, "after")
        return result
