"""Listings over sharded indexes: every job once, newest first, page after page; cursors that were not
returned by the listing are refused (400 through the API), never a 500 and never another owner's jobs."""

from __future__ import annotations

import base64
import itertools
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cairn import InvalidInputError, JobStatus, Next, PhaseContext, Pipeline, RetryPolicy, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.dynamodb.schema import LIST_SHARDS, list_shard
from cairn.core.engine import pause_job
from tests.functional.api_client import ALICE, BOB, Api
from tests.functional.conftest import Moto
from tests.support import FakeClock, make_scheduler

_owners = itertools.count()


def one_phase() -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("listed")

    @pipeline.phase
    def only(ctx: PhaseContext[Any]) -> Next:
        return Next("only", ctx.state)

    return pipeline


def fresh_owner(moto: Moto, clock: FakeClock) -> DynamoDBStorage:
    """A store seen as an owner no other example has used (the table lives across a property's examples)."""
    return DynamoDBStorage(moto.table, owner=f"owner-{next(_owners)}", client=moto.dynamodb, clock=clock)


def start_jobs(storage: DynamoDBStorage, clock: FakeClock, created: list[int]) -> dict[str, int]:
    """Start one job per entry of ``created`` (seconds after the clock's start); returns createdAt by job id."""
    pipeline = one_phase()
    base = clock.now_ms
    jobs = {}
    for number, offset in enumerate(created):
        clock.now_ms = base + offset * 1000
        job = run_pipeline(
            f"job-{number:03}", pipeline, storage=storage, scheduler=make_scheduler(pipeline, storage), initial_state={}
        )
        jobs[job.job_id] = job.created_at
    clock.now_ms = base + max(created, default=0) * 1000 + 1000
    return jobs


def every_page(storage: DynamoDBStorage, limit: int, status: JobStatus | None = None) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = storage.list_page(status=status, cursor=cursor, limit=limit)
        pages.append([summary.job_id for summary in page.jobs])
        cursor = page.cursor
        if cursor is None:
            return pages
        assert len(pages) <= 200, "the listing never ends"


def newest_first(jobs: dict[str, int]) -> list[str]:
    return sorted(jobs, key=lambda job_id: (jobs[job_id], job_id), reverse=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    created=st.lists(st.integers(0, 4), max_size=24),
    limit=st.integers(1, 7),
    paused=st.sets(st.integers(0, 23), max_size=8),
)
def test_paging_returns_every_job_once_newest_first(
    moto: Moto, clock: FakeClock, created: list[int], limit: int, paused: set[int]
) -> None:
    storage = fresh_owner(moto, clock)
    jobs = start_jobs(storage, clock, created)  # few distinct times: many jobs share a createdAt
    paused_ids = {f"job-{number:03}" for number in paused if number < len(created)}
    for job_id in paused_ids:
        pause_job(job_id, storage=storage)

    pages = every_page(storage, limit)
    assert [job_id for page in pages for job_id in page] == newest_first(jobs)
    assert all(len(page) <= limit for page in pages)
    assert all(len(page) == limit for page in pages[:-1])  # only the last page is short

    by_status = {
        status: [job_id for page in every_page(storage, limit, status) for job_id in page]
        for status in (JobStatus.RUNNING, JobStatus.PAUSED)
    }
    assert by_status[JobStatus.PAUSED] == newest_first({job_id: jobs[job_id] for job_id in paused_ids})
    assert by_status[JobStatus.RUNNING] == newest_first({k: v for k, v in jobs.items() if k not in paused_ids})


def test_a_busy_owners_jobs_are_spread_over_every_shard(moto: Moto, clock: FakeClock) -> None:
    storage = fresh_owner(moto, clock)
    start_jobs(storage, clock, [0] * 40)
    keys = {
        item["owner"]["S"]
        for item in moto.dynamodb.scan(TableName=moto.table)["Items"]
        if item["sk"]["S"] == "JOB" and item["pk"]["S"].startswith(f"JOB#{storage.owner}#")
    }
    assert keys == {f"{storage.owner}#{shard}" for shard in range(LIST_SHARDS)}


