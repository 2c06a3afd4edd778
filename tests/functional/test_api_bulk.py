"""``POST /bulk`` and its reads through the API function on the local stack: the bulk runs in the scheduler.

Jobs of ``flaky`` fail while their id is in BROKEN; a bulk retry of the failed ones runs through the delay
queue and the scheduler function (as deployed), each job acted on once, its log naming the caller and the bulk.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cairn.aws.bulk_worker import BulkMessage, BulkRunner
from cairn.aws.dynamodb.bulk_ops import DynamoDBBulkOperations
from cairn.testing.api import ApiClient, Reply
from cairn.testing.stack import LocalStack
from tests.functional.api_client import ALICE, BOB
from tests.functional.pipelines import flaky_pipeline
from tests.functional.stacks import moto_stack
from tests.support import FakeClock

BROKEN: set[str] = set()
FAILED = [f"flaky-{number:02d}" for number in range(6)]


@pytest.fixture
def stack(stack_clock: FakeClock) -> Iterator[LocalStack]:
    BROKEN.clear()
    with moto_stack(stack_clock, flaky_pipeline(BROKEN)) as stack:
        yield stack


@pytest.fixture
def api(stack: LocalStack) -> ApiClient:
    return ApiClient(stack, owner=ALICE)


@pytest.fixture
def failed(api: ApiClient) -> list[str]:
    """Six ``flaky`` jobs in error and one complete."""
    BROKEN.update(FAILED)
    for job_id in [*FAILED, "flaky-fine"]:
        reply = api.post("/jobs", {"pipeline": "flaky", "jobId": job_id, "state": {"id": job_id}})
        assert reply.status == 202, reply.body
    api.run_until_idle()
    assert {status_of(api, job_id) for job_id in FAILED} == {"error"}
    BROKEN.clear()
    return FAILED


def status_of(api: ApiClient, job_id: str) -> str:
    reply = api.get(f"/jobs/{job_id}")
    assert reply.status == 200, reply.body
    return str(reply.body["status"])


def log_of(api: ApiClient, job_id: str) -> list[dict[str, Any]]:
    reply = api.get(f"/jobs/{job_id}/log")
    assert reply.status == 200, reply.body
    return list(reply.body["entries"])


def retries_logged(api: ApiClient, job_id: str) -> list[str]:
    return [str(entry["message"]) for entry in log_of(api, job_id) if str(entry["message"]).startswith("Job retried")]


def bulk_jobs(api: ApiClient, bulk_id: str, **query: str) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        reply = api.get(f"/bulk/{bulk_id}/jobs", query={**query, **({"cursor": cursor} if cursor else {})})
        assert reply.status == 200, reply.body
        jobs.extend(reply.body["jobs"])
        cursor = reply.body.get("cursor")
        if not cursor:
            return jobs


def start(api: ApiClient, body: dict[str, Any], key: str | None = None) -> Reply:
    return api.request("POST", "/bulk", json=body, headers={"Idempotency-Key": key} if key else None)


RETRY_FAILED = {"action": "retry", "filter": {"status": "error", "pipeline": "flaky"}, "limit": 100}


def test_a_bulk_retry_runs_on_the_server_and_its_outcomes_follow_the_jobs(api: ApiClient, failed: list[str]) -> None:
    BROKEN.add(failed[0])  # this one fails again

    reply = start(api, RETRY_FAILED)

    assert reply.status == 202, reply.body
    assert reply.headers["Location"] == f"/bulk/{reply.body['bulkId']}"
    assert (reply.body["matched"], reply.body["pending"], reply.body["finished"]) == (6, 6, False)
    assert reply.body["by"] == ALICE
    assert {status_of(api, job_id) for job_id in failed} == {"error"}  # nothing is done inside the request
    api.run_until_idle()

    bulk = api.get(f"/bulk/{reply.body['bulkId']}").body
    assert (bulk["done"], bulk["refused"], bulk["errored"], bulk["pending"], bulk["finished"]) == (6, 0, 0, 0, True)
    outcomes = {job["jobId"]: (job["outcome"], job["status"]) for job in bulk_jobs(api, bulk["bulkId"], limit="4")}
    assert outcomes == {failed[0]: ("done", "error"), **dict.fromkeys(failed[1:], ("done", "complete"))}
    for job_id in failed:
        [entry] = [entry for entry in log_of(api, job_id) if str(entry["message"]).startswith("Job retried")]
        assert entry["actor"] == f"{ALICE} (bulk {bulk['bulkId']})"
    assert status_of(api, "flaky-fine") == "complete"


def test_a_resent_request_returns_the_same_bulk_and_acts_on_each_job_once(api: ApiClient, failed: list[str]) -> None:
    first = start(api, RETRY_FAILED, key="retry-failed-1")
    again = start(api, RETRY_FAILED, key="retry-failed-1")
    by_body = start(api, {**RETRY_FAILED, "requestId": "retry-failed-1"})

    assert first.status == again.status == by_body.status == 202
    assert first.body["bulkId"] == again.body["bulkId"] == by_body.body["bulkId"]
    api.run_until_idle()
    after = start(api, RETRY_FAILED, key="retry-failed-1")
    assert after.body["bulkId"] == first.body["bulkId"]
    assert (after.body["done"], after.body["finished"]) == (6, True)
    api.run_until_idle()
    assert {job_id: len(retries_logged(api, job_id)) for job_id in failed} == dict.fromkeys(failed, 1)
    assert start(api, RETRY_FAILED, key="retry-failed-2").body["matched"] == 0  # a new key: a new bulk
    other = start(api, {**RETRY_FAILED, "action": "cancel"}, key="retry-failed-1")
    assert (other.status, other.code) == (409, "conflict")  # the key names a retry: no cancel under it


def test_a_worker_killed_mid_chunk_and_retried_acts_on_no_job_twice(
    api: ApiClient, stack: LocalStack, stack_clock: FakeClock, failed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    reply = api.request("POST", "/bulk", json=RETRY_FAILED)
    bulk_id = reply.body["bulkId"]
    real = DynamoDBBulkOperations.record_outcome
    calls = {"count": 0}

    def dies_on_the_third(self: DynamoDBBulkOperations, *args: Any, **kwargs: Any) -> bool:
        calls["count"] += 1
        if calls["count"] == 3:
            raise RuntimeError("the worker died after acting, before recording")
        return real(self, *args, **kwargs)

    runner = BulkRunner(stack.runtime, stack.pipelines, ALICE)
    monkeypatch.setattr(DynamoDBBulkOperations, "record_outcome", dies_on_the_third)
    with pytest.raises(RuntimeError):
        runner.run_chunk(BulkMessage(bulk_id=bulk_id, owner=ALICE), lambda: 60_000)
    monkeypatch.setattr(DynamoDBBulkOperations, "record_outcome", real)
    # A second worker while the dead one's lease is live leaves its job alone; once it has run out, it settles it.
    runner.run_chunk(BulkMessage(bulk_id=bulk_id, owner=ALICE), lambda: 60_000)
    assert api.get(f"/bulk/{bulk_id}").body["pending"] == 1
    stack_clock.advance(121)
    assert runner.run_chunk(BulkMessage(bulk_id=bulk_id, owner=ALICE), lambda: 60_000) is None
    api.run_until_idle()  # the queued first message too: it finds nothing left to do

    bulk = api.get(f"/bulk/{bulk_id}").body
    assert (bulk["done"], bulk["pending"], bulk["finished"]) == (6, 0, True)
    assert {job_id: len(retries_logged(api, job_id)) for job_id in failed} == dict.fromkeys(failed, 1)
    assert {job["outcome"] for job in bulk_jobs(api, bulk_id)} == {"done"}


def test_a_chunk_out_of_time_hands_on_and_the_bulk_finishes(
    api: ApiClient, stack: LocalStack, failed: list[str]
) -> None:
    bulk_id = start(api, {**RETRY_FAILED, "action": "cancel"}).body["bulkId"]
    runner = BulkRunner(stack.runtime, stack.pipelines, ALICE)
    budget = iter([60_000, 60_000, 1_000])

    following = runner.run_chunk(BulkMessage(bulk_id=bulk_id, owner=ALICE), lambda: next(budget))

    assert following is not None
    assert (following.page, following.offset) == (0, 2)
    assert api.get(f"/bulk/{bulk_id}").body["done"] == 2
    assert runner.run_chunk(following, lambda: 60_000) is None
    assert {status_of(api, job_id) for job_id in failed} == {"cancelled"}


def test_a_dry_run_lists_the_jobs_and_acts_on_none(api: ApiClient, failed: list[str]) -> None:
    reply = start(api, {**RETRY_FAILED, "dryRun": True}, key="dry")

    assert reply.status == 200, reply.body
    assert reply.body["dryRun"] is True
    assert (reply.body["matched"], sorted(reply.body["jobIds"])) == (6, sorted(failed))
    api.run_until_idle()
    assert {status_of(api, job_id) for job_id in failed} == {"error"}
    assert start(api, RETRY_FAILED, key="dry").status == 202  # the dry run kept nothing under its key


def test_more_jobs_than_the_limit_is_refused_and_nothing_is_kept(api: ApiClient, failed: list[str]) -> None:
    reply = start(api, {**RETRY_FAILED, "limit": 5}, key="too-many")

    assert (reply.status, reply.code) == (409, "too_many_jobs")
    assert "More than 5 jobs match" in reply.message
    api.run_until_idle()
    assert {status_of(api, job_id) for job_id in failed} == {"error"}
    assert start(api, {**RETRY_FAILED, "limit": 6}, key="too-many").body["matched"] == 6


def test_ids_are_acted_on_and_a_job_whose_status_forbids_it_is_refused(api: ApiClient, failed: list[str]) -> None:
    reply = start(api, {"action": "retry", "ids": [failed[0], "flaky-fine", "no-such-job"], "limit": 3})
    assert reply.status == 202, reply.body
    api.run_until_idle()

    outcomes = {job["jobId"]: job for job in bulk_jobs(api, reply.body["bulkId"])}
    assert outcomes[failed[0]]["outcome"] == "done"
    assert outcomes["flaky-fine"]["outcome"] == "refused"
    assert "complete" in outcomes["flaky-fine"]["detail"]
    assert (outcomes["no-such-job"]["outcome"], outcomes["no-such-job"]["status"]) == ("refused", "missing")


def test_another_callers_bulk_is_404(api: ApiClient, failed: list[str]) -> None:
    bulk_id = start(api, RETRY_FAILED).body["bulkId"]

    assert api.get(f"/bulk/{bulk_id}", owner=BOB).status == 404
    assert api.get(f"/bulk/{bulk_id}/jobs", owner=BOB).status == 404
    assert start(api.as_owner(BOB), RETRY_FAILED).body["matched"] == 0  # Bob's filter sees none of Alice's jobs
    assert api.get("/bulk/b-nothing").status == 404


@pytest.mark.parametrize(
    "body",
    [
        {"filter": {"status": "error"}, "limit": 10},
        {"action": "rerun", "filter": {"status": "error"}, "limit": 10},
        {"action": "retry", "filter": {"status": "error"}},
        {"action": "retry", "filter": {"status": "error"}, "limit": 0},
        {"action": "retry", "filter": {"status": "error"}, "limit": 10_001},
        {"action": "retry", "filter": {"status": "error"}, "limit": "ten"},
        {"action": "retry", "limit": 10},
        {"action": "retry", "filter": {"status": "error"}, "ids": ["a"], "limit": 10},
        {"action": "retry", "filter": {"status": "lost"}, "limit": 10},
        {"action": "retry", "filter": {"pipeline": "no-such"}, "limit": 10},
        {"action": "retry", "filter": {"pipeline": "bad name!"}, "limit": 10},
        {"action": "retry", "filter": {"createdFrom": "yesterday"}, "limit": 10},
        {"action": "retry", "filter": {"createdFrom": "2026-12-02T00:00:00Z", "createdTo": "2026-12-01"}, "limit": 10},
        {"action": "retry", "filter": {"idPrefix": "-x"}, "limit": 10},
        {"action": "retry", "filter": {"status": "error", "colour": "red"}, "limit": 10},
        {"action": "retry", "ids": [], "limit": 10},
        {"action": "retry", "ids": ["bad id!"], "limit": 10},
        {"action": "retry", "filter": None, "limit": 10},
        {"action": "retry", "ids": None, "limit": 10},
        {"action": "retry", "filter": {"status": "error"}, "limit": 10, "dryRun": "maybe"},
        {"action": "retry", "filter": {"status": "error"}, "limit": 10, "requestId": "has space"},
        {"action": "retry", "filter": {"status": "error"}, "limit": 10, "requestId": "x" * 129},
        {"action": "retry", "filter": {"status": "error"}, "limit": 10, "extra": 1},
        ["not", "an", "object"],
    ],
)
def test_bad_input_is_400_and_starts_nothing(api: ApiClient, body: Any) -> None:
    reply = api.post("/bulk", body)

    assert reply.status == 400, reply.body
    assert api.stack.invoker.pending() == 0


def test_bad_keys_cursors_and_ids_are_400(api: ApiClient) -> None:
    body = {"action": "cancel", "filter": {"status": "error"}, "limit": 10}
    assert start(api, body, key="has space").status == 400
    assert api.request("POST", "/bulk", json={**body, "requestId": "a"}, headers={"Idempotency-Key": "b"}).status == 400
    assert api.get("/bulk/not%20an%20id").status in (400, 404)
    assert api.get("/bulk/" + "b" * 65).status == 400
    assert api.get("/bulk/b-1/jobs", query={"cursor": "x"}).status == 400
    assert api.get("/bulk/b-1/jobs", query={"limit": "1000"}).status == 400
    too_many = api.post("/bulk", {"action": "retry", "ids": ["a", "b"], "limit": 1})
    assert (too_many.status, too_many.code) == (409, "too_many_jobs")
