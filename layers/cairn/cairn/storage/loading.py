"""Loading a whole job into a document store (memory, file): :meth:`DocumentStorage.put_job`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core import transitions
from ..core.errors import JobExistsError
from ..core.job_loading import checked_whole_job
from ..core.models import HistoryItem, Job

if TYPE_CHECKING:
    from .document import DocumentStorage


def put_document_job(store: DocumentStorage, job: Job, history: Sequence[HistoryItem], *, replace: bool) -> Job:
    """Store ``job`` and its history under the job's lock; JobExistsError for a live job unless ``replace``."""
    checked_whole_job(job, history)
    with store._locked(job.job_id):
        existing = transitions.live(store._load(job.job_id), store.clock())
        if existing is not None and not replace:
            raise JobExistsError(job.job_id, existing)
        for item in history:
            store._append_history(job.job_id, item)
        store._store(job.model_copy(update={"log": [], "phases": [], "history_renew_by": None}))
    stored = store.get_job(job.job_id)
    assert stored is not None
    return stored
