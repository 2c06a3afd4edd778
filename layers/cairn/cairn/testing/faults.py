"""Fault injection for tests and the demo: process deaths and lost responses at chosen operations."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from ..core.errors import StorageError
from ..core.storage_port import Storage
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
        try:
            return operation()
        finally:  # a death just after the call comes whether the call answered or raised
            self._step(name, "after")


FaultKind = Literal["crash-before", "crash-after", "lost-response"]
WRITES = frozenset({"start_job", "claim", "save", "commit", "pause", "cancel"})


@dataclass(frozen=True)
class Fault:
    """At the storage call numbered ``operation`` (0-based, every call counted): die before or after it, or
    let it land and lose its response (writes only: the caller sees a retryable StorageError)."""

    operation: int
    kind: FaultKind


class FaultyStorage(DelegatingStorage):
    """Wraps a storage and injects a schedule of faults: process deaths and lost responses.

    A lost response runs the write for real, then raises what a read timeout
    raises (a retryable :class:`cairn.core.errors.StorageError`): the write landed,
    the caller cannot know it. ``operations`` lists the calls made so far.
    """

    def __init__(self, inner: Storage, faults: list[Fault] | tuple[Fault, ...] = ()) -> None:
        super().__init__(inner)
        self.faults = {fault.operation: fault.kind for fault in faults}
        self.operations: list[str] = []
        self.lost_responses = 0

    def around(self, name: str, operation: Callable[[], _T]) -> _T:
        index = len(self.operations)
        kind = self.faults.get(index)
        self.operations.append(name)
        if kind == "crash-before":
            raise SimulatedCrash(f"simulated crash before storage operation #{index} ({name})")
        try:
            result = operation()
        finally:
            if kind == "crash-after":  # the process dies once the call returns, whether it answered or raised
                raise SimulatedCrash(f"simulated crash after storage operation #{index} ({name})")
        if kind == "lost-response" and name in WRITES:
            self.lost_responses += 1
            raise StorageError(f"simulated lost response of storage operation #{index} ({name})", retryable=True)
        return result


class LosingResponses:
    """A boto3 client proxy that lets chosen calls reach the service, then loses their responses.

    ``lose`` decides, per call (operation name, call number), whether the call
    that just reached the service answers with a read timeout instead of its
    response, a refusal (an error answer) included: what
    a dropped connection looks like to a caller whose botocore has no retries
    left (``max_attempts=1``).
    """

    def __init__(self, client: Any, lose: Callable[[str, int], bool]) -> None:
        self._client = client
        self._lose = lose
        self.calls = 0
        self.lost: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if name.startswith("_") or not callable(attribute) or name in ("get_waiter", "get_paginator", "can_paginate"):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            from botocore.exceptions import ReadTimeoutError  # here, so the module loads without the AWS extra

            number = self.calls
            self.calls += 1
            try:
                response = attribute(*args, **kwargs)
            except Exception as refused:  # an error answer (a refused condition) is lost like any other
                if self._lose(name, number):
                    self.lost.append(name)
                    raise ReadTimeoutError(endpoint_url=f"simulated://{name}") from refused
                raise
            if self._lose(name, number):
                self.lost.append(name)
                raise ReadTimeoutError(endpoint_url=f"simulated://{name}")
            return response

        return call
