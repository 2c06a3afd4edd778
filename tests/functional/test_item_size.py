"""Every item is sized as a whole (names and values, as DynamoDB counts it): no state, input, result or
log between the inline limit and the offload threshold makes a write fail with DynamoDB's item-size error.

Each state is written once, in an item of its own (the history item of the write that set it), so a
state never shares its item with the input, the result or the state it replaces."""

from __future__ import annotations

import base64
import os
from typing import Any

import pytest

from cairn import Done, JobStatus, Next, PhaseContext, Pipeline, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.dynamodb.attributes import item_size
from cairn.aws.dynamodb.schema import job_pk
from cairn.aws.payloads import DYNAMODB_ITEM_LIMIT, ITEM_BUDGET, MAX_INPUT_BYTES
from cairn.core.settings import Settings
from tests.functional.conftest import Moto
from tests.support import FakeClock, job_of, make_scheduler

KB = 1000


def incompressible(size: int) -> str:
    """Text gzip shrinks little (random base64: to about 76% of its length)."""
    return base64.b64encode(os.urandom(size * 3 // 4 + 3)).decode()[:size]


def sized_pipeline(state: int, result: int, log_lines: int = 0) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("sized")

    @pipeline.phase
    def produce(ctx: PhaseContext[Any]) -> Next:
        for number in range(log_lines):
            ctx.log(f"{number:04} " + "x" * 15_000)
        return Next("again", {"blob": incompressible(state)} if state else {})

    @pipeline.phase
    def again(ctx: PhaseContext[Any]) -> Next:
        return Next("finish", {"blob": incompressible(state)} if state else {})

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        return Done({"blob": incompressible(result)} if result else None)

    return pipeline


def run(storage: DynamoDBStorage, clock: FakeClock, pipeline: Pipeline[Any], input_size: int) -> None:
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline(
        "sized", pipeline, storage=storage, scheduler=scheduler, initial_state={"i": incompressible(input_size)}
    )
    scheduler.drain()


@pytest.mark.parametrize(
    ("state", "input_size", "result", "fails_at"),
    [
        (300 * KB, 300 * KB, 0, None),  # a state has its own item: the input takes none of its room
        (190 * KB, 190 * KB, 190 * KB, None),
        (390 * KB, 0, 0, None),  # stored gzipped, about 300 KB: each state fits, none replaces another in place
        (560 * KB, 0, 0, "produce"),  # gzipped, still more than an item holds
        (0, 370 * KB, 0, None),
        (0, 390 * KB, 0, None),
        (0, 0, 360 * KB, None),
        (0, 0, 390 * KB, None),
    ],
)
def test_without_a_bucket_a_value_either_fits_or_fails_the_phase_naming_its_size(
    moto: Moto, clock: FakeClock, state: int, input_size: int, result: int, fails_at: str | None
) -> None:
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, clock=clock)

    run(storage, clock, sized_pipeline(state, result), input_size)  # never a raw item-size error

    job = job_of(storage, "sized")
    phases = ["produce", "again", "finish"]
    if fails_at is None:
        assert job.status == JobStatus.COMPLETE, job.error
        assert [record.phase for record in job.phases] == phases
        assert (len(job.result["blob"]) if result else job.result) == (result or None)
        assert job.input is not None
        assert len(job.input["i"]) == input_size
    else:
        assert job.status == JobStatus.ERROR
        assert [record.phase for record in job.phases] == phases[: phases.index(fails_at) + 1]
        assert job.error is not None
        assert job.error.startswith(f'Phase "{fails_at}" returned output that cannot be stored: State is '), job.error
        assert "bytes, over the limit of" in job.error, job.error
    for item in moto.dynamodb.scan(TableName=moto.table)["Items"]:
        assert item_size(item) <= ITEM_BUDGET


def test_a_write_that_would_pass_the_item_limit_names_the_size_and_the_limit(moto: Moto, clock: FakeClock) -> None:
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, clock=clock)
    run(storage, clock, sized_pipeline(560 * KB, 0), 0)  # about 425 KB gzipped: no item holds it

    job = job_of(storage, "sized")
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert "cannot be stored: State is" in job.error
    assert "bytes, over the limit of" in job.error


@pytest.mark.parametrize(("state", "input_size", "result"), [(300 * KB, 300 * KB, 300 * KB), (390 * KB, 0, 390 * KB)])
def test_with_a_bucket_large_parts_go_to_s3_whenever_the_item_would_not_fit(
    moto: Moto, clock: FakeClock, state: int, input_size: int, result: int
) -> None:
    storage = DynamoDBStorage(
        moto.table,
        client=moto.dynamodb,
        bucket=moto.bucket,
        s3_client=moto.s3,
        clock=clock,
        settings=Settings(offload_state_from=350 * KB),  # offload only what would not fit
    )

    run(storage, clock, sized_pipeline(state, result), input_size)

    job = job_of(storage, "sized")
    assert job.status == JobStatus.COMPLETE, job.error
    assert len(job.result["blob"]) == result
    assert job.input is not None
    assert len(job.input["i"]) == input_size


def test_a_phase_that_logs_more_than_an_item_holds_keeps_its_newest_lines(moto: Moto, clock: FakeClock) -> None:
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, clock=clock)

    run(storage, clock, sized_pipeline(0, 0, log_lines=40), 0)  # 40 lines of 15 KB: 600 KB of log in one write

    job = job_of(storage, "sized")
    assert job.status == JobStatus.COMPLETE
    messages = [entry.message for entry in job.log]
    left_out = [message for message in messages if "earlier log entries of this write were left out" in message]
    assert len(left_out) == 1
    kept = [message[:4] for message in messages if message[:4].isdigit()]
    assert kept == [f"{number:04}" for number in range(40 - len(kept), 40)]
    assert 15 < len(kept) < 40


def test_the_item_size_counts_names_and_values_at_least_as_dynamodb_does(moto: Moto, clock: FakeClock) -> None:
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, clock=clock)
    run(storage, clock, sized_pipeline(0, 100 * KB), 0)
    stored = moto.dynamodb.get_item(
        TableName=moto.table, Key={"pk": {"S": job_pk("default", "sized")}, "sk": {"S": "JOB"}}
    )
    item = stored["Item"]
    names_and_bytes = sum(len(name) for name in item) + len(item["result"]["M"]["gzip"]["B"])
    assert names_and_bytes < item_size(item) < names_and_bytes + 2 * KB
    assert ITEM_BUDGET + 16 * KB < DYNAMODB_ITEM_LIMIT  # room left for an error text written without a size check
    assert MAX_INPUT_BYTES < 6 * 1024 * 1024  # Lambda's request payload limit
