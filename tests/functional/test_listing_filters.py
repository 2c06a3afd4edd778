"""Listings filtered on the server: status, pipeline, a created-time range and an id prefix, across pages.

Through the store, each page is a slice of the matching jobs newest first and following the cursors
returns every match once; a cursor is taken only with the filter it was returned for. Through the
API, hostile filter values are a clear 400.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cairn import InvalidInputError, JobStatus, Next, PhaseContext, Pipeline, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.listing import JobFilter
from cairn.core.engine import pause_job
from tests.functional.api_client import ALICE, Api
from tests.functional.conftest import Moto
from tests.support import FakeClock, make_scheduler

_owners = itertools.count()
PIPELINES = ("listed", "other")
PREFIXES = ("a", "ab", "b")


def looping(name: str) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline(name)

    @pipeline.phase
    def only(ctx: PhaseContext[Any]) -> Next:
        return Next("only", ctx.state)

    return pipeline


def start(storage: DynamoDBStorage, clock: FakeClock, jobs: list[tuple[str, int, str]]) -> dict[str, tuple[int, str]]:
    """Start each ``(job id, seconds after the clock's start, pipeline)``: createdAt and pipeline by job id."""
    base = clock.now_ms
    started = {}
    for job_id, offset, name in jobs:
        clock.now_ms = base + offset * 1000
        pipeline = looping(name)
        job = run_pipeline(
            job_id, pipeline, storage=storage, scheduler=make_scheduler(pipeline, storage), initial_state={}
        )
        started[job.job_id] = (job.created_at, name)
    clock.now_ms = base + 10_000
    return started


def every_match(storage: DynamoDBStorage, where: JobFilter, limit: int) -> list[str]:
    listed: list[str] = []
    cursor: str | None = None
    for _ in range(300):
        page = storage.list_page(where=where, cursor=cursor, limit=limit)
        assert len(page.jobs) <= limit
        listed.extend(summary.job_id for summary in page.jobs)
        cursor = page.cursor
        if cursor is None:
            return listed
    raise AssertionError("the filtered listing never ends")


job_specs = st.lists(st.tuples(st.sampled_from(PREFIXES), st.integers(0, 4), st.sampled_from(PIPELINES)), max_size=20)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    specs=job_specs,
    limit=st.integers(1, 6),
    pipeline=st.none() | st.sampled_from(PIPELINES),
    prefix=st.none() | st.sampled_from(PREFIXES),
    window=st.none() | st.tuples(st.integers(0, 4), st.integers(0, 4)).map(sorted),
    paused=st.sets(st.integers(0, 19), max_size=6),
    status=st.none() | st.sampled_from([JobStatus.RUNNING, JobStatus.PAUSED]),
)
def test_following_the_cursors_returns_every_matching_job_once_newest_first(
    moto: Moto,
    clock: FakeClock,
    specs: list[tuple[str, int, str]],
    limit: int,
    pipeline: str | None,
    prefix: str | None,
    window: list[int] | None,
    paused: set[int],
    status: JobStatus | None,
) -> None:
    storage = DynamoDBStorage(moto.table, owner=f"filter-{next(_owners)}", client=moto.dynamodb, clock=clock)
    base = clock.now_ms
    jobs = start(storage, clock, [(f"{p}{n:02}", offset, name) for n, (p, offset, name) in enumerate(specs)])
    paused_ids = {job_id for n, job_id in enumerate(jobs) if n in paused}
    for job_id in paused_ids:
        pause_job(job_id, storage=storage)
    created_from = None if window is None else base + window[0] * 1000
    created_to = None if window is None else base + window[1] * 1000
    where = JobFilter(
        status=status, pipeline=pipeline, created_from=created_from, created_to=created_to, id_prefix=prefix
    )

    def matches(job_id: str) -> bool:
        created_at, name = jobs[job_id]
        job_status = JobStatus.PAUSED if job_id in paused_ids else JobStatus.RUNNING
        return (
            (status is None or job_status == status)
            and (pipeline is None or name == pipeline)
            and (prefix is None or job_id.startswith(prefix))
            and (created_from is None or created_at >= created_from)
            and (created_to is None or created_at <= created_to)
        )

    expected = sorted((job_id for job_id in jobs if matches(job_id)), key=lambda j: (jobs[j][0], j), reverse=True)
    assert every_match(storage, where, limit) == expected


