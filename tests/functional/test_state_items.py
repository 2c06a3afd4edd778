"""Where the state lives on DynamoDB: once, in the item of the write that set it, named by the job item.

A start's or a commit's history item keeps the state the phase was entered with; a mid-phase save
writes a ``SAVE#`` item of its own, removed once replaced; a job item stored before states had
items of their own (the state inline) is still read and run. A state of a few hundred bytes also
travels in the job item (its claim then reads nothing more): the states here are larger unless a test
says otherwise, so that the job item names the item that keeps them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError

from cairn import Done, JobStatus, Next, PhaseContext, Pipeline, RetryPolicy, run_pipeline
from cairn.adapters import CorruptJobError
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.dynamodb.attributes import from_item
from cairn.aws.dynamodb.schema import job_pk
from tests.functional.conftest import Moto
from tests.support import FakeClock, job_of, make_scheduler

#: A field that keeps a state out of the job item (too large for it to hold within one write unit).
PAD = "".join(hashlib.sha256(str(number).encode()).hexdigest() for number in range(20))
STARTED = {"a": 1, "pad": PAD}


def _kept_state(storage: DynamoDBStorage, item: dict[str, Any]) -> Any:
    """The state a history or save item keeps, decoded."""
    return storage.codec.payloads.decode(from_item(item)["entry"]["state"], where="test")


def _partition(moto: Moto, job_id: str) -> dict[str, dict[str, Any]]:
    response = moto.dynamodb.query(
        TableName=moto.table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": job_pk("default", job_id)}},
        ConsistentRead=True,
    )
    return {item["sk"]["S"]: item for item in response["Items"]}


def _storage(moto: Moto, clock: FakeClock) -> DynamoDBStorage:
    return DynamoDBStorage(moto.table, client=moto.dynamodb, clock=clock)


def _started_one_phase_job(moto: Moto, clock: FakeClock, name: str) -> DynamoDBStorage:
    """A store holding the job ``<name>-1`` of a one-phase pipeline ``name``, started with :data:`STARTED`."""
    pipeline: Pipeline[Any] = Pipeline(name)

    @pipeline.phase
    def first(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    storage = _storage(moto, clock)
    run_pipeline(
        f"{name}-1",
        pipeline,
        storage=storage,
        scheduler=make_scheduler(pipeline, storage, clock),
        initial_state=STARTED,
    )
    return storage


def test_the_job_item_names_the_history_item_that_keeps_the_state(moto: Moto, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("named")

    @pipeline.phase
    def first(ctx: PhaseContext[Any]) -> Next:
        return Next("second", {"n": ctx.state["n"] + 1, "pad": PAD})

    @pipeline.phase
    def second(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    storage = _storage(moto, clock)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("named-1", pipeline, storage=storage, scheduler=scheduler, initial_state={"n": 1, "pad": PAD})
    scheduler.drain(max_steps=1)

    items = _partition(moto, "named-1")
    checkpoint = items["JOB"]["checkpoint"]["M"]
    assert set(checkpoint) == {"nextPhase", "createdAt", "stateAt"}  # no state in the job item
    holder = items[checkpoint["stateAt"]["S"]]
    assert checkpoint["stateAt"]["S"] == f"H#1#{3:012d}#{job_of(storage, 'named-1').history_head}"  # run, sequence
    entered = {"n": 2, "pad": PAD}
    assert _kept_state(storage, holder) == entered
    kept = [item for item in items.values() if "state" in item.get("entry", {}).get("M", {})]
    assert sum(_kept_state(storage, item) == entered for item in kept) == 1  # written once
    assert job_of(storage, "named-1").checkpoint.state == entered  # type: ignore[union-attr]

    scheduler.drain()
    assert job_of(storage, "named-1").result == entered
    assert storage.entered("named-1", "second").state == entered  # type: ignore[union-attr]


def test_a_small_state_travels_in_the_job_item_and_its_history_item_keeps_it_too(moto: Moto, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("small")

    @pipeline.phase
    def first(ctx: PhaseContext[Any]) -> Next:
        return Next("second", {"n": ctx.state["n"] + 1})

    @pipeline.phase
    def second(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    storage = _storage(moto, clock)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("small-1", pipeline, storage=storage, scheduler=scheduler, initial_state={"n": 1})
    scheduler.drain(max_steps=1)

    items = _partition(moto, "small-1")
    checkpoint = items["JOB"]["checkpoint"]["M"]
    assert set(checkpoint) == {"nextPhase", "createdAt", "state"}  # the claim returns it: nothing more to read
    history = items[f"H#1#{3:012d}#{job_of(storage, 'small-1').history_head}"]
    assert _kept_state(storage, history) == {"n": 2}  # for a rerun from the phase
    scheduler.drain()
    assert job_of(storage, "small-1").result == {"n": 2}
    assert storage.entered("small-1", "second").state == {"n": 2}  # type: ignore[union-attr]


def test_a_retry_after_a_save_starts_from_the_saved_state_and_replaced_saves_are_removed(
    moto: Moto, clock: FakeClock
) -> None:
    pipeline: Pipeline[Any] = Pipeline("saves")
    seen: list[Any] = []

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=0.01, jitter=False))
    def work(ctx: PhaseContext[Any]) -> Done:
        seen.append(ctx.state)
        if ctx.attempt == 1:
            for step in range(3):
                ctx.save_state({"step": step})
            raise RuntimeError("the worker fails after its saves")
        return Done(ctx.state)

    storage = _storage(moto, clock)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("saves-1", pipeline, storage=storage, scheduler=scheduler, initial_state={"step": -1})
    scheduler.drain()

    job = job_of(storage, "saves-1")
    assert job.status == JobStatus.COMPLETE, job.error
    assert seen == [{"step": -1}, {"step": 2}]  # the retry read the last save, from its own item
    assert job.result == {"step": 2}
    saves = [sk for sk in _partition(moto, "saves-1") if sk.startswith("SAVE#")]
    assert saves == []  # each save's item is removed once the job no longer refers to it


def test_a_job_item_with_its_state_inline_is_still_read_and_run(moto: Moto, clock: FakeClock) -> None:
    pipeline: Pipeline[Any] = Pipeline("older")

    @pipeline.phase
    def first(ctx: PhaseContext[Any]) -> Next:
        return Next("second", ctx.state)

    @pipeline.phase
    def second(ctx: PhaseContext[Any]) -> Done:
        return Done({"seen": ctx.state})

    storage = _storage(moto, clock)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("older-1", pipeline, storage=storage, scheduler=scheduler, initial_state={"a": 1})
    scheduler.drain(max_steps=1)
    # the job item as it was stored before states had items of their own
    moto.dynamodb.update_item(
        TableName=moto.table,
        Key={"pk": {"S": job_pk("default", "older-1")}, "sk": {"S": "JOB"}},
        UpdateExpression="SET checkpoint.#state = :state REMOVE checkpoint.stateAt",
        ExpressionAttributeNames={"#state": "state"},
        ExpressionAttributeValues={":state": {"M": {"json": {"S": '{"a": "inline"}'}}}},
    )

    assert job_of(storage, "older-1").checkpoint.state == {"a": "inline"}  # type: ignore[union-attr]
    scheduler.drain()
    assert job_of(storage, "older-1").result == {"seen": {"a": "inline"}}


def test_a_missing_state_item_is_named_not_a_crash(moto: Moto, clock: FakeClock) -> None:
    storage = _started_one_phase_job(moto, clock, "lost")
    items = _partition(moto, "lost-1")
    state_at = items["JOB"]["checkpoint"]["M"]["stateAt"]["S"]
    moto.dynamodb.delete_item(TableName=moto.table, Key={"pk": items["JOB"]["pk"], "sk": {"S": state_at}})

    with pytest.raises(CorruptJobError, match=state_at):
        storage.get_job("lost-1")


def test_a_phase_output_is_serialised_once_per_transition(
    moto: Moto, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Admission serialises the state; the store writes that text instead of encoding it again."""
    blob = {"blob": "x" * 600_000}
    pipeline: Pipeline[Any] = Pipeline("once")

    @pipeline.phase
    def first(ctx: PhaseContext[Any]) -> Next:
        return Next("first", {"blob": ctx.state["blob"][::-1]})

    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3, clock=clock)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("once-1", pipeline, storage=storage, scheduler=scheduler, initial_state=blob)
    encode = json.dumps
    large: list[int] = []

    def counting(value: Any, *args: Any, **kwargs: Any) -> str:
        text = encode(value, *args, **kwargs)
        if len(text) >= 600_000:
            large.append(len(text))
        return text

    monkeypatch.setattr(json, "dumps", counting)
    for _ in range(3):
        large.clear()
        scheduler.drain(max_steps=1)
        assert len(large) == 1, large
    assert job_of(storage, "once-1").checkpoint.state == blob  # type: ignore[union-attr]


