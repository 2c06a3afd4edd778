"""DynamoDB storage beyond the shared contract: TTL, owners, listing, the sweep query."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from cairn import (
    Cairn,
    ConfigurationError,
    Done,
    InvalidInputError,
    JobNotFoundError,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    advance_phase,
    run_pipeline,
)
from cairn.adapters import StorageError
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.dynamodb.schema import job_pk
from cairn.core.engine import pause_job
from tests.functional.conftest import Moto
from tests.functional.pipelines import four_phase_pipeline
from tests.support import FakeClock, job_of, make_scheduler


def storage_for(moto: Moto, clock: FakeClock, owner: str = "default") -> DynamoDBStorage:
    return DynamoDBStorage(moto.table, owner=owner, client=moto.dynamodb, clock=clock)


def stop_after_first_phase(pipeline: Pipeline[Any], storage: DynamoDBStorage, clock: FakeClock, job_id: str) -> None:
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(job_id, pipeline, storage=storage, scheduler=scheduler, initial_state={"trail": []})
    scheduler.drain(max_steps=1)


def test_an_expired_item_still_in_the_table_is_neither_returned_nor_resumed(moto: Moto, clock: FakeClock) -> None:
    storage = storage_for(moto, clock)
    pipeline = four_phase_pipeline()
    stop_after_first_phase(pipeline, storage, clock, "old-1")
    clock.advance(timedelta(hours=25).total_seconds())

    raw = moto.dynamodb.get_item(
        TableName=moto.table, Key={"pk": {"S": job_pk("default", "old-1")}, "sk": {"S": "JOB"}}
    )
    assert "Item" in raw, "the item is still in the table (TTL deletion lags)"
    assert storage.get_job("old-1") is None
    assert storage.list_jobs() == []
    assert storage.list_page().jobs == []
    assert advance_phase("old-1", pipeline, storage=storage, scheduler=make_scheduler(pipeline, storage)) is None
    with pytest.raises(JobNotFoundError):
        pause_job("old-1", storage=storage)

    restarted = run_pipeline(
        "old-1", pipeline, storage=storage, scheduler=make_scheduler(pipeline, storage), initial_state={"trail": []}
    )
    assert restarted.checkpoint is not None
    assert restarted.checkpoint.next_phase == "fetch"  # a fresh start, not a resume at "split"
    fresh = job_of(storage, "old-1")
    assert [entry.message for entry in fresh.log] == ['Job started at phase "fetch"']
    assert fresh.phases == []


def test_one_owner_can_never_read_list_or_change_another_owners_job(
    cairn_local: Callable[..., Cairn], cairn_dynamodb: DynamoDBStorage
) -> None:
    pipeline = four_phase_pipeline()
    bobs = cairn_dynamodb.for_owner("bob")
    alice = cairn_local(pipeline, storage=cairn_dynamodb.for_owner("alice"))
    bob = cairn_local(pipeline, storage=bobs)
    alice.start(pipeline, "shared-id", state={"trail": []})
    alice.run_until_idle(max_steps=1)

    assert bobs.get_job("shared-id") is None
    assert bob.list() == []
    assert bobs.list_page(status=JobStatus.RUNNING).jobs == []
    with pytest.raises(JobNotFoundError):
        bob.pause("shared-id")
    with pytest.raises(JobNotFoundError):
        bob.cancel("shared-id")
    assert bob.advance("shared-id") is None

    bob.start(pipeline, "shared-id", state={"trail": ["bob"]})
    bob.run_until_idle()

    assert bob.get("shared-id").result == {"trail": ["bob", "fetch", "split", "extract", "publish"]}
    mine = alice.get("shared-id")
    assert mine.status == JobStatus.RUNNING
    assert mine.checkpoint is not None
    assert mine.checkpoint.state == {"trail": ["fetch"]}


def test_an_owner_with_a_key_separator_is_refused(moto: Moto, clock: FakeClock) -> None:
    with pytest.raises(InvalidInputError, match="owner"):
        storage_for(moto, clock, owner="alice#admin")


def test_jobs_are_listed_by_status_newest_first_page_by_page(moto: Moto, clock: FakeClock) -> None:
    storage = storage_for(moto, clock)
    pipeline = four_phase_pipeline()
    for number in range(7):
        clock.advance(1)
        stop_after_first_phase(pipeline, storage, clock, f"job-{number}")
    clock.advance(1)
    paused_at = clock.now_ms
    pause_job("job-3", storage=storage)

    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = storage.list_page(status=JobStatus.RUNNING, cursor=cursor, limit=2)
        seen += [summary.job_id for summary in page.jobs]
        assert all(summary.status == JobStatus.RUNNING for summary in page.jobs)
        pages += 1
        cursor = page.cursor
        if cursor is None:
            break
    assert seen == ["job-6", "job-5", "job-4", "job-2", "job-1", "job-0"]
    assert pages >= 3

    everything = storage.list_page(limit=100)
    assert [summary.job_id for summary in everything.jobs] == [f"job-{n}" for n in range(6, -1, -1)]
    job_3 = {summary.job_id: summary for summary in everything.jobs}["job-3"]
    # a listing shows what changes with the status only: when it last changed, no phase, no attempt
    assert (job_3.status, job_3.updated_at, job_3.next_phase, job_3.attempt) == (
        JobStatus.PAUSED,
        paused_at,
        None,
        None,
    )
    assert [summary.job_id for summary in storage.list_page(status=JobStatus.PAUSED).jobs] == ["job-3"]


def test_a_cursor_from_elsewhere_is_refused(cairn_local: Callable[..., Cairn], cairn_dynamodb: DynamoDBStorage) -> None:
    pipeline, storage = four_phase_pipeline(), cairn_dynamodb
    app = cairn_local(pipeline, storage=storage)  # jobs started, each with a checkpoint at "fetch"
    for number in range(3):
        app.start(pipeline, f"job-{number}", state={"trail": []})
    cursor = storage.list_page(limit=1).cursor
    assert cursor is not None

    with pytest.raises(InvalidInputError, match="cursor"):
        storage.for_owner("mallory").list_page(cursor=cursor)
    with pytest.raises(InvalidInputError, match="cursor"):
        storage.list_page(status=JobStatus.RUNNING, cursor=cursor)
    with pytest.raises(InvalidInputError, match="cursor"):
        storage.list_page(cursor="not a cursor")


def test_the_sweep_finds_running_jobs_with_no_live_claim_across_owners(moto: Moto, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("sweep")
    hold = {"crash": True}

    @pipeline.phase(timeout=60, lease_seconds=60)
    def work(ctx: PhaseContext[Any]) -> Next:
        if hold["crash"]:
            raise KeyboardInterrupt  # a worker that dies mid-phase: its claim is left behind
        return Next("finish", ctx.state)

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    alice = storage_for(moto, clock, owner="alice")
    bob = alice.for_owner("bob")
    # alice's job: committed "start" but its advance was never delivered (stalled between commit and invoke)
    run_pipeline("a-1", pipeline, storage=alice, scheduler=make_scheduler(pipeline, alice), initial_state={})
    # bob's job: its worker died mid-phase, holding a claim for 60 s
    bob_scheduler = make_scheduler(pipeline, bob, clock)
    run_pipeline("b-1", pipeline, storage=bob, scheduler=bob_scheduler, initial_state={})
    with pytest.raises(KeyboardInterrupt):
        bob_scheduler.drain()
    # a paused job is not stalled
    run_pipeline("a-2", pipeline, storage=alice, scheduler=make_scheduler(pipeline, alice), initial_state={})
    pause_job("a-2", storage=alice)

    clock.advance(30)
    stalled = {(job.owner, job.job_id, job.next_phase) for job in alice.stalled_jobs(idle_seconds=20)}
    assert stalled == {("alice", "a-1", "work")}  # bob's worker still holds a live claim

    clock.advance(60)
    stalled = {(job.owner, job.job_id, job.next_phase) for job in alice.stalled_jobs(idle_seconds=20)}
    assert stalled == {("alice", "a-1", "work"), ("bob", "b-1", "work")}
    assert alice.stalled_jobs(idle_seconds=3600) == []

    hold["crash"] = False
    revived = make_scheduler(pipeline, bob, clock)
    revived.schedule_advance("b-1", phase="work")
    revived.drain()
    assert job_of(bob, "b-1").status == JobStatus.COMPLETE


def test_the_table_and_client_come_from_settings_when_not_given(
    moto: Moto, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_TABLE_NAME", moto.table)
    storage = DynamoDBStorage(clock=clock)  # default client, built lazily once per process
    pipeline = four_phase_pipeline()
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("from-env", pipeline, storage=storage, scheduler=scheduler, initial_state={"trail": []})
    scheduler.drain()
    assert job_of(storage, "from-env").status == JobStatus.COMPLETE
    assert storage.client is DynamoDBStorage(moto.table).client


def test_a_missing_table_is_a_clear_storage_error(moto: Moto, clock: FakeClock) -> None:
    storage = DynamoDBStorage("no-such-table", client=moto.dynamodb, clock=clock)
    with pytest.raises(StorageError, match="ResourceNotFoundException") as raised:
        storage.get_job("any")
    assert raised.value.retryable is False


def test_no_table_name_at_all_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAIRN_TABLE_NAME", raising=False)
    with pytest.raises(ConfigurationError, match="CAIRN_TABLE_NAME"):
        DynamoDBStorage()
