"""Large state goes to S3 with a hash; without a bucket an oversize state fails the phase cleanly."""

from __future__ import annotations

import base64
import hashlib
import os
from typing import Any

import pytest

from cairn import Done, Job, JobStatus, Next, PhaseContext, Pipeline, run_pipeline
from cairn.adapters import CorruptJobError
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.dynamodb.schema import job_pk
from cairn.testing.contract.base import JOB, claim_request, commit_request, fence_of, save_request, start_request
from tests.aws import stored_state as aws_stored_state
from tests.functional.conftest import Moto
from tests.support import FakeClock, job_of, make_scheduler

TEN_MB = 10 * 1024 * 1024


def incompressible_text(size: int) -> str:
    """Text that gzip cannot shrink much: base64 of random bytes."""
    return base64.b64encode(os.urandom(size * 3 // 4)).decode()[:size]


def stored_sort_keys(moto: Moto, job_id: str) -> list[str]:
    response = moto.dynamodb.query(
        TableName=moto.table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": job_pk("default", job_id)}},
        ConsistentRead=True,
    )
    return [item["sk"]["S"] for item in response["Items"]]


def bucket_keys(moto: Moto) -> list[str]:
    listing = moto.s3.list_objects_v2(Bucket=moto.bucket)
    return sorted(obj["Key"] for obj in listing.get("Contents", []))


def big_state_pipeline(blob: str) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("big")

    @pipeline.phase
    def produce(ctx: PhaseContext[Any]) -> Next:
        return Next("grow", {"blob": blob, "round": 1})

    @pipeline.phase
    def grow(ctx: PhaseContext[Any]) -> Next:
        assert ctx.state["blob"] == blob
        return Next("finish", {"blob": blob[::-1], "round": 2})

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        assert ctx.state["blob"] == blob[::-1]
        return Done({"sha256": hashlib.sha256(ctx.state["blob"].encode()).hexdigest()})

    return pipeline


def test_a_ten_megabyte_state_round_trips_through_s3(moto: Moto, clock: FakeClock) -> None:
    blob = incompressible_text(TEN_MB)
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3, clock=clock)
    pipeline = big_state_pipeline(blob)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("big-1", pipeline, storage=storage, scheduler=scheduler, initial_state={})

    scheduler.drain(max_steps=1)
    job = job_of(storage, "big-1")
    assert job.checkpoint is not None
    assert job.checkpoint.state == {"blob": blob, "round": 1}
    first_keys = bucket_keys(moto)
    assert len(first_keys) == 1
    assert first_keys[0].startswith("states/default/big-1/")

    scheduler.drain(max_steps=1)
    second_keys = bucket_keys(moto)
    assert len(second_keys) == 2  # each phase's entry state is kept, for a rerun from that phase
    assert set(first_keys) < set(second_keys)

    scheduler.drain()
    done = job_of(storage, "big-1")
    assert done.status == JobStatus.COMPLETE
    assert done.result == {"sha256": hashlib.sha256(blob[::-1].encode()).hexdigest()}
    assert bucket_keys(moto) == second_keys  # kept until the bucket's retention removes them
    entered = storage.entered("big-1", "grow")
    assert entered is not None
    assert entered.state == {"blob": blob, "round": 1}


def test_a_state_saved_mid_phase_is_removed_once_replaced(moto: Moto, clock: FakeClock) -> None:
    blob = incompressible_text(1024 * 1024)
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3, clock=clock)
    pipeline: Pipeline[Any] = Pipeline("saver")

    @pipeline.phase
    def work(ctx: PhaseContext[Any]) -> Done:
        for round_ in range(3):
            ctx.save_state({"blob": blob, "round": round_})
        return Done(None)

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("saver-1", pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    assert job_of(storage, "saver-1").status == JobStatus.COMPLETE
    assert not [key for key in bucket_keys(moto) if key.startswith("saves/")]


def test_a_state_object_that_does_not_match_its_hash_is_reported(moto: Moto, clock: FakeClock) -> None:
    blob = incompressible_text(1024 * 1024)
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3, clock=clock)
    pipeline = big_state_pipeline(blob)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("big-2", pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)
    [key] = bucket_keys(moto)
    moto.s3.put_object(Bucket=moto.bucket, Key=key, Body=b"tampered")

    with pytest.raises(CorruptJobError, match="SHA-256"):
        storage.get_job("big-2")


