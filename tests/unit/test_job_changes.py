"""The transition rules change a job through typed fields: the typed list is the model's, a wrong name is refused."""

from __future__ import annotations

from typing import Any, get_type_hints

import pytest

from cairn.core.models import Job, JobStatus
from cairn.core.transitions.changes import JobChange, changed


def _job() -> Job:
    return Job(job_id="j", pipeline="p", created_at=1, updated_at=1, expires_at=10)


def test_the_typed_change_names_every_field_of_a_job_and_no_other() -> None:
    assert set(get_type_hints(JobChange)) == set(Job.model_fields)


def test_a_change_sets_its_fields_on_a_copy() -> None:
    job = _job()
    running = changed(job, status=JobStatus.RUNNING, sequence=4)
    assert (running.status, running.sequence) == (JobStatus.RUNNING, 4)
    assert (job.status, job.sequence) == (JobStatus.IDLE, 0)


def test_a_misspelt_field_is_refused_not_stored() -> None:
    fields: dict[str, Any] = {"sequnce": 4}
    with pytest.raises(TypeError, match=r"Job has no field \['sequnce'\]"):
        changed(_job(), **fields)