def test_a_read_racing_a_save_that_removes_the_state_it_named_reads_again(
    moto: Moto, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = _started_one_phase_job(moto, clock, "racing")
    table = storage._table  # the query a concurrent save races
    query = table.query_partition
    calls: list[int] = []

    def racing(job_id: str, **kwargs: Any) -> Any:
        calls.append(1)
        items = list(query(job_id, **kwargs))
        if len(calls) == 1:  # the first answer: the job item read, its state's item already replaced
            return [item for item in items if not item["sk"]["S"].startswith("H#")]
        return items

    monkeypatch.setattr(table, "query_partition", racing)
    assert job_of(storage, "racing-1").checkpoint.state == STARTED  # type: ignore[union-attr]
    assert len(calls) == 2


def test_a_job_view_racing_saves_reads_again_while_the_job_item_names_another_state(
    moto: Moto, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each save replaces the item holding the state; a view between two reads finds the one it read gone."""
    storage = _started_one_phase_job(moto, clock, "view-racing")
    reads = storage._reads  # the reads a run of concurrent saves races
    job_item, get = reads._job_item, reads._get
    replaced: list[str] = []

    def job_item_of_a_job_saving_again(job_id: str) -> Any:
        item = job_item(job_id)
        if item is not None and len(replaced) < 3:  # a save landed: the job item names a newer item
            replaced.append(f"SAVE#replaced{len(replaced)}")
            checkpoint = {**item["checkpoint"]["M"], "stateAt": {"S": replaced[-1]}}
            return {**item, "checkpoint": {"M": checkpoint}}
        return item

    def without_replaced(job_id: str, sort_keys: list[str]) -> Any:
        return get(job_id, [sk for sk in sort_keys if sk not in replaced])  # deleted by the next save

    monkeypatch.setattr(reads, "_job_item", job_item_of_a_job_saving_again)
    monkeypatch.setattr(reads, "_get", without_replaced)
    view = storage.get_job_view("view-racing-1")
    assert view is not None
    assert view.job.checkpoint is not None
    assert view.job.checkpoint.state == STARTED
    assert len(replaced) == 3


def test_a_job_view_naming_a_missing_state_item_twice_names_it(moto: Moto, clock: FakeClock) -> None:
    storage = _started_one_phase_job(moto, clock, "view-lost")
    items = _partition(moto, "view-lost-1")
    state_at = items["JOB"]["checkpoint"]["M"]["stateAt"]["S"]
    moto.dynamodb.delete_item(TableName=moto.table, Key={"pk": items["JOB"]["pk"], "sk": {"S": state_at}})

    with pytest.raises(CorruptJobError, match=state_at):
        storage.get_job_view("view-lost-1")


def test_an_entry_kept_apart_and_gone_reads_as_expired_with_its_history_item_else_as_missing(
    moto: Moto, clock: FakeClock
) -> None:
    pipeline: Pipeline[Any] = Pipeline("apart")

    @pipeline.phase
    def talk(ctx: PhaseContext[Any]) -> Next:
        for number in range(100):
            ctx.log(f"line {number:03d} " + "z" * 70)
        return Next("listen", STARTED)

    @pipeline.phase
    def listen(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    storage = _storage(moto, clock)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("apart-1", pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()
    items = _partition(moto, "apart-1")
    (apart,) = [sk for sk in items if sk.startswith("ENTRY#")]
    (naming,) = [
        item for item in items.values() if item.get("entry", {}).get("M", {}).get("stateAt", {}).get("S") == apart
    ]
    assert storage.entered("apart-1", "listen").state == STARTED  # type: ignore[union-attr]

    moto.dynamodb.delete_item(TableName=moto.table, Key={"pk": naming["pk"], "sk": {"S": apart}})
    with pytest.raises(CorruptJobError, match=apart):  # gone while the history item that names it lives
        storage.entered("apart-1", "listen")

    moto.dynamodb.update_item(
        TableName=moto.table,
        Key={"pk": naming["pk"], "sk": naming["sk"]},
        UpdateExpression="SET expiresAt = :past",
        ExpressionAttributeValues={":past": {"N": "1"}},
    )
    assert storage.entered("apart-1", "listen") is None  # both past their expiry: that entry is no longer kept


def test_a_lost_response_of_the_write_that_keeps_the_state_apart_is_sent_again_and_lands_once(
    moto: Moto, clock: FakeClock
) -> None:
    """The history item and the ``ENTRY#`` item land, their response is lost: the commit is sent again with the
    same token, the items are written again unchanged, and the job goes on once with the state kept apart."""
    pipeline: Pipeline[Any] = Pipeline("lost-apart")
    runs: list[str] = []

    @pipeline.phase
    def talk(ctx: PhaseContext[Any]) -> Next:
        runs.append("talk")
        for number in range(100):
            ctx.log(f"line {number:03d} " + "w" * 70)
        return Next("listen", STARTED)

    @pipeline.phase
    def listen(ctx: PhaseContext[Any]) -> Done:
        runs.append("listen")
        return Done(ctx.state)

    lost: list[int] = []

    def lose_the_first_response(**_: Any) -> None:
        if not lost:
            lost.append(1)
            raise ReadTimeoutError(endpoint_url="dynamodb")  # after the write landed: its outcome is unknown

    moto.dynamodb.meta.events.register("after-call.dynamodb.BatchWriteItem", lose_the_first_response)
    try:
        storage = _storage(moto, clock)
        scheduler = make_scheduler(pipeline, storage, clock)
        run_pipeline("lost-apart-1", pipeline, storage=storage, scheduler=scheduler, initial_state={})
        scheduler.drain()
    finally:
        moto.dynamodb.meta.events.unregister("after-call.dynamodb.BatchWriteItem", lose_the_first_response)

    assert lost == [1]
    job = job_of(storage, "lost-apart-1")
    assert job.status == JobStatus.COMPLETE
    assert job.result == STARTED
    assert runs == ["talk", "listen"]  # the phase ran once: the commit was sent again, not the phase
    assert [record.phase for record in job.phases] == ["talk", "listen"]
    assert len([entry for entry in job.log if entry.message.startswith("line ")]) == 100  # the log once
    items = _partition(moto, "lost-apart-1")
    assert len([sk for sk in items if sk.startswith("ENTRY#")]) == 1
    assert storage.entered("lost-apart-1", "listen").state == STARTED  # type: ignore[union-attr]