def test_a_cursor_is_taken_only_with_the_filter_it_was_returned_for(moto: Moto, clock: FakeClock) -> None:
    storage = DynamoDBStorage(moto.table, owner=f"filter-{next(_owners)}", client=moto.dynamodb, clock=clock)
    start(storage, clock, [(f"a{n:02}", n % 3, "listed") for n in range(9)])
    where = JobFilter(id_prefix="a0")
    cursor = storage.list_page(where=where, limit=2).cursor
    assert cursor is not None
    assert storage.list_page(where=where, cursor=cursor, limit=2).jobs
    for other in (JobFilter(), JobFilter(id_prefix="a"), JobFilter(id_prefix="a0", pipeline="listed")):
        with pytest.raises(InvalidInputError, match="Invalid cursor"):
            storage.list_page(where=other, cursor=cursor, limit=2)


@pytest.mark.parametrize(
    ("fields", "refusal"),
    [
        ({"created_from": 2_000, "created_to": 1_000}, "reversed"),
        ({"id_prefix": "x" * 10_000}, "at most 128"),
        ({"id_prefix": "../"}, "No job id starts with"),
        ({"id_prefix": ""}, "non-empty"),
        ({"created_from": -1}, "between 1970 and 9999"),
        ({"status": "sleeping"}, "Unknown status"),
    ],
)
def test_a_filter_that_cannot_match_is_refused_with_the_reason(fields: dict[str, Any], refusal: str) -> None:
    with pytest.raises(InvalidInputError, match=refusal):
        JobFilter(**fields)


def _ids(api: Api, query: dict[str, str]) -> list[str]:
    answer = api.call("list-jobs", caller=ALICE, query=query)
    assert answer.status == 200, answer.body
    return [job["jobId"] for job in answer.body["jobs"]]


def test_the_api_filters_by_pipeline_prefix_and_time_on_the_server(api: Api, stack_clock: FakeClock) -> None:
    start_ms = stack_clock.now_ms
    for job_id in ("red-1", "red-2", "blue-1"):
        api.create(job_id)
        stack_clock.now_ms += 60_000
    assert _ids(api, {"idPrefix": "red-"}) == ["red-2", "red-1"]
    assert _ids(api, {"pipeline": "document-intake", "idPrefix": "blue"}) == ["blue-1"]
    moment = _iso(start_ms + 30_000)
    assert _ids(api, {"createdFrom": moment}) == ["blue-1", "red-2"]
    assert _ids(api, {"createdTo": moment}) == ["red-1"]
    pages = [_ids(api, {"idPrefix": "red", "limit": "1"})]
    assert pages == [["red-2"]]


def _iso(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ({"pipeline": "no-such-pipeline"}, "no-such-pipeline"),
        ({"pipeline": "x" * 10_000}, "pipeline"),
        ({"createdFrom": "2026-12-02T00:00:00Z", "createdTo": "2026-12-01T00:00:00Z"}, "reversed"),
        ({"createdFrom": "yesterday"}, "createdFrom"),
        ({"idPrefix": "p" * 10_240}, "idPrefix"),
        ({"idPrefix": "../../"}, "idPrefix"),
        ({"status": "sleeping"}, "status"),
    ],
)
def test_a_hostile_filter_is_a_clear_400(api: Api, query: dict[str, str], said: str) -> None:
    answer = api.call("list-jobs", caller=ALICE, query=query)
    assert answer.status == 400, answer.body
    assert said in str(answer.body)
    assert len(str(answer.body)) < 2_000, "the refusal quotes the hostile value whole"
