"""A listing reads its summaries from the ``Listing`` index, not from the job items: at most 0.2 read units per
job listed, metered as DynamoDB bills them. A job item is read only where its entry cannot answer: a job written
before the index kept summaries, or a running job whose status-time expiry has passed; a job past its TTL that
DynamoDB has not deleted yet is left out either way."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from benchmarks.dynamodb_meter import DynamoDBMeter, Figures
from cairn import Done, InlineScheduler, JobStatus, Next, PhaseContext, Pipeline, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.dynamodb.schema import JOB_SK, job_pk
from cairn.core.engine import pause_job
from tests.functional.conftest import Moto
from tests.support import FakeClock, make_scheduler

OWNER = "lister"
HOUR = 3600


def pipelines() -> dict[str, Pipeline[Any]]:
    """``quick`` (one phase, done), ``failing`` (one phase that raises: error) and ``looping`` (never ends)."""
    quick: Pipeline[Any] = Pipeline("quick", ttl=timedelta(hours=1))
    failing: Pipeline[Any] = Pipeline("failing", ttl=timedelta(hours=1))
    looping: Pipeline[Any] = Pipeline("looping", ttl=timedelta(hours=1))

    @quick.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        return Done({"done": True})

    @failing.phase
    def fail(ctx: PhaseContext[Any]) -> Done:
        raise ValueError("the document could not be parsed")

    @looping.phase
    def tick(ctx: PhaseContext[Any]) -> Next:
        return Next("tick", ctx.state)

    return {"quick": quick, "failing": failing, "looping": looping}


@pytest.fixture
def storage(moto: Moto, clock: FakeClock) -> DynamoDBStorage:
    return DynamoDBStorage(moto.table, owner=OWNER, client=moto.dynamodb, clock=clock)


@pytest.fixture
def meter(moto: Moto) -> Iterator[DynamoDBMeter]:
    meter = DynamoDBMeter(moto.dynamodb)
    meter.enabled = False
    yield meter
    meter.detach()


def start(
    storage: DynamoDBStorage, clock: FakeClock, job_id: str, pipeline: Pipeline[Any], *, run: bool
) -> InlineScheduler:
    """Start ``job_id``; with ``run``, run its first phase (a one-phase job to its end). Its scheduler."""
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(job_id, pipeline, storage=storage, scheduler=scheduler, initial_state={"doc": job_id})
    if run:
        scheduler.drain(max_steps=1)
    return scheduler


def metered(meter: DynamoDBMeter, action: Any) -> tuple[Any, Figures]:
    meter.take()
    meter.enabled = True
    try:
        result = action()
    finally:
        meter.enabled = False
    return result, meter.take()


def item_reads(figures: Figures) -> int:
    """Job items a listing read (BatchGetItem requests)."""
    return figures.dynamodb["BatchGetItem"]


def test_a_page_of_50_among_hundreds_reads_at_most_a_fifth_of_a_unit_per_job_listed(
    storage: DynamoDBStorage, clock: FakeClock, meter: DynamoDBMeter
) -> None:
    kinds = pipelines()
    for number in range(300):
        clock.advance(1)
        kind = ("quick", "quick", "looping", "failing", "looping")[number % 5]
        start(storage, clock, f"job-{number:04d}", kinds[kind], run=kind != "looping" or number % 2 == 0)
        if number % 25 == 2:  # a looping job
            pause_job(f"job-{number:04d}", storage=storage)

    first, figures = metered(meter, lambda: storage.list_page(limit=50))
    assert [summary.job_id for summary in first.jobs] == [f"job-{number:04d}" for number in range(299, 249, -1)]
    # the summaries come from the index entries; only the failed jobs' items are read (one eventually consistent
    # batch), for the exception type and failed phase, which no index holds
    assert item_reads(figures) == 1
    assert figures.consistent_read_units == 0
    assert figures.read_units / 50 <= 0.2, f"{figures.read_units} read units for 50 jobs"
    statuses = {summary.status for summary in first.jobs}
    assert statuses == {JobStatus.COMPLETE, JobStatus.RUNNING, JobStatus.ERROR, JobStatus.PAUSED}
    failed = next(summary for summary in first.jobs if summary.status == JobStatus.ERROR)
    assert failed.error is not None
    assert "could not be parsed" in failed.error
    assert (failed.error_type, failed.error_phase) == ("ValueError", "fail")

    second, figures = metered(meter, lambda: storage.list_page(limit=50, cursor=first.cursor))
    assert [summary.job_id for summary in second.jobs] == [f"job-{number:04d}" for number in range(249, 199, -1)]
    assert item_reads(figures) == 1  # the page's failed jobs
    assert figures.read_units / 50 <= 0.2, f"{figures.read_units} read units for the next 50 jobs"

    running, figures = metered(meter, lambda: storage.list_page(limit=20, status=JobStatus.RUNNING))
    assert len(running.jobs) == 20
    assert all(summary.status == JobStatus.RUNNING for summary in running.jobs)
    assert item_reads(figures) == 0  # the status filters the entries on the server


def test_a_listed_summary_is_the_last_status_change_read_from_the_index(
    storage: DynamoDBStorage, clock: FakeClock, moto: Moto
) -> None:
    scheduler = start(storage, clock, "looper", pipelines()["looping"], run=False)
    started_at = clock.now_ms
    for _ in range(3):  # phase transitions: no status change, no index write
        clock.advance(60)
        scheduler.drain(max_steps=1)
    item = moto.dynamodb.get_item(TableName=moto.table, Key=_key("looper"))["Item"]
    assert int(item["updatedAt"]["N"]) > started_at

    (summary,) = storage.list_page().jobs
    assert (summary.status, summary.updated_at, summary.attempt, summary.next_phase) == (
        JobStatus.RUNNING,
        started_at,  # the last status change, not the last write
        None,
        None,
    )
    clock.advance(60)
    pause_job("looper", storage=storage)
    (summary,) = storage.list_page().jobs
    assert (summary.status, summary.updated_at) == (JobStatus.PAUSED, clock.now_ms)


def _key(job_id: str) -> dict[str, Any]:
    return {"pk": {"S": job_pk(OWNER, job_id)}, "sk": {"S": JOB_SK}}


def written_before_listings_kept_summaries(moto: Moto, job_id: str) -> None:
    """Make the job item what an earlier release wrote: no status-time fields, a ``statusKey`` of its own."""
    moto.dynamodb.update_item(
        TableName=moto.table,
        Key=_key(job_id),
        UpdateExpression="REMOVE statusAt, statusExpiresAt SET statusKey = :key",
        ExpressionAttributeValues={":key": {"S": f"{OWNER}#old#0"}},
    )


def test_a_job_written_before_the_index_kept_summaries_is_listed_from_its_item(
    storage: DynamoDBStorage, clock: FakeClock, moto: Moto, meter: DynamoDBMeter
) -> None:
    kinds = pipelines()
    start(storage, clock, "old-done", kinds["quick"], run=True)
    clock.advance(1)
    start(storage, clock, "old-running", kinds["looping"], run=True)
    clock.advance(1)
    start(storage, clock, "new", kinds["looping"], run=False)
    for job_id in ("old-done", "old-running"):
        written_before_listings_kept_summaries(moto, job_id)
    done_item = moto.dynamodb.get_item(TableName=moto.table, Key=_key("old-done"))["Item"]

    page, figures = metered(meter, lambda: storage.list_page())
    assert [(summary.job_id, summary.status) for summary in page.jobs] == [
        ("new", JobStatus.RUNNING),
        ("old-running", JobStatus.RUNNING),
        ("old-done", JobStatus.COMPLETE),
    ]
    assert not any(summary.corrupt for summary in page.jobs)
    old_done = page.jobs[2]
    assert (old_done.updated_at, old_done.expires_at) == (
        int(done_item["updatedAt"]["N"]),  # no status time kept: its last write
        int(done_item["expiresAt"]["N"]),
    )
    assert item_reads(figures) == 1  # the two old jobs, in one batch
    assert [summary.job_id for summary in storage.list_page(status=JobStatus.RUNNING).jobs] == ["new", "old-running"]
    assert [summary.job_id for summary in storage.list_page(status=JobStatus.COMPLETE).jobs] == ["old-done"]
    counts = storage.count_jobs()
    assert (counts.counts[JobStatus.RUNNING], counts.counts[JobStatus.COMPLETE], counts.exact) == (2, 1, True)

    pause_job("old-running", storage=storage)  # its next status change writes the status-time fields
    page, figures = metered(meter, lambda: storage.list_page())
    assert [(summary.job_id, summary.status) for summary in page.jobs][1] == ("old-running", JobStatus.PAUSED)
    assert item_reads(figures) == 1  # old-done only

    clock.advance(2 * HOUR)  # past every TTL, before DynamoDB deletes anything
    assert storage.list_page().jobs == []
    assert storage.count_jobs().total == 0


def test_a_job_past_its_ttl_is_left_out_before_dynamodb_deletes_it(
    storage: DynamoDBStorage, clock: FakeClock, moto: Moto, meter: DynamoDBMeter
) -> None:
    kinds = pipelines()
    start(storage, clock, "finished", kinds["quick"], run=True)  # expires an hour after it finished
    start(storage, clock, "abandoned", kinds["looping"], run=False)  # running, never written again
    busy = start(storage, clock, "busy", kinds["looping"], run=False)  # running, and keeps writing
    for _ in range(2):
        clock.advance(40 * 60)
        busy.drain(max_steps=1)  # each transition pushes its expiry on, not its entry's
    clock.advance(30 * 60)
    start(storage, clock, "fresh", kinds["looping"], run=False)
    clock.advance(5 * 60)  # 1 h 55 after the first three started: "busy" lives on, the others have expired

    assert {"finished", "abandoned", "busy"} <= {
        item["pk"]["S"].rsplit("#", 1)[1] for item in moto.dynamodb.scan(TableName=moto.table)["Items"]
    }, "still in the table: DynamoDB deletes expired items days late"
    page, figures = metered(meter, lambda: storage.list_page())
    assert [summary.job_id for summary in page.jobs] == ["fresh", "busy"]
    assert page.jobs[1].expires_at * 1000 > clock.now_ms  # read from its item: its own expiry
    assert item_reads(figures) == 1  # the two running jobs whose entries had expired, in one batch
    (batch,) = _requests(storage)
    assert batch == {"busy", "abandoned"}  # "finished" is not read: a finished job is written no more

    counts = storage.count_jobs()
    assert (counts.counts[JobStatus.RUNNING], counts.total, counts.exact) == (2, 2, True)


def _requests(storage: DynamoDBStorage) -> list[set[str]]:
    """The job ids each BatchGetItem of one more listing asked for."""
    asked: list[set[str]] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "BatchGetItem":
            (request,) = params["RequestItems"].values()
            asked.append({key["pk"]["S"].rsplit("#", 1)[1] for key in request["Keys"]})

    events = storage.client.meta.events
    events.register("provide-client-params.dynamodb.BatchGetItem", record, unique_id="listing-batches")
    try:
        storage.list_page()
    finally:
        events.unregister("provide-client-params.dynamodb.BatchGetItem", unique_id="listing-batches")
    return asked
