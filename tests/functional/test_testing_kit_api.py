"""The test kit's API client: a user's pipeline behind the API on moto, called as signed-in owners."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cairn import Done, Next, PhaseContext, Pipeline, RetryPolicy
from cairn.testing.api import ApiClient
from cairn.testing.api_events import jwt_caller
from cairn.testing.plugin import SkippingClock

ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"
MakeApi = Callable[..., ApiClient]


def greeting() -> Pipeline[Any]:
    """``shout`` then ``greet``: a greeting for the name in the state."""
    pipeline: Pipeline[Any] = Pipeline("greeting")
    pipeline.phase(name="shout")(lambda ctx: Next("greet", {"name": ctx.state["name"].upper()}))
    pipeline.phase(name="greet")(lambda ctx: Done({"greeting": f"hello {ctx.state['name']}"}))
    return pipeline


def start(api: ApiClient, job_id: str, name: str = "ada") -> None:
    reply = api.post("/jobs", {"pipeline": "greeting", "jobId": job_id, "state": {"name": name}})
    assert reply.status == 202, reply.body
    assert reply.headers["Location"] == f"/jobs/{job_id}"


def test_a_job_alice_starts_runs_to_complete_and_only_alice_sees_it(cairn_api: MakeApi) -> None:
    alice = cairn_api(greeting(), owner=ALICE)
    bob = alice.as_owner(BOB)
    start(alice, "hello-1")
    assert alice.get("/jobs/hello-1").body["status"] == "running"
    assert alice.run_until_idle() == 2  # one invocation per phase

    job = alice.get("/jobs/hello-1")
    assert job.status == 200
    assert job.body["result"] == {"greeting": "hello ADA"}
    assert [phase["phase"] for phase in job.body["phases"]] == ["shout", "greet"]
    missing = bob.get("/jobs/hello-1")
    assert (missing.status, missing.code) == (404, "not_found")
    assert bob.post("/jobs/hello-1/cancel").status == 404

    start(bob, "hello-2", name="bo")
    bob.run_until_idle()
    assert [job["jobId"] for job in alice.get("/jobs").body["jobs"]] == ["hello-1"]
    assert [job["jobId"] for job in bob.get("/jobs").body["jobs"]] == ["hello-2"]
    assert alice.get("/jobs", query={"status": "complete"}, owner=BOB).body["jobs"][0]["jobId"] == "hello-2"


def test_a_request_without_an_owner_is_refused_except_on_public_routes(cairn_api: MakeApi) -> None:
    nobody = cairn_api(greeting(), owner=None)
    for reply in (nobody.get("/jobs"), nobody.get("/jobs/hello-1"), nobody.post("/jobs", {"pipeline": "greeting"})):
        assert (reply.status, reply.code) == (401, "unauthenticated")
    assert nobody.get("/health").body == {"status": "ok", "driver": "direct", "checked": "api"}
    assert nobody.get("/openapi.json").body["info"]["title"] == "cairn"


def test_a_jwt_caller_is_an_owner_of_its_own(cairn_api: MakeApi) -> None:
    alice = cairn_api(greeting(), owner=ALICE)
    carol = alice.as_owner(jwt_caller("carol", "https://issuer.example"))
    start(carol, "hello-3")
    assert carol.get("/jobs/hello-3").status == 200
    assert alice.get("/jobs/hello-3").status == 404


def test_a_retry_backoff_of_an_hour_behind_the_api_takes_no_real_time(
    cairn_api: MakeApi, cairn_clock: SkippingClock
) -> None:
    failures = [True]
    pipeline: Pipeline[Any] = Pipeline("greeting")

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=3600.0, max_delay=3600.0, jitter=False))
    def shout(ctx: PhaseContext[Any]) -> Done:
        if failures and failures.pop(0):
            raise RuntimeError("the service is down")
        return Done({"attempt": ctx.attempt})

    alice = cairn_api(pipeline, owner=ALICE)
    started_ms = cairn_clock()
    start(alice, "slow-1")
    alice.run_until_idle()

    assert alice.get("/jobs/slow-1").body["result"] == {"attempt": 2}
    # Measured on the kit's clock: the hour was skipped (past SQS's 15 minutes: queued four times), nothing more.
    skipped_ms = cairn_clock() - started_ms
    assert 3600 * 1000 <= skipped_ms < (3600 + 60) * 1000, skipped_ms


def test_an_owner_given_per_request_replaces_the_clients(cairn_api: MakeApi) -> None:
    api = cairn_api(greeting(), owner=None)
    body = {"pipeline": "greeting", "jobId": "hello-4", "state": {"name": "ada"}}
    assert api.post("/jobs", body, owner=ALICE).status == 202
    assert api.get("/jobs/hello-4", owner=ALICE).status == 200
    assert api.get("/jobs/hello-4", owner=BOB).status == 404
    assert api.get("/jobs/hello-4").status == 401  # the client's own owner: nobody
