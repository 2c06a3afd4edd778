"""A store written against the storage port of an earlier release, and never changed since.

The port then required fifteen methods, with the signatures below: no map records (``create_map``, ``get_map``,
``get_maps``, ``mark_map``), no single item read (``get_item``), no ``by`` on ``pause`` and ``cancel``, no
``before`` on ``entered`` and no ``finishes`` on ``write_item``. It keeps its jobs in a memory store of cairn's
and hands each call on, as an adapter over another service would. Do not bring it up to date: the suite keeps it
as it was, so that a release that breaks a store like it fails here (tests/contract/test_earlier_release_store.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from cairn import (
    Checkpoint,
    Claim,
    Clock,
    Commit,
    Fence,
    Job,
    JobStatus,
    Lesson,
    MapItem,
    MemoryStorage,
    Save,
    SignalDelivery,
    StartJob,
    Storage,
    WaitExpiry,
)


class EarlierReleaseStorage(Storage):
    """The fifteen methods of the earlier port, each handed to a memory store."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        self.inner = MemoryStorage(clock=self.clock)

    def get_job(self, job_id: str) -> Job | None:
        return self.inner.get_job(job_id)

    def list_jobs(self, *, status: JobStatus | None = None) -> list[Job]:
        return self.inner.list_jobs(status=status)

    def start_job(self, request: StartJob) -> Job:
        return self.inner.start_job(request)

    def claim(self, request: Claim) -> Job | None:
        return self.inner.claim(request)

    def save(self, job_id: str, fence: Fence, request: Save) -> Job:
        return self.inner.save(job_id, fence, request)

    def commit(self, job_id: str, fence: Fence, request: Commit) -> Job:
        return self.inner.commit(job_id, fence, request)

    def pause(self, job_id: str) -> Job:
        return self.inner.pause(job_id)

    def cancel(self, job_id: str) -> Job:
        return self.inner.cancel(job_id)

    def deliver_signal(self, job_id: str, request: SignalDelivery) -> Job:
        return self.inner.deliver_signal(job_id, request)

    def expire_wait(self, job_id: str, request: WaitExpiry) -> Job | None:
        return self.inner.expire_wait(job_id, request)

    def entered(self, job_id: str, phase: str) -> Checkpoint | None:
        return self.inner.entered(job_id, phase)

    def get_items(self, job_id: str, fan_out: str) -> list[MapItem]:
        return self.inner.get_items(job_id, fan_out)

    def write_item(
        self, job_id: str, fan_out: str, item: MapItem, *, expected_version: int | None, expires_at: int
    ) -> bool:
        return self.inner.write_item(job_id, fan_out, item, expected_version=expected_version, expires_at=expires_at)

    def remember(self, pipeline: str, lessons: Sequence[Lesson], *, expires_at: int) -> None:
        self.inner.remember(pipeline, lessons, expires_at=expires_at)

    def recall(self, pipeline: str, limit: int) -> list[Lesson]:
        return self.inner.recall(pipeline, limit)
