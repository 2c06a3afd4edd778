"""A storage wrapper that reports each mid-phase checkpoint as it is written."""

from __future__ import annotations

from collections.abc import Callable

from cairn import Job
from cairn.core.storage_port import Storage
from cairn.core.transitions import Fence, Save
from cairn.storage.delegating import DelegatingStorage


class WatchedStorage(DelegatingStorage):
    """Passes every call to ``inner``; after each successful ``save`` calls ``on_save(job)``.

    The demo uses the hook to print per-page progress, and its worker process
    uses it to die right after a chosen checkpoint is on disk.
    """

    def __init__(self, inner: Storage, *, on_save: Callable[[Job], None]) -> None:
        super().__init__(inner)
        self.on_save = on_save

    def save(self, job_id: str, fence: Fence, request: Save) -> Job:
        job = self.inner.save(job_id, fence, request)
        self.on_save(job)
        return job
