"""Fault injection for tests and the demo: a storage wrapper that dies at a chosen operation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from ..models import Job, JobStatus
from ..storage.base import Storage
from ..transitions import Claim, Commit, Fence, Save, StartJob

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


class CrashingStorage(Storage):
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
        super().__init__(clock=inner.clock)
        self.inner = inner
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

    def _call(self, name: str, operation: Callable[[], _T]) -> _T:
        self._step(name, "before")
        self.operations.append(name)
        result = operation()
        self._step(name, "after")
        return result

    def get_job(self, job_id: str) -> Job | None:
        return self._call("get_job", lambda: self.inner.get_job(job_id))

    def list_jobs(self, *, status: JobStatus | None = None) -> list[Job]:
        return self._call("list_jobs", lambda: self.inner.list_jobs(status=status))

    def start_job(self, request: StartJob) -> Job:
        return self._call("start_job", lambda: self.inner.start_job(request))

    def claim(self, request: Claim) -> Job | None:
        return self._call("claim", lambda: self.inner.claim(request))

    def save(self, job_id: str, fence: Fence, request: Save) -> Job:
        return self._call("save", lambda: self.inner.save(job_id, fence, request))

    def commit(self, job_id: str, fence: Fence, request: Commit) -> Job:
        return self._call("commit", lambda: self.inner.commit(job_id, fence, request))

    def pause(self, job_id: str) -> Job:
        return self._call("pause", lambda: self.inner.pause(job_id))

    def cancel(self, job_id: str) -> Job:
        return self._call("cancel", lambda: self.inner.cancel(job_id))
