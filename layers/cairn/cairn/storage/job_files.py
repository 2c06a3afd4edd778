"""Loading a job file (``cairn jobs pull``) into a store: ``cairn dev --load`` and ``cairn_local.load``."""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import InvalidInputError, JobExistsError
from ..core.models import Job
from ..core.storage_port import Storage
from .job_file import JobFile, read_job_file
from .job_loading import loaded_job


def read_file(path: str | os.PathLike[str]) -> JobFile:
    """The job file at ``path``; InvalidInputError when it is missing, unreadable, or not a job file."""
    where = Path(path)
    try:
        text = where.read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"cannot read {where}: {exc.strerror or exc}") from None
    return read_job_file(text, name=str(where))


def load_job_file(
    storage: Storage, path: str | os.PathLike[str], *, replace: bool = False, ttl_seconds: int = 86400
) -> Job:
    """Recreate the job the file at ``path`` holds in ``storage``: same id, input, history, checkpoint, status.

    A live job with that id is refused (InvalidInputError) unless ``replace``. The job's log ends with
    "Loaded from FILE, pulled from API at TIME"; its expiry runs ``ttl_seconds`` from now.
    """
    pulled = read_file(path)
    job, history = loaded_job(pulled, source=Path(path).name, now_ms=storage.clock(), ttl_seconds=ttl_seconds)
    try:
        return storage.put_job(job, history, replace=replace)
    except JobExistsError:
        raise InvalidInputError(
            f'job "{job.job_id}" already exists here; load it with replace (cairn dev --load FILE --replace, '
            "cairn_local.load(FILE, replace=True)) to drop the local one"
        ) from None
