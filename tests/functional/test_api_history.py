"""``GET /jobs/{jobId}/history`` and the paged log through the API on the local stack.

The job view holds the newest writes' phase records and a ``historyCursor``; the history pages go on
from it, newest first, every write that landed once and none that did not. A cursor of another job,
altered, garbage, too long, or from before a full retry is a 400 that says so.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

from cairn.client.render import job_details
from cairn.core.errors import ClaimLostError
from cairn.core.models import FanOut, LogEntry, MapRecord
from cairn.core.transitions import Journal
from cairn.testing.contract.base import claim_request, commit_request, fence_of, start_request, started
from cairn.testing.contract.history import run_phase
from tests.functional.api_client import ALICE, JOB, Api
from tests.support import FakeClock

LONG = "long-job"
INTAKE = "document-intake"
RUNS = 25


def long_job(api: Api, clock: FakeClock) -> None:
    """A job of ``RUNS`` phase runs (each logging ``run <n>``) with a commit that never landed in between."""
    storage = api.stack.runtime.storage(ALICE)
    job = started(storage, clock, job_id=LONG, state={"note": "start"})
    for number in range(RUNS):
        if number == 10:  # a worker whose claim is taken over: its commit's history item is left unlinked
            clock.advance(1)
            claimed = storage.claim(claim_request(clock, job))
            assert claimed is not None
            job = storage.start_job(start_request(clock, job_id=LONG, seen=claimed, state={"note": "over"}))
            lost = commit_request(clock, claimed, "next", next_phase="first", state={"note": "lost"})
            entry = LogEntry(message="never landed", timestamp=clock(), phase="first")
            try:
                storage.commit(LONG, fence_of(claimed), replace(lost, journal=Journal(log=(entry,))))
            except ClaimLostError:
                pass
            else:
                raise AssertionError("the fenced commit landed")
        job = run_phase(storage, clock, job, f"run {number}", job_id=LONG)


def history_pages(api: Api, job_id: str, cursor: str | None, limit: int) -> list[list[dict[str, Any]]]:
    """Every page of the job's history from ``cursor`` (the newest without one), each newest first."""
    pages = []
    while True:
        query = {"limit": str(limit), **({"cursor": cursor} if cursor else {})}
        reply = api.call("get-job-history", job_id=job_id, query=query)
        assert reply.status == 200, reply.body
        assert reply.body["jobId"] == job_id
        pages.append(reply.body["writes"])
        cursor = reply.body["cursor"]
        if cursor is None:
            return pages
        assert len(pages) < 100


