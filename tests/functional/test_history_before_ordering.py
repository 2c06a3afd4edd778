"""A job written before history items were ordered (``HIST#<token>`` keys) still reads, reruns and renews.

The job is run through the store, then its history items are moved to the keys they had before
(``HIST#<write token>``, the same item otherwise) and the job item's ``stateAt`` with them: the table
as a job written by the earlier release left it. It then runs on (new items are ordered: a chain of
both forms), is read whole, as a view, a page of history and of log at a time, reruns from a phase
it entered in its old history, and has every item of both forms renewed when it outlives its TTL.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.dynamodb.schema import HISTORY_PREFIX, LEGACY_HISTORY_PREFIX, legacy_history_sk
from cairn.core.models import Job, LogEntry
from cairn.core.transitions import Journal
from cairn.testing.clock import SkippingClock
from cairn.testing.contract.base import (
    START_MS,
    claim_request,
    commit_request,
    expiry,
    fence_of,
    start_request,
    started,
)
from cairn.testing.contract.history import every_history_page, oldest_first
from tests.functional.conftest import Moto

JOB = "job-1"
TTL = 3600


def run_phase(storage: DynamoDBStorage, clock: SkippingClock, job: Job, note: str, *, seconds: int = 1) -> Job:
    """Claim and commit the job's phase ``seconds`` after its last write, its expiry pushed on as the engine does."""
    clock.advance(seconds)
    claimed = storage.claim(replace(claim_request(clock, job), expires_at=expiry(clock, TTL)))
    assert claimed is not None
    request = commit_request(clock, claimed, "next", next_phase="first", state={"note": note})
    entry = LogEntry(message=note, timestamp=clock(), phase="first")
    request = replace(request, journal=Journal(log=(entry,)), expires_at=expiry(clock, TTL))
    return storage.commit(JOB, fence_of(claimed), request)


def partition(moto: Moto, storage: DynamoDBStorage) -> dict[str, dict[str, Any]]:
    """The job's items by sort key."""
    items = moto.dynamodb.query(
        TableName=moto.table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": storage.codec.pk(JOB)}},
        ConsistentRead=True,
    )["Items"]
    return {item["sk"]["S"]: dict(item) for item in items}


def as_written_before(moto: Moto, storage: DynamoDBStorage) -> int:
    """Move the job's history items to their earlier keys (``HIST#<token>``); how many were moved."""
    items = partition(moto, storage)
    moved = 0
    for sk, item in items.items():
        if sk.startswith(HISTORY_PREFIX):
            token = sk.rsplit("#", 1)[-1]
            moto.dynamodb.put_item(TableName=moto.table, Item={**item, "sk": {"S": legacy_history_sk(token)}})
            moto.dynamodb.delete_item(TableName=moto.table, Key={"pk": item["pk"], "sk": {"S": sk}})
            moved += 1
    if "stateAt" not in items["JOB"]["checkpoint"]["M"]:  # a small state: the job item keeps it too
        return moved
    state_at = items["JOB"]["checkpoint"]["M"]["stateAt"]["S"]
    moto.dynamodb.update_item(
        TableName=moto.table,
        Key={"pk": items["JOB"]["pk"], "sk": {"S": "JOB"}},
        UpdateExpression="SET checkpoint.stateAt = :at",
        ExpressionAttributeValues={":at": {"S": legacy_history_sk(state_at.rsplit("#", 1)[-1])}},
    )
    return moved


def every_log_page(storage: DynamoDBStorage, limit: int) -> list[LogEntry]:
    """The job's whole log, read ``limit`` entries a page."""
    entries: list[LogEntry] = []
    cursor: str | None = None
    while True:
        page = storage.log_page(JOB, cursor, limit)
        assert page is not None
        entries += page.entries
        if page.cursor is None:
            return entries
        cursor = page.cursor


def reads_alike(storage: DynamoDBStorage) -> Job:
    """The job read whole, and the same job read as a view and a page of history and of log at a time."""
    whole = storage.get_job(JOB)
    assert whole is not None
    view = storage.get_job_view(JOB, history=3)
    assert view is not None
    assert view.job.model_dump(exclude={"log", "phases"}) == whole.model_dump(exclude={"log", "phases"})
    assert view.older is not None
    log, phases = oldest_first(every_history_page(storage, view.older, 2))
    assert (log + view.job.log, phases + view.job.phases) == (whole.log, whole.phases)
    assert oldest_first(every_history_page(storage, None, 4)) == (whole.log, whole.phases)
    for limit in (1, 3):
        assert every_log_page(storage, limit) == whole.log
    return whole


def test_a_job_written_before_history_was_ordered_reads_runs_on_reruns_and_renews(moto: Moto) -> None:
    clock = SkippingClock(START_MS)
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, clock=clock)
    job = started(storage, clock, job_id=JOB, state={"note": "start"}, ttl_seconds=TTL)
    for number in range(5):
        job = run_phase(storage, clock, job, f"before {number}")
    before = storage.get_job(JOB)
    assert before is not None

    assert as_written_before(moto, storage) == 6  # the start's item and five commits'
    assert not any(sk.startswith(HISTORY_PREFIX) for sk in partition(moto, storage))

    assert reads_alike(storage) == before  # read whole, as a view, by pages: as it was
    entered = storage.entered(JOB, "first")
    assert entered is not None
    assert entered.state == {"note": "before 4"}  # the newest write that entered the phase
    clock.advance(1)
    rerun = start_request(clock, seen=storage.get_job(JOB), state=entered.state, ttl_seconds=TTL)
    job = storage.start_job(rerun)  # a rerun from the phase, with the state it entered it with
    assert job.checkpoint is not None
    assert job.checkpoint.state == {"note": "before 4"}

    for number in range(4):  # it runs on: ordered items after the old ones, one chain
        job = run_phase(storage, clock, job, f"after {number}", seconds=20 * 60)  # past its first TTL
    items = partition(moto, storage)
    assert sum(sk.startswith(LEGACY_HISTORY_PREFIX) for sk in items) == 6
    assert sum(sk.startswith(HISTORY_PREFIX) for sk in items) == 5  # the rerun's start and four commits
    whole = reads_alike(storage)
    assert [entry.message for entry in whole.log] == [f"before {n}" for n in range(5)] + [
        f"after {n}" for n in range(4)
    ]
    assert len(whole.phases) == 9

    # it outlived its first TTL: every item it links to, of either form, was renewed to outlive it
    job_expires = int(items["JOB"]["expiresAt"]["N"])
    linked = [sk for sk in items if sk.startswith((HISTORY_PREFIX, LEGACY_HISTORY_PREFIX))]
    linked.append(f"INPUT#{items['JOB']['inputToken']['S']}")  # the rerun's input (the first one is left)
    for sk in linked:
        assert int(items[sk]["expiresAt"]["N"]) > job_expires, sk
    assert int(items["JOB"]["historyRenewBy"]["N"]) > START_MS // 1000 + TTL