def cursor_of(values: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode().rstrip("=")


def decoded(cursor: str) -> dict[str, Any]:
    values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    assert isinstance(values, dict)
    return values


def test_a_cursor_the_listing_did_not_return_is_refused(moto: Moto, clock: FakeClock) -> None:
    storage = fresh_owner(moto, clock)
    start_jobs(storage, clock, list(range(12)))
    cursor = storage.list_page(limit=3).cursor
    assert cursor is not None
    values = decoded(cursor)
    position = next(entry for entry in values["p"] if isinstance(entry, list))
    shard = values["p"].index(position)
    other_shard_job = next(f"job-{n:03}" for n in range(12) if list_shard(storage.owner, f"job-{n:03}") != shard)

    def with_position(entry: Any) -> str:
        return cursor_of({**values, "p": [entry if index == shard else p for index, p in enumerate(values["p"])]})

    forged = {
        "another owner's": cursor,  # used below by another owner
        "another status's": cursor,  # used below with a status
        "not base64": "!!!" + cursor,
        "not json": base64.urlsafe_b64encode(b"{not json").decode(),
        "json not an object": cursor_of([1, 2]),
        "missing keys": cursor_of({"v": 1, "p": values["p"]}),
        "extra keys": cursor_of({**values, "x": 1}),
        "another version": cursor_of({**values, "v": 2}),
        "positions not a list": cursor_of({**values, "p": "end"}),
        "too few positions": cursor_of({**values, "p": values["p"][:-1]}),
        "a float createdAt": with_position([1.5, position[1]]),
        "a number createdAt": with_position([int(position[0]), position[1]]),
        "a huge createdAt": with_position(["9" * 60, position[1]]),
        "an exponent createdAt": with_position(["1E+30", position[1]]),
        "a bad job id": with_position([position[0], "../etc"]),
        "a job of another shard": with_position([position[0], other_shard_job]),
        "a position too long": with_position([position[0], position[1], "x"]),
        "too long": cursor + "A" * 5000,
        "empty": "",
        "deep json": cursor_of(json.loads("[" * 50 + "]" * 50)),
    }
    for name, forgery in forged.items():
        where = {"another owner's": storage.for_owner("mallory")}.get(name, storage)
        status = JobStatus.RUNNING if name == "another status's" else None
        try:
            where.list_page(cursor=forgery, status=status, limit=3)
        except InvalidInputError as exc:
            refusal = exc.message
        else:
            refusal = f"{name}: accepted"
        assert "Invalid cursor" in refusal, refusal


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_damaged_cursor_is_refused_or_pages_through_the_owners_own_jobs(
    moto: Moto, clock: FakeClock, data: st.DataObject
) -> None:
    storage = fresh_owner(moto, clock)
    mine = start_jobs(storage, clock, [0, 1, 1, 2, 3])
    fresh_owner(moto, clock).list_page()  # another owner exists beside
    cursor = storage.list_page(limit=2).cursor
    assert cursor is not None
    raw = bytearray(cursor.encode())
    damage = data.draw(st.sampled_from(["flip", "cut", "text"]))
    if damage == "flip":
        bit = data.draw(st.integers(0, 10**6)) % (len(raw) * 8)  # the cursor's length varies with the owner
        raw[bit // 8] ^= 1 << (bit % 8)
        damaged = raw.decode("latin-1")
    elif damage == "cut":
        damaged = cursor[: data.draw(st.integers(0, 10**6)) % len(cursor)]
    else:
        damaged = data.draw(st.text(max_size=200))

    refusal: str | None = None
    taken: list[str] = []
    try:
        page = storage.list_page(cursor=damaged, limit=2)
    except InvalidInputError as exc:
        refusal = exc.message
    else:  # a flip the cursor's checks cannot see (a digit of a position, say): it pages on through the owner's jobs
        while True:
            assert len(page.jobs) <= 2
            taken += [summary.job_id for summary in page.jobs]
            if page.cursor is None:
                break
            assert len(taken) <= len(mine), taken  # each job at most once: the listing ends
            page = storage.list_page(cursor=page.cursor, limit=2)
    if damage == "cut" or damaged == "":  # a cut cursor has lost its JSON's closing brace
        assert refusal is not None, damaged
    if refusal is not None:
        assert refusal == "Invalid cursor: it was not returned by this listing", refusal
        assert taken == []
        # the refusal changed nothing: the cursor the listing returned still gives its next page
        assert [summary.job_id for summary in storage.list_page(cursor=cursor, limit=2).jobs] == newest_first(mine)[2:4]
    else:
        assert set(taken) <= set(mine), taken  # never another owner's
        assert taken == [job_id for job_id in newest_first(mine) if job_id in taken], taken  # once each, newest first


def test_the_api_refuses_another_callers_cursor(api: Api) -> None:
    for job_id in ("job-a", "job-b", "job-c"):
        api.create(job_id, caller=BOB)
    bobs = api.call("list-jobs", caller=BOB, query={"limit": "1"})
    assert bobs.status == 200
    assert bobs.body["cursor"]

    reply = api.call("list-jobs", caller=ALICE, query={"limit": "1", "cursor": bobs.body["cursor"]})

    assert reply.status == 400, reply.body
    assert "cursor" in reply.message


def test_the_sweep_leaves_a_retry_alone_until_its_backoff_is_over(moto: Moto, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("backoff")

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=600, max_delay=600, jitter=False))
    def flaky(ctx: PhaseContext[Any]) -> Next:
        raise RuntimeError("not yet")

    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, clock=clock)
    scheduler = make_scheduler(pipeline, storage)  # never drained past the first run: the delayed advance is pending
    run_pipeline("waits", pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)
    job = storage.get_job("waits")
    assert job is not None
    assert job.attempt == 2
    assert job.not_before is not None

    clock.advance(300)  # idle for longer than the sweep waits, inside the backoff
    assert storage.stalled_jobs(idle_seconds=60) == []
    clock.advance(301)
    assert [stalled.job_id for stalled in storage.stalled_jobs(idle_seconds=60)] == ["waits"]