def flattened(pages: list[list[dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    """The log and the records of pages of writes (each newest first), oldest first."""
    writes = [write for page in pages for write in page][::-1]
    return [entry for write in writes for entry in write["log"]], [
        write["record"] for write in writes if write["record"]
    ]


def test_the_history_pages_newest_first_every_write_once_and_none_that_never_landed(
    api: Api, stack_clock: FakeClock
) -> None:
    long_job(api, stack_clock)
    stored = api.stored(LONG)
    whole = ([entry.to_wire() for entry in stored.log], [record.to_wire() for record in stored.phases])
    messages = [entry["message"] for entry in whole[0]]
    assert messages == [f"run {number}" for number in range(RUNS)]  # each once; "never landed" not at all

    pages = history_pages(api, LONG, None, 4)

    assert all(len(page) == 4 for page in pages[:-1])
    assert flattened(pages) == whole
    assert pages[0][0]["log"][0]["message"] == f"run {RUNS - 1}"  # the newest first

    view = api.call("get-job", job_id=LONG).body
    assert [record["phase"] for record in view["phases"]] == ["first"] * len(view["phases"])
    assert view["historyCursor"] is not None
    older = flattened(history_pages(api, LONG, view["historyCursor"], 7))
    assert older[1] + view["phases"] == whole[1]  # the view's records, then the older pages': every one once

    log: list[Any] = []
    cursor = None
    while True:  # the log, paged oldest first
        reply = api.call("get-job-log", job_id=LONG, query={"limit": "3", **({"cursor": cursor} if cursor else {})})
        assert reply.status == 200, reply.body
        log += reply.body["entries"]
        cursor = reply.body["cursor"]
        if cursor is None:
            break
    assert log == whole[0]


def _altered(cursor: str) -> str:
    values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    values["t"] = "f" * 16  # a write token this job never wrote
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode().rstrip("=")


def test_a_history_cursor_of_another_job_altered_or_from_before_a_full_retry_is_a_400(
    api: Api, stack_clock: FakeClock
) -> None:
    api.create()
    api.run()
    long_job(api, stack_clock)
    first = api.call("get-job-history", query={"limit": "1"})
    assert first.status == 200, first.body
    cursor = first.body["cursor"]
    assert cursor is not None

    def refused(job_id: str, given: str) -> str:
        reply = api.call("get-job-history", job_id=job_id, query={"limit": "1", "cursor": given})
        assert (reply.status, reply.code) == (400, "invalid_request"), (given[:40], reply.body)
        return reply.message

    assert "Invalid cursor: it was not returned by this job's history" in refused(LONG, cursor)  # another job's
    assert "Invalid cursor" in refused(JOB, _altered(cursor))
    assert "Invalid cursor" in refused(JOB, "e30")  # {}
    assert "cursor" in refused(JOB, "not a cursor!")  # outside the declared alphabet
    assert "cursor" in refused(JOB, "x" * 10_000)  # longer than declared
    assert api.call("get-job-history", query={"limit": "0"}).status == 400
    assert api.call("get-job-history", query={"limit": "101"}).status == 400

    assert api.call("retry-job-full").status == 202  # a new run, with a new history

    assert "the job was started over since; read its history from the start" in refused(JOB, cursor)
    assert api.call("get-job-history", job_id="nobody", query={"limit": "1"}).status == 404


def _intake_job(api: Api, clock: FakeClock, job_id: str, phases: list[str]) -> None:
    """A document-intake job that ran ``phases`` in order (each a claim and a commit), then began a map of
    ``extract_page`` (its record only): the phase a map's items run, which the job may also have run itself."""
    storage = api.stack.runtime.storage(ALICE)
    start = replace(start_request(clock, job_id=job_id, phase=phases[0], state={"document": "x"}), pipeline=INTAKE)
    job = storage.start_job(start)
    for following in [*phases[1:], "publish"]:  # each phase's commit enters the next
        clock.advance(1)
        claimed = storage.claim(replace(claim_request(clock, job), pipeline=INTAKE))
        assert claimed is not None
        job = storage.commit(job_id, fence_of(claimed), commit_request(clock, claimed, "next", next_phase=following))
    fan_out = FanOut(id="pages", phase="extract_page", count=1, max_concurrency=1)
    record = MapRecord(fan_out=fan_out, started_by="split", then="publish", created_at=clock(), sequence=job.sequence)
    storage.create_map(job_id, record, expires_at=job.expires_at)


def test_the_phases_a_rerun_may_start_from_are_right_however_old_the_run_that_decides_them(
    api: Api, stack_clock: FakeClock
) -> None:
    later = ["fetch", "split", *["publish"] * 12]  # more than the view's ten writes after the early runs
    _intake_job(api, stack_clock, "ran-it-early", ["extract_page", *later])
    _intake_job(api, stack_clock, "never-ran-it", later)

    early = api.call("get-job", job_id="ran-it-early").body
    never = api.call("get-job", job_id="never-ran-it").body

    assert early["historyCursor"] is not None
    assert "extract_page" not in [record["phase"] for record in early["phases"]]  # older than the view's records
    assert "extract_page" in early["rerunPhases"]  # it ran as a phase of its own: a rerun from it is allowed
    assert "extract_page" not in never["rerunPhases"]  # only ever a map's items
    assert set(early["rerunPhases"]) - set(never["rerunPhases"]) == {"extract_page"}


def test_cairn_jobs_show_says_when_the_view_holds_only_the_newest_phase_runs(api: Api, stack_clock: FakeClock) -> None:
    long_job(api, stack_clock)
    view = api.call("get-job", job_id=LONG).body
    short = {**view, "historyCursor": None}

    shown, whole = job_details(view, stack_clock()), job_details(short, stack_clock())

    assert "Phases (the newest runs):" in shown
    assert f"Older runs: GET /jobs/{LONG}/history?cursor=<historyCursor>" in shown
    assert "Phases:" in whole
    assert "Older runs" not in whole
