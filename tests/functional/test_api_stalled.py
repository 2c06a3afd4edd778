"""Stalled jobs through the API function on the local stack: the job view's ``stalled``, the list's filter and
mark, the counts, and ``POST /jobs/{jobId}/nudge`` (409 unless stalled, audited once, a resend runs nothing twice)."""

from __future__ import annotations

from cairn import JobStatus
from cairn.testing.api import ApiClient
from cairn.testing.invoker import LocalContext
from tests.events import load_event
from tests.functional.api_client import ALICE, BOB, JOB, PHASES, Api, phase_names
from tests.support import FakeClock

IDLE_MS = 120_000  # the sweep's idle time (CAIRN_SWEEP_IDLE_SECONDS' default)


def _lose_the_next_invoke(api: Api, job_id: str = JOB) -> int:
    """Start ``job_id``, run its first phase, and drop the invoke of the next: the job is left running, unheld.
    The job's sequence."""
    api.create(job_id)
    api.run_phases(1)
    api.stack.invoker.queue.clear()
    return api.stored(job_id).sequence


def _client(api: Api, owner: str = ALICE) -> ApiClient:
    return ApiClient(api.stack, owner=owner, function="cairn-api")


def test_a_job_whose_advance_was_lost_shows_stalled_since_why_and_what_the_sweep_does_when(
    api: Api, stack_clock: FakeClock
) -> None:
    sequence = _lose_the_next_invoke(api)
    client = _client(api)
    assert "stalled" not in client.get(f"/jobs/{JOB}").body  # just written: an advance may still be on its way

    stack_clock.advance(IDLE_MS / 1000 + 1)
    shown = client.get(f"/jobs/{JOB}")

    assert shown.status == 200
    stalled = shown.body["stalled"]
    since = api.stored().updated_at + IDLE_MS
    assert stalled == {
        "since": since,
        "reason": "unheld",
        "why": "no worker holds it",
        "phase": "split",
        "sequence": sequence,
        "sweep": f"revive: schedule split again at sequence {sequence}",
        "sweepBy": since + 300_000,
        "sweepEverySeconds": 300,
    }
    assert shown.body["status"] == "running"


def test_the_list_filters_and_marks_stalled_jobs_and_the_counts_include_them(api: Api, stack_clock: FakeClock) -> None:
    api.create("done-job")
    api.run()
    _lose_the_next_invoke(api)
    client = _client(api)
    stack_clock.advance(IDLE_MS / 1000 + 1)

    only = client.get("/jobs", query={"stalled": "true"})
    assert only.status == 200
    assert [(job["jobId"], job["stalled"]) for job in only.body["jobs"]] == [(JOB, True)]

    every = {job["jobId"]: job for job in client.get("/jobs").body["jobs"]}
    assert every[JOB]["stalled"] is True
    assert "stalled" not in every["done-job"]  # only running jobs are judged

    counts = client.get("/jobs/counts").body
    assert counts["stalled"] == 1
    assert counts["counts"]["running"] == 1
    assert counts["exact"] is True

    refused = client.get("/jobs", query={"stalled": "true", "status": "error"})
    assert refused.status == 400
    assert "stalled=true lists running jobs" in refused.message
    assert _client(api, BOB).get("/jobs", query={"stalled": "true"}).body["jobs"] == []


def test_a_nudge_revives_the_job_once_and_is_in_its_log_with_the_caller_even_when_sent_twice(
    api: Api, stack_clock: FakeClock
) -> None:
    sequence = _lose_the_next_invoke(api)
    client = _client(api)
    stack_clock.advance(IDLE_MS / 1000 + 1)

    first = client.post(f"/jobs/{JOB}/nudge")
    again = client.post(f"/jobs/{JOB}/nudge")  # a resend after a lost reply, before the advance ran

    assert first.status == 202
    assert first.body == {"jobId": JOB, "phase": "split", "sequence": sequence, "first": True}
    assert again.status == 202
    assert again.body["first"] is False
    assert [invocation.function for invocation in api.stack.invoker.queue] == ["cairn-document-intake-split"] * 2
    nudges = [entry for entry in client.get(f"/jobs/{JOB}/log").body["entries"] if "Nudged" in entry["message"]]
    assert len(nudges) == 1
    assert nudges[0]["actor"] == ALICE
    assert nudges[0]["kind"] == "action"
    assert nudges[0]["message"] == f"Nudged: split scheduled again at sequence {sequence} by {ALICE}"

    api.run()

    done = api.stored()
    assert done.status == JobStatus.COMPLETE
    assert phase_names(done) == PHASES  # split ran once: the second advance found the sequence moved on
    late = client.post(f"/jobs/{JOB}/nudge")
    assert late.status == 409
    assert late.message == f'Job "{JOB}" is not stalled: it is complete, not running'


def test_a_nudge_of_a_job_that_is_not_stalled_is_refused_saying_why_and_changes_nothing(
    api: Api, stack_clock: FakeClock
) -> None:
    _lose_the_next_invoke(api)
    client = _client(api)
    before = api.stored()

    recent = client.post(f"/jobs/{JOB}/nudge")

    assert recent.status == 409
    assert recent.code == "conflict"
    assert "it was written 0 s ago; it counts as stalled once it has not moved for 120 s" in recent.message
    assert api.stored() == before
    assert api.stack.invoker.pending() == 0
    assert client.post("/jobs/no-such-job/nudge").status == 404
    stack_clock.advance(IDLE_MS / 1000 + 1)
    assert _client(api, BOB).post(f"/jobs/{JOB}/nudge").status == 404  # another owner's job is not there
    assert client.post("/jobs/bad%20id/nudge").status == 400


def _map_done_hand_off_lost(api: Api, stack_clock: FakeClock) -> None:
    """Start job "mapped" (a map over its pages), run every item, lose the last item's hand-off to publish."""
    state = {"document": "contract.txt", "page_concurrency": 2}
    assert api.call("create-job", body={"pipeline": "document-intake", "jobId": "mapped", "state": state}).status == 202
    queue = api.stack.invoker.queue
    while queue and not all(invocation.function.endswith("-publish") for invocation in queue):
        api.run_phases(1)
    assert queue, "the last item hands off to publish"
    queue.clear()  # that hand-off is lost
    stack_clock.advance(IDLE_MS / 1000 + 1)


def test_a_map_whose_items_are_done_but_whose_next_phase_never_started_is_stalled_and_a_nudge_runs_it(
    api: Api, stack_clock: FakeClock
) -> None:
    _map_done_hand_off_lost(api, stack_clock)
    client = _client(api)

    stalled = client.get("/jobs/mapped").body["stalled"]

    assert stalled["reason"] == "map_done"
    assert stalled["why"] == "its map's items are done and publish has not started"
    assert client.post("/jobs/mapped/nudge").status == 202
    api.run()
    assert api.stored("mapped").status == JobStatus.COMPLETE


def test_the_sweep_revives_a_map_whose_items_are_done_and_whose_next_phase_never_started(
    api: Api, stack_clock: FakeClock
) -> None:
    _map_done_hand_off_lost(api, stack_clock)

    swept = api.stack.scheduler(load_event("scheduler/scheduled-sweep"), LocalContext("cairn-scheduler"))

    assert "mapped" in swept["revived"]
    api.run()
    done = api.stored("mapped")
    assert done.status == JobStatus.COMPLETE
    assert phase_names(done)[-1] == "publish"