def test_without_a_bucket_an_oversize_state_fails_the_phase_and_changes_nothing_else(
    moto: Moto, clock: FakeClock
) -> None:
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, clock=clock)
    pipeline: Pipeline[Any] = Pipeline("oversize")
    blob = incompressible_text(600_000)

    @pipeline.phase
    def small(ctx: PhaseContext[Any]) -> Next:
        return Next("huge", {"note": "small state"})

    @pipeline.phase
    def huge(ctx: PhaseContext[Any]) -> Next:
        ctx.add_usage(calls=1)
        return Next("never", {"blob": blob})

    @pipeline.phase
    def never(ctx: PhaseContext[Any]) -> Done:
        raise AssertionError("must not run")

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("over-1", pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    job = job_of(storage, "over-1")
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert "bytes, over the limit of 350000 bytes" in job.error
    assert job.checkpoint is not None
    assert job.checkpoint.next_phase == "huge"
    assert job.checkpoint.state == {"note": "small state"}
    assert [record.outcome for record in job.phases] == ["next", "error"]


def test_without_a_bucket_an_oversize_save_state_fails_the_phase(moto: Moto, clock: FakeClock) -> None:
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, clock=clock)
    pipeline: Pipeline[Any] = Pipeline("oversize-save")

    @pipeline.phase
    def work(ctx: PhaseContext[Any]) -> Done:
        ctx.save_state({"step": 1})
        ctx.save_state({"blob": incompressible_text(500_000)})
        return Done()

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("over-2", pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    job = job_of(storage, "over-2")
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert "over the limit of 350000 bytes" in job.error
    assert job.checkpoint is not None
    assert job.checkpoint.state == {"step": 1}
    raw = moto.dynamodb.get_item(
        TableName=moto.table, Key={"pk": {"S": job_pk("default", "over-2")}, "sk": {"S": "JOB"}}
    )
    assert len(str(raw["Item"])) < 10_000


def stored_state(moto: Moto, job_id: str) -> dict[str, Any]:
    """The raw checkpoint state attribute of a job item."""
    return aws_stored_state(moto.dynamodb, moto.table, job_pk("default", job_id))


def test_a_state_above_the_break_even_size_goes_to_s3_only_when_there_is_a_bucket(moto: Moto, clock: FakeClock) -> None:
    blob = incompressible_text(16 * 1024)  # above the 8 KB break-even, far below the item limit
    with_bucket = DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3, clock=clock)
    without_bucket = DynamoDBStorage(moto.table, owner="other", client=moto.dynamodb, clock=clock)
    pipeline = big_state_pipeline(blob)
    for storage in (with_bucket, without_bucket):
        scheduler = make_scheduler(pipeline, storage, clock)
        run_pipeline("mid-1", pipeline, storage=storage, scheduler=scheduler, initial_state={})
        scheduler.drain(max_steps=1)

    assert set(stored_state(moto, "mid-1")) == {"s3"}
    inline = aws_stored_state(moto.dynamodb, moto.table, job_pk("other", "mid-1"))
    assert len(inline) == 1
    assert set(inline) < {"json", "gzip"}  # inline: without a bucket only the item limit counts
    for storage in (with_bucket, without_bucket):
        scheduler = make_scheduler(pipeline, storage, clock)
        scheduler.schedule_advance("mid-1", phase="grow")
        scheduler.drain()
        assert job_of(storage, "mid-1").status == JobStatus.COMPLETE


