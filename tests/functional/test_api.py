"""The API function through its real handler, on the local stack (moto in-process): the job flows."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from cairn import JobStatus
from tests.events import load_event
from tests.functional.api_client import ALICE, BOB, CAROL, JOB, PHASES, Api, as_caller, phase_names
from tests.support import FakeClock


def test_create_starts_the_job_and_the_stack_runs_it_to_the_document_intake_result(api: Api) -> None:
    reply = api.call("create-job")

    assert reply.status == 202
    assert reply.headers["Location"] == f"/jobs/{JOB}"
    assert reply.body["jobId"] == JOB
    assert reply.body["pipeline"] == "document-intake"
    assert reply.body["status"] == "running"
    assert reply.body["nextPhase"] == "fetch"
    assert "state" not in reply.body
    started = api.stored()
    assert started.status == JobStatus.RUNNING
    assert started.input["document"] == "invoice.txt"
    assert [invocation.function for invocation in api.stack.invoker.queue] == ["cairn-document-intake-fetch"]

    api.run()

    shown = api.call("get-job")
    assert shown.status == 200
    assert shown.body["status"] == "complete"
    assert shown.body["nextPhase"] is None
    assert shown.body["result"]["document"]["kind"] == "invoice"
    assert shown.body["result"]["document"]["source"] == "invoice.txt"
    assert [phase["phase"] for phase in shown.body["phases"]] == PHASES
    assert shown.body["usage"]["pages"] >= 1
    finished = api.stored()
    assert finished.status == JobStatus.COMPLETE
    assert finished.result == shown.body["result"]
    assert shown.body["createdAt"] == finished.created_at
    assert shown.body["updatedAt"] == finished.updated_at
    assert shown.body["expiresAt"] == finished.expires_at


@pytest.mark.parametrize("run_first", [False, True], ids=["while-running", "after-completion"])
def test_create_with_an_existing_id_is_409_with_that_job_and_changes_nothing(api: Api, run_first: bool) -> None:
    api.call("create-job")
    if run_first:
        api.run()
    before = api.stored()
    queued = api.stack.invoker.pending()

    reply = api.call("create-job-existing")

    assert reply.status == 409
    assert reply.code == "job_exists"
    assert JOB in reply.message
    assert reply.body["job"]["jobId"] == JOB
    assert reply.body["job"]["status"] == before.status.value
    assert reply.body["job"]["updatedAt"] == before.updated_at
    assert api.stored() == before  # same version, checkpoint, input ("invoice.txt", not "report.txt") and log
    assert api.stack.invoker.pending() == queued


def test_a_jwt_caller_owns_the_job_by_its_subject_and_gets_a_generated_id(api: Api) -> None:
    reply = api.call("create-job-jwt")

    assert reply.status == 202
    job_id = reply.body["jobId"]
    assert uuid.UUID(job_id).version == 4
    assert api.stored(job_id, owner=CAROL).status == JobStatus.RUNNING
    assert api.job(job_id, owner=ALICE) is None
    api.run()
    assert api.stored(job_id, owner=CAROL).result["document"]["kind"] == "contract"


def test_the_checkpoint_state_is_shown_only_when_asked_for(api: Api) -> None:
    api.call("create-job")
    api.run_phases(1)  # fetch ran: the checkpoint names split and holds the document's text
    checkpoint = api.stored().checkpoint
    assert checkpoint is not None

    plain = api.call("get-job")
    with_state = api.call("get-job-with-state")

    assert plain.status == with_state.status == 200
    assert "state" not in plain.body
    assert with_state.body["nextPhase"] == "split"
    assert with_state.body["state"] == checkpoint.state
    assert with_state.body["state"]["source"] == "invoice.txt"
    assert {key: value for key, value in with_state.body.items() if key != "state"} == plain.body


def test_the_log_route_returns_every_entry_with_its_fields(api: Api) -> None:
    api.call("create-job")
    api.run()

    reply = api.call("get-job-log")

    assert reply.status == 200
    assert reply.body["jobId"] == JOB
    entries = reply.body["entries"]
    assert entries == [entry.to_wire() for entry in api.stored().log]
    assert {"message", "level", "phase", "timestamp", "kind", "reason"} <= set(entries[0])
    assert entries[0]["message"] == f'Job started at phase "fetch" by {ALICE}'  # who started it
    assert {"observation", "decision"} <= {entry["kind"] for entry in entries}
    assert any(entry["reason"] for entry in entries if entry["kind"] == "decision")


def test_the_log_pages_oldest_first_with_a_cursor_bound_to_the_job_and_its_run(api: Api) -> None:
    api.call("create-job")
    api.run()
    whole = api.call("get-job-log").body
    assert whole["cursor"] is None
    assert len(whole["entries"]) >= 5

    pages: list[list[Any]] = []
    query: dict[str, str] = {"limit": "2"}
    while True:
        reply = api.call("get-job-log", query=query)
        assert reply.status == 200, reply.body
        pages.append(reply.body["entries"])
        if reply.body["cursor"] is None:
            break
        query = {"limit": "2", "cursor": reply.body["cursor"]}
    assert [entry for page in pages for entry in page] == whole["entries"]
    assert all(len(page) == 2 for page in pages[:-1])

    cursor = api.call("get-job-log", query={"limit": "2"}).body["cursor"]
    api.create("another-job")
    other = api.call("get-job-log", job_id="another-job", query={"cursor": cursor})
    assert other.status == 400
    assert "Invalid cursor" in other.body["error"]["message"]
    restarted = api.call("retry-job-full")
    assert restarted.status == 202, restarted.body
    stale = api.call("get-job-log", query={"cursor": cursor})
    assert stale.status == 400
    assert "started over" in stale.body["error"]["message"]
    for bad in ("!!", "e30", "x" * 3000):
        assert api.call("get-job-log", query={"cursor": bad}).status == 400
    assert api.call("get-job-log", query={"limit": "0"}).status == 400


def test_listing_pages_through_the_callers_jobs_newest_first_with_a_cursor(api: Api, stack_clock: FakeClock) -> None:
    ids = [f"batch-{number}" for number in range(5)]
    for job_id in ids:
        api.create(job_id)
        stack_clock.advance(1)
    api.create("bobs-job", caller=BOB)

    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        query = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        reply = api.call("list-jobs", query=query)
        assert reply.status == 200
        assert len(reply.body["jobs"]) <= 2
        seen += [summary["jobId"] for summary in reply.body["jobs"]]
        pages += 1
        cursor = reply.body["cursor"]
        if cursor is None:
            break

    assert seen == list(reversed(ids))
    assert pages >= 3
    first = api.call("list-jobs").body["jobs"][0]
    assert first == {  # what changes with the status only: a listing leaves out the phase and the attempt
        "jobId": "batch-4",
        "pipeline": "document-intake",
        "status": "running",
        "attempt": None,
        "error": None,
        "nextPhase": None,
        "createdAt": api.stored("batch-4").created_at,
        "updatedAt": api.stored("batch-4").created_at,  # its status was last set when it started
        "expiresAt": api.stored("batch-4").expires_at,
        "corrupt": False,
        "stalled": False,  # a running job is marked: no worker has left it
    }


def test_listing_by_status_shows_only_jobs_with_that_status(api: Api) -> None:
    api.create("done-1")
    api.run()
    api.create("running-1")

    complete = api.call("list-jobs-by-status")
    running = api.call("list-jobs-by-status", query={"status": "running"})

    assert complete.status == running.status == 200
    assert [summary["jobId"] for summary in complete.body["jobs"]] == ["done-1"]
    assert [summary["jobId"] for summary in running.body["jobs"]] == ["running-1"]


def test_another_caller_can_neither_see_nor_change_the_job(api: Api) -> None:
    api.call("create-job")
    api.run_phases(1)
    before = api.stored()

    for name in ("get-job", "get-job-with-state", "get-job-log", "pause-job", "cancel-job", "retry-job-full"):
        reply = api.call(name, caller=BOB)
        assert (name, reply.status, reply.code) == (name, 404, "not_found")
        assert JOB in reply.message
    assert api.call("list-jobs", caller=BOB).body == {"jobs": [], "cursor": None}

    assert api.stored() == before
    assert api.job(owner=BOB) is None
    assert api.call("create-job", caller=BOB).status == 202  # the same id is free in bob's namespace
    assert api.stored(owner=BOB).status == JobStatus.RUNNING
    assert api.stored() == before


def test_a_header_naming_another_owner_is_ignored(api: Api) -> None:
    api.call("create-job")
    event = as_caller(load_event("api/get-job"), BOB)
    event["headers"]["x-cairn-owner"] = ALICE

    reply = api.send(event)

    assert reply.status == 404


def test_pause_stops_at_the_next_boundary_and_a_resume_finishes_the_job(api: Api) -> None:
    api.call("create-job")
    api.run_phases(1)

    paused = api.call("pause-job")
    assert paused.status == 200
    assert paused.body["status"] == "paused"
    assert paused.body["nextPhase"] == "split"
    assert [phase["phase"] for phase in paused.body["phases"]] == ["fetch"]
    api.run()  # the queued split invoke finds the job paused and does nothing
    assert api.stored().status == JobStatus.PAUSED
    assert phase_names(api.stored()) == ["fetch"]
    assert api.call("pause-job").status == 200  # pausing a paused job is a no-op

    resumed = api.call("retry-job-resume")
    assert resumed.status == 202
    assert resumed.body["status"] == "running"
    assert resumed.body["nextPhase"] == "split"
    api.run()

    finished = api.stored()
    assert finished.status == JobStatus.COMPLETE
    assert phase_names(finished) == PHASES  # fetch ran once
    assert finished.result["document"]["source"] == "invoice.txt"


def test_cancel_keeps_the_checkpoint_and_a_resume_finishes_the_job(api: Api) -> None:
    api.call("create-job")
    api.run_phases(2)

    cancelled = api.call("cancel-job")
    assert cancelled.status == 200
    assert cancelled.body["status"] == "cancelled"
    assert cancelled.body["nextPhase"] == "extract"
    api.run()
    assert api.stored().status == JobStatus.CANCELLED
    again = api.call("cancel-job")  # cancelling a cancelled job changes nothing: the API says so
    assert again.status == 409
    assert again.body["error"]["code"] == "already_cancelled"

    resumed = api.call("retry-job-resume")
    assert resumed.status == 202
    assert resumed.body["nextPhase"] == "extract"
    api.run()

    finished = api.stored()
    assert finished.status == JobStatus.COMPLETE
    assert phase_names(finished) == PHASES


def test_a_full_retry_restarts_from_the_stored_input_and_clears_the_old_log(api: Api) -> None:
    api.call("create-job")
    api.run()
    first = api.stored()

    reply = api.call("retry-job-full")

    assert reply.status == 202
    assert reply.body["status"] == "running"
    assert reply.body["nextPhase"] == "fetch"
    assert reply.body["phases"] == []
    restarted = api.stored()
    assert restarted.input == first.input
    assert [entry.message for entry in restarted.log] == [f'Job started over at phase "fetch" by {ALICE}']
    api.run()
    finished = api.stored()
    assert finished.status == JobStatus.COMPLETE
    assert finished.result == first.result
    assert phase_names(finished) == PHASES
    log = api.call("get-job-log").body["entries"]
    assert log[0]["message"] == f'Job started over at phase "fetch" by {ALICE}'
    assert not any("(resume)" in entry["message"] for entry in log)
    assert len(log) == len(first.log)


def test_a_full_retry_with_a_new_state_starts_from_it(api: Api) -> None:
    api.call("create-job")
    api.run()

    reply = api.call("retry-job-full", body={"mode": "full", "state": {"document": "report.txt"}})

    assert reply.status == 202
    api.run()
    finished = api.stored()
    assert finished.result["document"]["source"] == "report.txt"
    assert finished.input["document"] == "report.txt"


def test_a_resume_with_a_state_it_would_ignore_is_409_and_changes_nothing(api: Api) -> None:
    """A resume from a checkpoint cannot take a new state: the body fits the document, the job refuses it (409)."""
    api.call("create-job")
    api.run_phases(1)
    assert api.call("pause-job").status == 200
    before, items, queued = api.stored(), api.item_count(), api.stack.invoker.pending()

    reply = api.call("retry-job-resume", body={"mode": "resume", "state": {"document": "report.txt"}})

    assert (reply.status, reply.code) == (409, "conflict")
    assert '"split"' in reply.message
    assert 'mode="full"' in reply.message
    assert api.stored() == before
    assert api.item_count() == items
    assert api.stack.invoker.pending() == queued  # only the split invoke queued before the pause


def _table_items(api: Api) -> list[dict[str, Any]]:
    """Every item of the table, exactly as DynamoDB holds it."""
    table, client = api.stack.runtime.settings.table_name, api.stack.runtime.dynamodb
    assert table is not None
    assert client is not None
    items = client.scan(TableName=table, ConsistentRead=True)["Items"]
    return sorted(items, key=lambda item: repr(sorted(item.items())))


@pytest.mark.parametrize("body", [None, {"mode": "resume"}, {"mode": "resume", "state": {"document": "report.txt"}}])
def test_a_resume_of_a_complete_job_is_409_and_changes_nothing(api: Api, body: Any) -> None:
    """A retry of a finished job would rerun every side effect: refused; Start over (full) runs it again."""
    api.call("create-job")
    api.run()
    before, queued = _table_items(api), api.stack.invoker.pending()

    reply = api.call("retry-job-resume", body=body)

    assert (reply.status, reply.code) == (409, "conflict")
    assert reply.message == f'Job "{JOB}" is already complete; Start over (mode full) runs it again'
    assert _table_items(api) == before
    assert api.stack.invoker.pending() == queued
    assert api.call("retry-job-full").status == 202  # starting over is how a complete job runs again


def test_a_retry_without_a_body_resumes(api: Api) -> None:
    api.call("create-job")
    api.run_phases(1)
    assert api.call("pause-job").status == 200
    event = load_event("api/retry-job-resume")
    del event["body"]
    del event["headers"]["content-type"], event["headers"]["content-length"]

    reply = api.send(event)

    assert reply.status == 202
    assert reply.body["nextPhase"] == "split"
    api.run()
    assert phase_names(api.stored()) == PHASES


@pytest.mark.parametrize("name", ["pause-job", "cancel-job"])
def test_pausing_or_cancelling_a_complete_job_is_409_and_changes_nothing(api: Api, name: str) -> None:
    api.call("create-job")
    api.run()
    before = api.stored()

    reply = api.call(name)

    assert reply.status == 409
    assert reply.code == "conflict"
    assert "complete" in reply.message
    assert api.stored() == before


@pytest.mark.parametrize(
    "name", ["get-job", "get-job-with-state", "get-job-log", "pause-job", "cancel-job", "retry-job-resume"]
)
def test_an_absent_job_is_404(api: Api, name: str) -> None:
    items = api.item_count()

    reply = api.call(name)

    assert reply.status == 404
    assert reply.code == "not_found"
    assert reply.message == f'Job "{JOB}" was not found (it never existed or has expired)'
    assert api.item_count() == items
    assert api.stack.invoker.pending() == 0


def test_an_expired_job_is_404(api: Api, stack_clock: FakeClock) -> None:
    api.call("create-job")
    api.run()
    stack_clock.advance(25 * 3600)

    assert api.call("get-job").status == 404
    assert api.call("retry-job-resume").status == 404
