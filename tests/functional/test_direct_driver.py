"""The direct driver end to end: the API starts a job, phase functions invoke each other, a crash is retried."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cairn import JobStatus
from cairn.testing.faults import SimulatedCrash
from document_intake.fields import extract_fields
from tests.functional.api_client import ALICE, JOB, PHASES, Api, phase_names


@pytest.fixture
def extractions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts page extractions; the worker process dies while extracting the third page."""
    calls: list[int] = []
    real: Callable[..., Any] = extract_fields

    def extract_or_die(*args: Any, **kwargs: Any) -> Any:
        calls.append(len(calls) + 1)
        if len(calls) == 3:
            raise SimulatedCrash("the extract worker ran out of memory")
        return real(*args, **kwargs)

    monkeypatch.setattr("document_intake.pipeline.extract_fields", extract_or_die)
    return calls


def test_a_crashed_phase_leaves_the_job_in_error_and_a_retry_resumes_it(api: Api, extractions: list[int]) -> None:
    api.create(document="contract.txt")
    api.run()  # fetch, split, extract (dies on page 3), then the on-failure record reaches the scheduler

    [failure] = api.stack.invoker.failures
    assert failure["requestPayload"]["phase"] == "extract"
    crashed = api.stored()
    assert crashed.status == JobStatus.ERROR
    assert crashed.error == "the extract worker ran out of memory"
    assert crashed.checkpoint is not None
    assert crashed.checkpoint.next_phase == "extract"
    assert len(crashed.checkpoint.state["results"]) == 2  # pages 1 and 2 were saved before the crash
    assert crashed.lease_owner is None
    assert phase_names(crashed) == ["fetch", "split", "extract"]

    reply = api.call("retry-job-resume")
    assert reply.status == 202, reply.body
    api.run()

    done = api.stored()
    assert done.status == JobStatus.COMPLETE
    assert phase_names(done)[-2:] == ["extract", "publish"]
    assert extractions == [1, 2, 3, 4, 5]  # page 3 again after the crash, then page 4: pages 1-2 not redone
    assert done.usage["pages"] == 4
    assert done.result["document"]["kind"] == "contract"
    assert len(done.result["pages"]) == 4


def test_the_job_runs_to_complete_through_every_phase_function(api: Api) -> None:
    api.create()
    assert [invocation.function for invocation in api.stack.invoker.queue] == ["cairn-document-intake-fetch"]
    ran = api.stack.run_until_idle()
    assert ran == len(PHASES)
    job = api.stored(JOB, ALICE)
    assert job.status == JobStatus.COMPLETE
    assert phase_names(job) == PHASES
    assert api.stack.invoker.failures == []
