"""What a live job keeps beside its item never expires before the job does (DynamoDB and S3 on moto).

History and input items and offloaded objects are written to live two TTLs and renewed, at most once per TTL,
by the first write that would make the job outlive them. The tests run jobs well past their TTL while they
keep writing, with DynamoDB's TTL deletion and the bucket's lifecycle simulated at every tick of the clock.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from datetime import timedelta
from typing import Any

from cairn import (
    Done,
    InlineScheduler,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    RetryPolicy,
    advance_phase,
    run_pipeline,
)
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.core import ttl
from tests.functional.conftest import Moto
from tests.support import FakeClock, job_of

DAY = 24 * 3600
JOB = "long-runner"


class Expiry:
    """DynamoDB's TTL deletion and the bucket's lifecycle rule, applied whenever the test says the time has come."""

    def __init__(self, moto: Moto, clock: FakeClock, *, ttl_hours: int) -> None:
        self.moto, self.clock = moto, clock
        self.object_life_ms = ttl.retention_days(ttl_hours) * DAY * 1000
        self.written: dict[str, int] = {}  # key -> when it was last put or copied (the fake clock's time)
        self.writes: Counter[str] = Counter()
        for operation in ("PutObject", "CopyObject"):
            moto.s3.meta.events.register(f"before-parameter-build.s3.{operation}", self._note)

    def _note(self, params: dict[str, Any], **_: Any) -> None:
        self.written[params["Key"]] = self.clock()
        self.writes[params["Key"]] += 1

    def apply(self) -> None:
        """Delete every item past its ``expiresAt`` and every object older than the lifecycle allows."""
        now = self.clock()
        for item in self.moto.dynamodb.scan(TableName=self.moto.table)["Items"]:
            if ttl.is_past(int(item["expiresAt"]["N"]), now):
                self.moto.dynamodb.delete_item(TableName=self.moto.table, Key={"pk": item["pk"], "sk": item["sk"]})
        for key, written in list(self.written.items()):
            if written + self.object_life_ms <= now:
                self.moto.s3.delete_object(Bucket=self.moto.bucket, Key=key)
                del self.written[key]

    def scheduler(self, pipeline: Pipeline[Any], storage: DynamoDBStorage) -> InlineScheduler:
        """An inline scheduler whose waits move the clock, then let the TTL and the lifecycle do their work."""

        def sleep(seconds: float) -> None:
            self.clock.advance(seconds)
            self.apply()

        scheduler = InlineScheduler(now=self.clock.monotonic, sleep=sleep)
        scheduler.bind(
            lambda job_id, **advance: advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, **advance)
        )
        return scheduler


def _storage(moto: Moto, clock: FakeClock) -> DynamoDBStorage:
    return DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3, clock=clock)


def _bulky(seed: str) -> str:
    """About 20 KB that does not compress below the offload threshold: it goes to S3."""
    return "".join(hashlib.sha256(f"{seed}{n}".encode()).hexdigest() for n in range(320))


def test_a_job_retrying_for_days_keeps_its_log_phases_input_and_offloaded_state(moto: Moto, clock: FakeClock) -> None:
    expiry = Expiry(moto, clock, ttl_hours=24)
    pipeline: Pipeline[Any] = Pipeline("patient", ttl=timedelta(hours=24))
    attempts: list[int] = []

    @pipeline.phase
    def load(ctx: PhaseContext[Any]) -> Next:
        ctx.log("loaded")
        return Next("wait", {**ctx.state, "state": _bulky("state")})

    @pipeline.phase(retry=RetryPolicy(max_attempts=7, backoff=20 * 3600, max_delay=20 * 3600, jitter=False))
    def wait(ctx: PhaseContext[Any]) -> Done:
        attempts.append(ctx.attempt)
        ctx.log(f"attempt {ctx.attempt}")
        if ctx.attempt < 7:
            raise RuntimeError("not ready")
        return Done({"input": len(ctx.state["input"]), "state": len(ctx.state["state"])})

    storage = _storage(moto, clock)
    scheduler = expiry.scheduler(pipeline, storage)
    started = clock()
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"input": _bulky("input")})
    scheduler.drain()

    job = job_of(storage, JOB)  # reads the input and the log items; a missing one would fail here
    assert clock() - started >= 5 * DAY * 1000, "six backoffs of 20 hours: the objects' first lifecycle is long gone"
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"input": 20480, "state": 20480}
    assert job.input == {"input": _bulky("input")}
    assert attempts == [1, 2, 3, 4, 5, 6, 7]
    messages = [entry.message for entry in job.log]
    assert "loaded" in messages
    assert [message for message in messages if message.startswith("attempt")] == [f"attempt {n}" for n in range(1, 8)]
    assert [record.outcome for record in job.phases] == ["next"] + ["retry"] * 6 + ["done"]
    renewed = sorted(key.split("/")[0] for key, count in expiry.writes.items() if count > 1)
    assert renewed == ["inputs", "states"], "the input and the state the retries run from were renewed"
    assert max(expiry.writes.values()) - 1 <= 5, "at most once per TTL (the job ran five TTLs)"


def test_a_state_kept_apart_from_a_long_log_is_renewed_with_it_and_a_rerun_finds_it(
    moto: Moto, clock: FakeClock
) -> None:
    expiry = Expiry(moto, clock, ttl_hours=24)
    pipeline: Pipeline[Any] = Pipeline("chatty", ttl=timedelta(hours=24))
    wanted = {"note": "x" * 2000}

    @pipeline.phase
    def talk(ctx: PhaseContext[Any]) -> Next:
        for number in range(100):
            ctx.log(f"line {number:03d} " + "y" * 70)
        return Next("wait", wanted)

    @pipeline.phase(retry=RetryPolicy(max_attempts=4, backoff=20 * 3600, max_delay=20 * 3600, jitter=False))
    def wait(ctx: PhaseContext[Any]) -> Done:
        if ctx.attempt < 4:
            raise RuntimeError("not ready")
        return Done(ctx.state)

    storage = _storage(moto, clock)
    scheduler = expiry.scheduler(pipeline, storage)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    job = job_of(storage, JOB)
    assert job.status == JobStatus.COMPLETE
    assert job.result == wanted
    kinds = {item["sk"]["S"].split("#")[0] for item in moto.dynamodb.scan(TableName=moto.table)["Items"]}
    assert "ENTRY" in kinds, "the long log put the state it came with in an item of its own"
    entered = storage.entered(JOB, "wait")  # three days on: renewed with the history that names it
    assert entered is not None
    assert entered.state == wanted
    assert len([entry for entry in job.log if entry.message.startswith("line ")]) == 100


def test_a_normal_transition_renews_nothing(moto: Moto, clock: FakeClock) -> None:
    expiry = Expiry(moto, clock, ttl_hours=1)
    pipeline: Pipeline[Any] = Pipeline("quick", ttl=timedelta(hours=1))

    @pipeline.phase
    def first(ctx: PhaseContext[Any]) -> Next:
        clock.advance(20 * 60)
        return Next("second", {"state": _bulky("first")})

    @pipeline.phase
    def second(ctx: PhaseContext[Any]) -> Done:
        clock.advance(20 * 60)
        return Done()

    storage = _storage(moto, clock)
    scheduler = expiry.scheduler(pipeline, storage)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=scheduler, initial_state={"input": _bulky("input")})
    scheduler.drain()

    assert job_of(storage, JOB).status == JobStatus.COMPLETE
    assert set(expiry.writes.values()) == {1}, "every object written once, none copied"
    assert {item["sk"]["S"].split("#")[0] for item in moto.dynamodb.scan(TableName=moto.table)["Items"]} == {
        "JOB",
        "H",  # the history items, H#<run>#<sequence>#<token>
        "INPUT",
    }


def test_a_pause_and_a_cancel_past_the_first_ttl_keep_the_log_of_the_start(moto: Moto, clock: FakeClock) -> None:
    expiry = Expiry(moto, clock, ttl_hours=1)
    pipeline: Pipeline[Any] = Pipeline("idle", ttl=timedelta(hours=1))

    @pipeline.phase
    def never(ctx: PhaseContext[Any]) -> Done:
        return Done()

    storage = _storage(moto, clock)
    run_pipeline(JOB, pipeline, storage=storage, scheduler=InlineScheduler(), initial_state={"input": _bulky("input")})
    clock.advance(50 * 60)
    storage.pause(JOB)
    clock.advance(50 * 60)
    storage.cancel(JOB)  # the start's items would have expired 40 minutes from now
    clock.advance(50 * 60)
    expiry.apply()

    job = job_of(storage, JOB)
    assert job.status == JobStatus.CANCELLED
    assert [entry.message for entry in job.log] == ['Job started at phase "never"', "Job paused", "Job cancelled"]
    assert job.input == {"input": _bulky("input")}

    clock.advance(10 * 60)
    expiry.apply()
    assert storage.get_job(JOB) is None
    assert moto.dynamodb.scan(TableName=moto.table)["Count"] == 2, "the history and input items outlive the job"