def test_a_small_compressible_state_is_gzipped_once_and_stays_in_the_item(moto: Moto, clock: FakeClock) -> None:
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3, clock=clock)
    pipeline = big_state_pipeline("the same words again and again " * 40)
    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("small-1", pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain(max_steps=1)

    assert set(stored_state(moto, "small-1")) == {"gzip"}
    assert bucket_keys(moto) == []


class SavesBeforeRead:
    """An S3 client whose first read of a ``saves/`` object lets ``saves`` saves land first: saves that replace the
    object between a reader's read of the job item and its read of the object."""

    def __init__(self, s3: Any, save: Any, saves: int) -> None:
        self._s3, self._save, self._saves, self.raced = s3, save, saves, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._s3, name)

    def get_object(self, **kwargs: Any) -> Any:
        if str(kwargs["Key"]).startswith("saves/") and not self.raced:
            self.raced += 1
            for _ in range(self._saves):
                self._save()
        return self._s3.get_object(**kwargs)


@pytest.mark.parametrize("read", ["get_job", "get_job_view", "pause"])
@pytest.mark.parametrize(("saves", "answered"), [(1, 1), (2, 3)])
def test_a_read_racing_saves_answers_the_state_it_named_or_reads_again_for_the_newer_one(
    moto: Moto, clock: FakeClock, read: str, saves: int, answered: int
) -> None:
    """A save keeps the object it replaced until the next save: one save landing mid-read leaves the state the
    read named readable; after two it is gone, and the read reads the job again and answers the newest."""
    writer = DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3, clock=clock)
    held = writer.claim(claim_request(clock, writer.start_job(start_request(clock, state={"n": 0}))))
    assert held is not None
    counter = iter(range(1, 100))

    def save() -> None:
        job = writer.get_job(JOB)
        assert job is not None
        writer.save(
            JOB, fence_of(held), save_request(clock, job, {"n": next(counter), "pad": incompressible_text(16_000)})
        )

    save()
    assert any(key.startswith("saves/") for key in bucket_keys(moto))
    racing = SavesBeforeRead(moto.s3, save, saves)
    reader = DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=racing, clock=clock)  # type: ignore[arg-type]

    if read == "pause":  # a pause answers with the job; the claim holder saves on until its phase ends
        found: Job | None = reader.pause(JOB)
    else:
        found = reader.get_job(JOB) if read == "get_job" else getattr(reader.get_job_view(JOB), "job", None)

    assert racing.raced == 1
    assert found is not None
    assert found.checkpoint is not None
    assert found.checkpoint.state["n"] == answered


def test_a_save_keeps_the_state_it_replaced_until_the_next_and_the_end_of_the_phase_removes_both(
    moto: Moto, clock: FakeClock
) -> None:
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3, clock=clock)
    job = storage.claim(claim_request(clock, storage.start_job(start_request(clock, state={"n": 0}))))
    assert job is not None
    fence = fence_of(job)
    kept: list[list[str]] = []
    for n in range(1, 4):
        job = storage.save(JOB, fence, save_request(clock, job, {"n": n, "pad": incompressible_text(16_000)}))
        kept.append([key for key in bucket_keys(moto) if key.startswith("saves/")])
        kept.append([sk for sk in stored_sort_keys(moto, JOB) if sk.startswith("SAVE#")])

    assert [len(found) for found in kept] == [1, 1, 2, 2, 2, 2]  # the current save and the one it replaced
    storage.commit(JOB, fence, commit_request(clock, job, "done", result={"n": 3}))
    assert not [key for key in bucket_keys(moto) if key.startswith("saves/")]
    assert not [sk for sk in stored_sort_keys(moto, JOB) if sk.startswith("SAVE#")]


def test_a_saved_state_object_missing_while_the_job_item_still_names_it_is_corrupt(
    moto: Moto, clock: FakeClock
) -> None:
    storage = DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3, clock=clock)
    held = storage.claim(claim_request(clock, storage.start_job(start_request(clock, state={"n": 0}))))
    assert held is not None
    storage.save(JOB, fence_of(held), save_request(clock, held, {"pad": incompressible_text(16_000)}))
    [key] = [key for key in bucket_keys(moto) if key.startswith("saves/")]
    moto.s3.delete_object(Bucket=moto.bucket, Key=key)

    with pytest.raises(CorruptJobError, match="is missing"):
        storage.get_job(JOB)
    with pytest.raises(CorruptJobError, match="is missing"):
        storage.get_job_view(JOB)
