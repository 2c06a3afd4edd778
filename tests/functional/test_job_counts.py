"""A count of the owner's jobs per status, without reading every job: through the store (DynamoDB bounds it, the
memory and file stores count exactly), the API's ``GET /jobs/counts``, ``cairn jobs count`` and the dashboard's
jobs list."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from benchmarks.dynamodb_meter import DynamoDBMeter
from cairn import Done, FileStorage, JobStatus, MemoryStorage, Next, PhaseContext, Pipeline, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage, listings
from cairn.core.engine import pause_job
from cairn.core.storage_port import Storage
from tests.functional.api_client import ALICE, BOB, Api
from tests.functional.conftest import Moto
from tests.functional.jobs_server import JobsServer
from tests.functional.test_jobs_cli import run_cli, start
from tests.support import FakeClock, make_scheduler

STATUSES = [status.value for status in JobStatus]


def two_pipelines() -> tuple[Pipeline[Any], Pipeline[Any]]:
    """``done`` finishes in one phase; ``looping`` runs on until paused."""
    done: Pipeline[Any] = Pipeline("done", ttl=timedelta(hours=1))
    looping: Pipeline[Any] = Pipeline("looping", ttl=timedelta(hours=1))

    @done.phase
    def only(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    @looping.phase
    def tick(ctx: PhaseContext[Any]) -> Next:
        return Next("tick", ctx.state)

    return done, looping


def seed(storage: Storage, clock: FakeClock, *, complete: int, running: int, paused: int) -> None:
    """Jobs of each status, one second apart."""
    done, looping = two_pipelines()
    for number in range(complete):
        clock.advance(1)
        scheduler = make_scheduler(done, storage, clock)
        run_pipeline(f"done-{number:03d}", done, storage=storage, scheduler=scheduler, initial_state={})
        scheduler.drain()
    for number in range(running + paused):
        clock.advance(1)
        job_id = f"loop-{number:03d}"
        scheduler = make_scheduler(looping, storage, clock)
        run_pipeline(job_id, looping, storage=storage, scheduler=scheduler, initial_state={})
        if number >= running:
            pause_job(job_id, storage=storage)


def expected(**counts: int) -> dict[JobStatus, int]:
    return {status: counts.get(status.value, 0) for status in JobStatus}


@pytest.mark.parametrize("kind", ["memory", "file", "dynamodb"])
def test_every_store_counts_its_live_jobs_per_status(kind: str, moto: Moto, clock: FakeClock, tmp_path: Path) -> None:
    stores: dict[str, Any] = {
        "memory": lambda: MemoryStorage(clock=clock),
        "file": lambda: FileStorage(tmp_path / "jobs", clock=clock),
        "dynamodb": lambda: DynamoDBStorage(moto.table, owner="counted", client=moto.dynamodb, clock=clock),
    }
    storage: Storage = stores[kind]()
    assert storage.count_jobs().total == 0
    seed(storage, clock, complete=5, running=3, paused=2)

    counts = storage.count_jobs()
    assert counts.counts == expected(complete=5, running=3, paused=2)
    assert (counts.total, counts.exact, counts.unreadable) == (10, True, 0)

    clock.advance(2 * 3600)  # every job past its TTL (DynamoDB has deleted none of them yet)
    gone = storage.count_jobs()
    assert (gone.total, gone.exact) == (0, True)


def test_dynamodb_counts_from_the_index_in_one_pass_without_reading_a_job(moto: Moto, clock: FakeClock) -> None:
    storage = DynamoDBStorage(moto.table, owner="counted", client=moto.dynamodb, clock=clock)
    seed(storage, clock, complete=12, running=6, paused=2)
    other = DynamoDBStorage(moto.table, owner="someone-else", client=moto.dynamodb, clock=clock)
    seed(other, clock, complete=3, running=0, paused=0)
    meter = DynamoDBMeter(moto.dynamodb)
    try:
        meter.take()
        counts = storage.count_jobs()
        figures = meter.take()
    finally:
        meter.detach()

    assert counts.counts == expected(complete=12, running=6, paused=2)
    assert counts.exact
    assert dict(figures.dynamodb) == {"Query": 4}  # one query a listing shard, no job item read
    assert figures.read_units <= 4 * 0.5


def test_above_the_bound_each_count_is_a_lower_bound_said_so(
    moto: Moto, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = DynamoDBStorage(moto.table, owner="counted", client=moto.dynamodb, clock=clock)
    seed(storage, clock, complete=24, running=8, paused=0)
    monkeypatch.setattr(listings, "COUNT_BOUND", 3)  # 3 entries a shard: 12 of the 32 jobs

    counts = storage.count_jobs()
    assert not counts.exact
    assert counts.total == 12
    assert counts.counts[JobStatus.COMPLETE] <= 24
    assert counts.counts[JobStatus.RUNNING] <= 8

    monkeypatch.setattr(listings, "COUNT_BOUND", 1000)
    assert storage.count_jobs().exact


def test_the_api_counts_the_callers_own_jobs(api: Api) -> None:
    for job_id in ("one", "two", "three"):
        api.create(job_id)
    api.run()
    api.create("four")
    api.create("bobs", caller=BOB)

    answer = api.call("count-jobs", caller=ALICE)
    assert answer.status == 200, answer.body
    assert answer.body["counts"] == {**dict.fromkeys(STATUSES, 0), "complete": 3, "running": 1}
    assert (answer.body["total"], answer.body["exact"], answer.body["unreadable"]) == (4, True, 0)
    bobs = api.call("count-jobs", caller=BOB)
    assert (bobs.body["counts"]["running"], bobs.body["total"]) == (1, 1)


def test_cairn_jobs_count_prints_a_count_per_status_and_json_prints_the_apis(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for job_id in ("a", "b"):
        start(capsys, job_id)
    jobs.run()
    start(capsys, "c")

    status, out, err = run_cli(capsys, "count")
    assert (status, err) == (0, "")
    header, *rows = out.splitlines()
    assert header.split() == ["STATUS", "JOBS"]
    assert [row.split() for row in rows] == [
        *([name, {"complete": "2", "running": "1"}.get(name, "0")] for name in STATUSES),
        ["of", "which", "stalled", "0"],
        ["total", "3"],
    ]
    assert jobs.requests_to("/jobs/counts"), "counted by the API"

    status, out, _ = run_cli(capsys, "count", "--json")
    assert status == 0
    assert json.loads(out)["counts"]["complete"] == 2


def test_cairn_jobs_count_says_when_a_count_is_a_lower_bound() -> None:
    from cairn.client.render import counts_table

    text = counts_table({"counts": {"running": 1000, "complete": 3000}, "total": 4000, "exact": False})
    assert "running   at least 1000" in text
    assert "total     at least 4000" in text
    assert text.endswith("each figure is a lower bound.")
