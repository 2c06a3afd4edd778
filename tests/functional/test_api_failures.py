"""Why jobs are failing: ``GET /failures`` groups the caller's failed jobs by exception type, phase and pipeline,
and each group's query lists exactly its jobs through ``GET /jobs``; the memory store answers through the same port.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

import pytest

from cairn import MemoryStorage
from cairn.core.failure_groups import failed_summary, grouped
from tests.contract.earlier_release_store import EarlierReleaseStorage
from tests.failure_seeds import Failed, seed_failure
from tests.functional.api_client import ALICE, BOB, Api
from tests.support import FakeClock

HOUR_MS = 3_600_000
INTAKE = "document-intake"


def seeded(api: Api) -> int:
    """Failures of two types in two phases, one Fail without an exception, one too old, one of Bob's."""
    now = api.stack.runtime.clock()
    failures = [
        *(
            Failed(f"timeout-{n}", INTAKE, "fetch", "TimeoutError", f"fetch timed out #{n}", now - n * 60_000 - 5_000)
            for n in range(3)
        ),
        Failed("keyerror-1", INTAKE, "extract", "KeyError", "'total'\nsecond line", now - 30 * 60_000),
        Failed("keyerror-2", INTAKE, "fetch", "KeyError", "'url'", now - 40 * 60_000),
        Failed("refused-1", INTAKE, "publish", None, "The reviewer refused it", now - 50 * 60_000),
        Failed("old-1", INTAKE, "fetch", "TimeoutError", "long ago", now - 30 * HOUR_MS),
    ]
    for failed in failures:
        seed_failure(api.stack.runtime.storage(ALICE), failed)
    seed_failure(api.stack.runtime.storage(BOB), Failed("bobs", INTAKE, "fetch", "OSError", "bob's", now - 60_000))
    return now


def failures(api: Api, **query: str) -> Any:
    reply = api.client.get("/failures", query=query)
    assert reply.status == 200, reply.body
    return reply.body


def listed(api: Api, query: str) -> list[str]:
    reply = api.client.get("/jobs", query=dict(parse_qsl(query)))
    assert reply.status == 200, reply.body
    return sorted(job["jobId"] for job in reply.body["jobs"])


def test_failures_of_the_last_day_are_grouped_biggest_first_and_each_group_lists_its_jobs(api: Api) -> None:
    seeded(api)

    report = failures(api)

    shown = [(g["type"], g["phase"], g["pipeline"], g["count"]) for g in report["groups"]]
    assert shown == [
        ("TimeoutError", "fetch", INTAKE, 3),
        ("KeyError", "extract", INTAKE, 1),
        ("KeyError", "fetch", INTAKE, 1),
        (None, "publish", INTAKE, 1),
    ]
    assert (report["examined"], report["exact"]) == (6, True)
    timeouts, extract = report["groups"][0], report["groups"][1]
    assert timeouts["sample"] == "fetch timed out #0"  # the newest one's
    assert timeouts["sampleJobId"] == "timeout-0"
    assert extract["sample"] == "'total'"  # the first line only
    assert listed(api, timeouts["query"]) == ["timeout-0", "timeout-1", "timeout-2"]
    assert listed(api, extract["query"]) == ["keyerror-1"]
    assert listed(api, report["groups"][3]["query"]) == ["refused-1"]
    assert timeouts["filter"]["errorType"] == "TimeoutError"


def test_the_list_shows_a_failed_jobs_error_type_and_phase_and_its_times(api: Api) -> None:
    seeded(api)

    jobs = api.client.get("/jobs", query={"status": "error", "errorPhase": "extract"}).body["jobs"]

    assert [(job["jobId"], job["errorType"], job["errorPhase"], job["error"]) for job in jobs] == [
        ("keyerror-1", "KeyError", "extract", "'total'\nsecond line")
    ]
    assert jobs[0]["updatedAt"] - jobs[0]["createdAt"] == 1_500  # what a duration column shows: created to failed


def test_a_wider_range_a_pipeline_and_a_bound(api: Api) -> None:
    seeded(api)

    assert sum(g["count"] for g in failures(api, since="2d")["groups"]) == 7
    assert failures(api, since="10m")["examined"] == 3
    assert failures(api, pipeline=INTAKE)["examined"] == 6
    bounded = failures(api, since="2d", limit="4")
    assert (bounded["examined"], bounded["exact"]) == (4, False)
    assert [g["count"] for g in bounded["groups"]] == [3, 1]  # the 4 newest: three timeouts, then keyerror-1


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ({"since": "yesterday"}, "since"),
        ({"since": "24x"}, "since"),
        ({"until": "not a time"}, "until"),
        ({"since": "1h", "until": "2h"}, "reversed"),
        ({"since": "x" * 41}, ""),
        ({"pipeline": "no-such-pipeline"}, ""),
        ({"limit": "0"}, ""),
        ({"limit": "1001"}, ""),
    ],
)
def test_bad_input_is_refused_with_400(api: Api, query: dict[str, str], says: str) -> None:
    reply = api.client.get("/failures", query=query)
    assert reply.status == 400, reply.body
    assert says in reply.body["error"]["message"]


@pytest.mark.parametrize(
    "query",
    [
        {"status": "complete", "errorType": "KeyError"},
        {"errorPhase": "not a phase"},
        {"errorType": ""},
        {"errorType": "x" * 201},
    ],
)
def test_a_list_filter_on_a_failure_that_cannot_match_is_refused(api: Api, query: dict[str, str]) -> None:
    assert api.client.get("/jobs", query=query).status == 400


def test_the_memory_store_answers_through_the_same_port(clock: FakeClock) -> None:
    storage = MemoryStorage(clock=clock)
    now = clock()
    for n, (kind, phase) in enumerate([("ValueError", "a"), ("ValueError", "a"), ("KeyError", "b")]):
        seed_failure(storage, Failed(f"job-{n}", "p", phase, kind, f"m{n}", now + n))

    failed = storage.failed_jobs(created_from=now, created_to=now + 10, pipeline=None, limit=2)

    assert ([job.job_id for job in failed.jobs], failed.exact) == (["job-2", "job-1"], False)
    every = storage.failed_jobs(created_from=now, created_to=now + 10, pipeline="p", limit=10)
    assert [(g.type, g.phase, g.count) for g in grouped(every.jobs)] == [("ValueError", "a", 2), ("KeyError", "b", 1)]


def test_a_store_of_the_earlier_release_answers_and_a_job_stored_without_its_type_takes_it_from_its_record(
    clock: FakeClock,
) -> None:
    storage = EarlierReleaseStorage(clock=clock)
    now = clock()
    seed_failure(storage, Failed("job-1", "p", "a", "ValueError", "bad", now))
    stored = storage.get_job("job-1")
    assert stored is not None
    as_before = stored.model_copy(update={"error_type": None, "error_phase": None})  # written by an earlier release

    failed = storage.failed_jobs(created_from=now, created_to=now, pipeline=None, limit=5)
    assert ([(job.job_id, job.error_type) for job in failed.jobs], failed.exact) == ([("job-1", "ValueError")], True)
    summary = failed_summary(as_before)
    assert (summary.error_type, summary.error_phase, summary.error) == ("ValueError", "a", "bad")
