"""Shared logic for stores that keep each job as one document behind a lock.

Memory and file storage implement four small methods (lock, load, store,
list ids); this base applies the pure transition rules under the lock, so
each transition is one atomic read-check-write.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import TypeVar

from .. import transitions
from ..models import Job, JobStatus
from ..transitions import Claim, Commit, Fence, Save, StartJob
from .base import Storage

T = TypeVar("T")


class DocumentStorage(Storage):
    """A store of whole job documents, each changed under a per-job lock."""

    @abstractmethod
    def _locked(self, job_id: str) -> AbstractContextManager[object]:
        """Hold the job's lock (across threads and, where it applies, processes)."""

    @abstractmethod
    def _load(self, job_id: str) -> Job | None:
        """The stored document, expired or not; None when there is none."""

    @abstractmethod
    def _store(self, job: Job) -> None:
        """Write the document atomically (all or nothing)."""

    @abstractmethod
    def _job_ids(self) -> Iterator[str]:
        """The ids of every stored document."""

    def _update(self, job_id: str, change: Callable[[Job | None], T]) -> T:
        with self._locked(job_id):
            result = change(self._load(job_id))
            if isinstance(result, Job):
                self._store(result)
            return result

    def get_job(self, job_id: str) -> Job | None:
        return transitions.live(self._load(job_id), self.clock())

    def list_jobs(self, *, status: JobStatus | None = None) -> list[Job]:
        now = self.clock()
        jobs = [job for job in map(self.get_job_or_skip, self._job_ids()) if job is not None]
        live_jobs = [job for job in jobs if not job.is_expired(now)]
        if status is not None:
            live_jobs = [job for job in live_jobs if job.status == status]
        return sorted(live_jobs, key=lambda job: (job.created_at, job.job_id), reverse=True)

    def get_job_or_skip(self, job_id: str) -> Job | None:
        """Like get_job, for listings: adapters may skip unreadable documents here."""
        return self.get_job(job_id)

    def start_job(self, request: StartJob) -> Job:
        return self._update(request.job_id, lambda job: transitions.start(job, request))

    def claim(self, request: Claim) -> Job | None:
        return self._update(request.job_id, lambda job: transitions.claim(job, request))

    def save(self, job_id: str, fence: Fence, request: Save) -> Job:
        return self._update(job_id, lambda job: transitions.save(job, job_id, fence, request))

    def commit(self, job_id: str, fence: Fence, request: Commit) -> Job:
        return self._update(job_id, lambda job: transitions.commit(job, job_id, fence, request))

    def pause(self, job_id: str) -> Job:
        now = self.clock()
        return self._update(job_id, lambda job: transitions.pause(job, job_id, now))

    def cancel(self, job_id: str) -> Job:
        now = self.clock()
        return self._update(job_id, lambda job: transitions.cancel(job, job_id, now))
