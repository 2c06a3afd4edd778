"""Every sample event in ``events/api/`` through the API function's handler, on the local stack."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from cairn import JobStatus
from pipelines import PIPELINES
from tests.events import event_names
from tests.functional.api_client import ALICE, CAROL, JOB, Api, Reply


def nothing(api: Api) -> None:
    """No job yet."""


def running(api: Api) -> None:
    """The sample job has run its first phase and is running."""
    api.create()
    api.run_phases(1)


def paused(api: Api) -> None:
    """The sample job was paused after its first phase."""
    running(api)
    assert api.call("pause-job").status == 200
    api.run()


def complete(api: Api) -> None:
    """The sample job ran to the end."""
    api.create()
    api.run()


@dataclass(frozen=True)
class Case:
    """What a sample event needs first, and what it must answer and leave in the table."""

    given: Callable[[Api], None]
    status: int
    error: str | None = None  # the error code of an error response
    job: JobStatus | None = None  # the sample job's status in the response and in the table afterwards


CASES = {
    "api/create-job": Case(nothing, 202, job=JobStatus.RUNNING),
    "api/create-job-existing": Case(complete, 409, "job_exists", job=JobStatus.COMPLETE),
    "api/create-job-jwt": Case(nothing, 202),
    "api/create-job-bad-id": Case(nothing, 400, "invalid_request"),
    "api/create-job-unknown-pipeline": Case(nothing, 400, "invalid_request"),
    "api/create-job-bad-state": Case(nothing, 400, "invalid_request"),
    "api/create-job-malformed-json": Case(nothing, 400, "invalid_request"),
    "api/get-job": Case(complete, 200, job=JobStatus.COMPLETE),
    "api/get-job-with-state": Case(running, 200, job=JobStatus.RUNNING),
    "api/get-job-log": Case(complete, 200),
    "api/get-job-history": Case(complete, 200),
    "api/get-job-state": Case(complete, 200),
    "api/get-job-diff": Case(complete, 200),
    "api/get-job-maps": Case(complete, 200),
    "api/list-jobs": Case(complete, 200),
    "api/list-jobs-by-status": Case(complete, 200),
    "api/list-jobs-bad-status": Case(nothing, 400, "invalid_request"),
    "api/list-jobs-bad-cursor": Case(complete, 400, "invalid_request"),
    "api/count-jobs": Case(complete, 200),
    "api/retry-job-resume": Case(paused, 202, job=JobStatus.RUNNING),
    "api/retry-job-full": Case(complete, 202, job=JobStatus.RUNNING),
    "api/retry-job-bad-mode": Case(complete, 400, "invalid_request"),
    "api/retry-job-from": Case(complete, 202, job=JobStatus.RUNNING),
    "api/send-signal": Case(complete, 409, "conflict"),
    "api/pause-job": Case(running, 200, job=JobStatus.PAUSED),
    "api/cancel-job": Case(running, 200, job=JobStatus.CANCELLED),
    "api/nudge-job": Case(running, 409, "conflict"),  # just started: not stalled
    "api/list-pipelines": Case(nothing, 200),
    "api/health": Case(nothing, 200),
    "api/health-deep": Case(nothing, 200),
    "api/openapi": Case(nothing, 200),
    "api/unauthenticated": Case(nothing, 401, "unauthenticated"),
}


def test_every_sample_event_has_a_case() -> None:
    assert sorted(CASES) == event_names("api")


def check_body(name: str, reply: Reply, api: Api) -> None:
    """What each kind of success says, checked against the table."""
    body = reply.body
    if name == "api/get-job-with-state":
        checkpoint = api.stored().checkpoint
        assert checkpoint is not None
        assert body["state"] == checkpoint.state
    elif name == "api/get-job-log":
        assert body["entries"] == [entry.to_wire() for entry in api.stored().log]
    elif name == "api/get-job-history":  # the whole history of the short sample job, newest first
        writes = body["writes"][::-1]
        assert [entry for write in writes for entry in write["log"]] == [entry.to_wire() for entry in api.stored().log]
        assert [write["record"] for write in writes if write["record"]] == [r.to_wire() for r in api.stored().phases]
        assert body["cursor"] is None
    elif name == "api/get-job-state":  # the first phase's entry state: the job's input
        assert (body["phase"], body["state"]) == (api.stored().phases[0].phase, api.stored().input)
    elif name == "api/get-job-diff":  # from the first phase to the middle one: what the phases between did
        phases = [record.phase for record in api.stored().phases]
        assert (body["from"]["phase"], body["to"]["phase"]) == (phases[0], phases[len(phases) // 2])
        assert body["changes"]
        assert all(change["path"].startswith("/") for change in body["changes"])
        assert body["truncated"] is False
    elif name == "api/get-job-maps":  # the sample job's pipeline runs no map
        assert body == {"jobId": JOB, "maps": []}
    elif name.startswith("api/list-jobs"):
        assert [summary["jobId"] for summary in body["jobs"]] == [JOB]
        assert body["jobs"][0]["status"] == "complete"
    elif name == "api/count-jobs":
        assert (body["counts"]["complete"], body["total"], body["exact"]) == (1, 1, True)
    elif name == "api/create-job-jwt":
        assert api.stored(body["jobId"], owner=CAROL).status == JobStatus.RUNNING
    elif name == "api/list-pipelines":
        assert [pipeline["name"] for pipeline in body["pipelines"]] == PIPELINES.names
    elif name == "api/health":
        assert body == {"status": "ok", "driver": "direct", "checked": "api"}
    elif name == "api/health-deep":
        assert body == {"status": "ok", "driver": "direct", "checked": "table"}
    elif name == "api/openapi":
        assert "/jobs/{jobId}/retry" in body["paths"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_sample_event_through_the_handler(api: Api, name: str) -> None:
    case = CASES[name]
    case.given(api)
    before = api.job()
    items = api.item_count()

    reply = api.call(name.removeprefix("api/"))

    assert reply.status == case.status, reply.body
    if case.error is not None:
        assert reply.code == case.error
        assert reply.message
        assert api.item_count() == items  # a refused request writes nothing
        assert api.job() == before
    else:
        assert not isinstance(reply.body.get("error"), dict)  # a job view's "error" is the job's own
        check_body(name, reply, api)
    if case.job is not None:
        job_body = reply.body["job"] if case.error else reply.body
        assert job_body["jobId"] == JOB
        assert job_body["status"] == case.job.value
        assert api.stored(owner=ALICE).status == case.job
