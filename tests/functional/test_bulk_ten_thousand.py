"""A bulk of 10,000 jobs, the most one takes: selected through the API, run by the scheduler through the delay queue
in chunks that each stop short of their time, every job cancelled exactly once.

The jobs are written straight into the store (idle at their first phase, nothing scheduled), as the browser tests
seed theirs. Each scheduler invocation is given time for a :data:`LINKS`-th of them, so the bulk hands on from
chunk to chunk through the queue, past Lambda's 17-link limit on a recursive chain (the scheduler runs with
``RecursiveLoop: Allow``, as the local stack does). ``make test-long`` runs 400 jobs (about 25 s);
``make bulk-proof`` (``CAIRN_BULK_PROOF=1``) the 10,000 a bulk takes at most (about 11 minutes).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cairn.aws import scheduler_handler
from cairn.core.bulk_port import MAX_BULK
from cairn.core.models import Checkpoint
from cairn.core.transitions.requests import StartJob
from cairn.testing.api import ApiClient
from cairn.testing.stack import LocalStack
from tests.functional.api_client import ALICE
from tests.functional.pipelines import flaky_pipeline
from tests.functional.stacks import moto_stack
from tests.support import FakeClock

LINKS = 25
"""Links of the chain the bulk takes: a scheduler invocation has time for a 25th of the jobs."""
PROOF_JOBS = MAX_BULK if os.environ.get("CAIRN_BULK_PROOF") == "1" else 400
"""Jobs the bulk acts on: the most a bulk takes with ``CAIRN_BULK_PROOF=1``, else 400 (16 a link of the chain)."""


@pytest.fixture
def stack(stack_clock: FakeClock) -> Iterator[LocalStack]:
    with moto_stack(stack_clock, flaky_pipeline(set())) as stack:
        yield stack


def seed(stack: LocalStack, count: int) -> list[str]:
    """``count`` flaky jobs of Alice's, idle at ``work``, created 1 ms apart."""
    storage = stack.runtime.storage(ALICE)
    now = stack.runtime.clock()
    job_ids = [f"bulk-{number:05d}" for number in range(count)]
    for at, job_id in enumerate(job_ids):
        created = now - count + at
        storage.start_job(
            StartJob(
                job_id=job_id,
                pipeline="flaky",
                checkpoint=Checkpoint(next_phase="work", state={"id": job_id}, created_at=created),
                now_ms=created,
                expires_at=created // 1000 + 7 * 86_400,
                seen=None,
                ttl_seconds=7 * 86_400,
                input={"id": job_id},
            )
        )
    return job_ids


def budgeted(jobs: int) -> Callable[[Any], Callable[[], int]]:
    """A scheduler's time left that lasts for ``jobs`` jobs, then runs short (a chunk asks once a job)."""

    def remaining(context: Any) -> Callable[[], int]:
        left = iter(range(jobs, -1, -1))
        return lambda: 60_000 if next(left, 0) > 0 else 0

    return remaining


def test_ten_thousand_jobs_are_each_cancelled_once_across_many_chunks(
    stack: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = int(os.environ.get("CAIRN_BULK_JOBS", PROOF_JOBS))
    job_ids = seed(stack, count)
    api = ApiClient(stack, owner=ALICE)
    body = {"action": "cancel", "filter": {"pipeline": "flaky", "idPrefix": "bulk-"}, "limit": MAX_BULK}

    body["limit"] = count
    assert api.post("/bulk", {**body, "limit": count - 1}).status == 409
    reply = api.request("POST", "/bulk", json=body, headers={"Idempotency-Key": "ten-thousand"})
    assert reply.status == 202, reply.body
    assert reply.body["matched"] == count
    monkeypatch.setattr(scheduler_handler, "_remaining", budgeted(-(-count // LINKS)))
    stack.run_until_idle(timeout=1800)

    bulk = api.get(f"/bulk/{reply.body['bulkId']}").body
    assert (bulk["done"], bulk["refused"], bulk["errored"], bulk["pending"]) == (count, 0, 0, 0)
    assert bulk["finished"] is True
    assert stack.invoker.stopped == []  # no link of the chain was stopped
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page = api.get(f"/bulk/{bulk['bulkId']}/jobs", query={"cursor": cursor} if cursor else None)
        assert len(json.dumps(page.body)) < 200_000  # a page is bounded, far below Lambda's 6 MB
        seen.extend(
            job["jobId"] for job in page.body["jobs"] if (job["outcome"], job["status"]) == ("done", "cancelled")
        )
        cursor = page.body.get("cursor")
        if not cursor:
            break
    assert sorted(seen) == job_ids
    storage = stack.runtime.storage(ALICE)
    for job_id in job_ids[:: max(1, count // 50)]:  # each job's log names the bulk once
        job = storage.get_job(job_id)
        assert job is not None
        assert [entry.actor for entry in job.log if entry.message.startswith("Job cancelled")] == [
            f"{ALICE} (bulk {bulk['bulkId']})"
        ]
