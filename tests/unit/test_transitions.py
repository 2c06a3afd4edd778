"""The pure transition rules, row by row: stored job + request -> what is written, or why not."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from cairn.core import transitions
from cairn.core.errors import (
    ClaimLostError,
    InvalidInputError,
    JobNotFoundError,
    TransitionRefusedError,
    VersionConflict,
)
from cairn.core.models import Checkpoint, HistoryItem, Job, JobStatus, LogEntry, PhaseRecord
from cairn.core.transitions import Claim, Commit, CrashReport, Fence, Journal, Save, StartJob, Written

NOW = 1_800_000_000_000
EXPIRES = NOW // 1000 + 3600
FENCE = Fence("worker-1", 4)


def job(**changes: Any) -> Job:
    """A running job at sequence 5, claimed at 4 by worker-1, its checkpoint at phase "work"."""
    values: dict[str, Any] = {
        "job_id": "job-1",
        "pipeline": "p",
        "status": JobStatus.RUNNING,
        "checkpoint": Checkpoint(next_phase="work", state={"n": 1}, created_at=NOW - 1000),
        "created_at": NOW - 5000,
        "updated_at": NOW - 1000,
        "expires_at": EXPIRES,
        "sequence": 5,
        "lease_owner": "worker-1",
        "lease_expires_at": NOW + 60_000,
        "claim_sequence": 4,
        "write_token": "t-previous",
        "history_head": "h-1",
        "usage": {"items": 1},
    }
    return Job(**{**values, **changes})


UNCLAIMED = {"lease_owner": None, "lease_expires_at": None, "claim_sequence": None}
RECORD = PhaseRecord(phase="work", attempt=1, started_at=NOW - 500, ended_at=NOW, outcome="next", next_phase="done")
NEXT = Checkpoint(next_phase="done", state={"n": 2}, created_at=NOW)


def claim(stored: Job | None, **request: Any) -> Written | None:
    values: dict[str, Any] = {
        "job_id": "job-1",
        "pipeline": "p",
        "phase": "work",
        "worker": "worker-2",
        "now_ms": NOW,
        "lease_expires_at": NOW + 60_000,
        "expires_at": EXPIRES,
        "token": "t-claim",
    }
    return transitions.claim(stored, Claim(**{**values, **request}))


def commit(stored: Job | None, kind: Any, **request: Any) -> Written:
    values: dict[str, Any] = {
        "seen": job(),
        "kind": kind,
        "now_ms": NOW,
        "expires_at": EXPIRES,
        "record": RECORD,
        "token": "t-commit",
    }
    return transitions.commit(stored, "job-1", FENCE, Commit(**{**values, **request}))


def start(stored: Job | None, seen: Job | None, **request: Any) -> Written:
    values: dict[str, Any] = {
        "job_id": "job-1",
        "pipeline": "p",
        "checkpoint": Checkpoint(next_phase="work", state={"n": 0}, created_at=NOW),
        "now_ms": NOW,
        "expires_at": EXPIRES,
        "seen": seen,
        "ttl_seconds": 3600,
        "input": {"n": 0},
        "token": "t-start",
    }
    return transitions.start(stored, StartJob(**{**values, **request}))


@dataclass(frozen=True)
class Row:
    """One rule: what happens to ``stored`` under ``act``; ``expect`` checks the result (or names the error)."""

    name: str
    act: Callable[[], Any]
    expect: Callable[[Any], bool] | type[Exception]


ROWS = [
    # start
    Row("start creates a job at sequence 1", lambda: start(None, None), lambda w: w.job.sequence == 1),
    Row(
        "start over an expired job carries its sequence on",
        lambda: start(job(expires_at=NOW // 1000 - 1, sequence=9), None),
        lambda w: w.job.sequence == 10 and w.job.run == 2,
    ),
    Row(
        "start takes over: new sequence, no claim, history linked",
        lambda: start(job(), job()),
        lambda w: w.job.sequence == 6 and w.job.lease_owner is None and w.history.prev == "h-1",
    ),
    Row("start refuses when the job moved since it was read", lambda: start(job(sequence=6), job()), VersionConflict),
    Row("start refuses another pipeline's job", lambda: start(job(), job(), pipeline="q"), InvalidInputError),
    Row(
        "start sent again after a lost response is recognised",
        lambda: start(job(write_token="t-start", sequence=6), job()),
        lambda w: w.landed and w.job.sequence == 6,
    ),
    Row(
        "a full restart starts a new history chain",
        lambda: start(job(), job(), reset_history=True),
        lambda w: w.history.prev is None and w.job.run == 2,
    ),
    # claim
    Row(
        "a claim at the job's sequence takes it",
        lambda: claim(job(**UNCLAIMED), sequence=5),
        lambda w: (w.job.sequence, w.job.claim_sequence, w.job.lease_owner) == (6, 5, "worker-2"),
    ),
    Row("a claim for an old sequence does nothing", lambda: claim(job(**UNCLAIMED), sequence=4), lambda w: w is None),
    Row("a claim for another phase does nothing", lambda: claim(job(**UNCLAIMED), phase="x"), lambda w: w is None),
    Row("a live claim blocks a claim", lambda: claim(job(), sequence=5), lambda w: w is None),
    Row(
        "an expired claim does not block",
        lambda: claim(job(lease_expires_at=NOW - 1), sequence=5),
        lambda w: w.job.lease_owner == "worker-2",
    ),
    Row(
        "a paused job is not claimed",
        lambda: claim(job(status=JobStatus.PAUSED, **UNCLAIMED), sequence=5),
        lambda w: w is None,
    ),
    Row(
        "a claim sent again after a lost response is recognised",
        lambda: claim(job(write_token="t-claim"), sequence=5),
        lambda w: w.landed,
    ),
    Row(
        "a crash report for the live claim's worker takes it over",
        lambda: claim(job(), crash=CrashReport("worker-1", 4), worker="crash:worker-1"),
        lambda w: w.job.lease_owner == "crash:worker-1",
    ),
    Row(
        "a crash report delivered again takes over its own half-done takeover",
        lambda: claim(job(lease_owner="crash:worker-1"), crash=CrashReport("worker-1", 4), worker="crash:worker-1"),
        lambda w: w is not None,
    ),
    Row(
        "a crash report naming another worker is stale",
        lambda: claim(job(), crash=CrashReport("worker-9", 4), worker="crash:worker-9"),
        lambda w: w is None,
    ),
    Row(
        "a crash report about a worker that committed is stale",
        lambda: claim(job(**UNCLAIMED, sequence=7), crash=CrashReport("worker-1", 4), worker="crash:worker-1"),
        lambda w: w is None,
    ),
    Row(
        "a crash report for an invocation that died before claiming is accepted",
        lambda: claim(job(**UNCLAIMED), crash=CrashReport("worker-3", 5), worker="crash:worker-3"),
        lambda w: w is not None,
    ),
    Row(
        "without a request id a crash report names the claim by its sequence",
        lambda: claim(job(), crash=CrashReport(None, 4), worker="crash:seq-4"),
        lambda w: w is not None,
    ),
    # save
    Row(
        "a save by the claim holder writes the checkpoint and advances the sequence",
        lambda: transitions.save(job(), "job-1", FENCE, Save(job(), NEXT, NOW, NOW + 1, EXPIRES, token="t-save")),
        lambda w: w.job.checkpoint == NEXT and w.job.sequence == 6 and w.history is None,
    ),
    Row(
        "a save after a pause still lands: the claim is the same",
        lambda: transitions.save(
            job(status=JobStatus.PAUSED, sequence=6), "job-1", FENCE, Save(job(), NEXT, NOW, 1, 1)
        ),
        lambda w: w.job.status == JobStatus.PAUSED,
    ),
    Row(
        "a save by a worker whose claim was taken over is refused",
        lambda: transitions.save(job(lease_owner="worker-2"), "job-1", FENCE, Save(job(), NEXT, NOW, 1, 1)),
        ClaimLostError,
    ),
    Row(
        "a save sent again after a lost response is recognised",
        lambda: transitions.save(
            job(write_token="t-save", checkpoint=NEXT), "job-1", FENCE, Save(job(), NEXT, NOW, 1, 1, token="t-save")
        ),
        lambda w: w.landed,
    ),
    # commit
    Row(
        "commit next writes the new checkpoint and releases the claim",
        lambda: commit(job(), "next", checkpoint=NEXT),
        lambda w: w.job.checkpoint == NEXT and w.job.lease_owner is None and w.history.record == RECORD,
    ),
    Row(
        "commit done clears the checkpoint and keeps the result",
        lambda: commit(job(), "done", result={"ok": 1}),
        lambda w: w.job.checkpoint is None and w.job.status == JobStatus.COMPLETE and w.job.result == {"ok": 1},
    ),
    Row(
        "commit retry keeps the stored checkpoint, whatever the worker saw",
        lambda: commit(job(checkpoint=NEXT), "retry", seen=job(), not_before=NOW + 5000),
        lambda w: w.job.checkpoint == NEXT and w.job.attempt == 2 and w.job.not_before == NOW + 5000,
    ),
    Row(
        "commit error keeps the stored checkpoint, whatever the worker saw",
        lambda: commit(job(checkpoint=NEXT), "error", seen=job(), error="boom"),
        lambda w: w.job.checkpoint == NEXT and w.job.status == JobStatus.ERROR and w.job.error == "boom",
    ),
    Row(
        "usage is added to what is stored",
        lambda: commit(job(), "next", checkpoint=NEXT, journal=Journal(usage={"items": 2})),
        lambda w: w.job.usage == {"items": 3},
    ),
    Row(
        "a commit without the claim is refused",
        lambda: commit(job(**UNCLAIMED), "next", checkpoint=NEXT),
        ClaimLostError,
    ),
    Row("a commit on a gone job is refused", lambda: commit(None, "next", checkpoint=NEXT), ClaimLostError),
    # pause and cancel
    Row(
        "pause advances the sequence and keeps the claim",
        lambda: transitions.pause(job(), "job-1", NOW, "t-pause"),
        lambda w: w.job.status == JobStatus.PAUSED and w.job.sequence == 6 and w.job.lease_owner == "worker-1",
    ),
    Row(
        "pausing a paused job changes nothing",
        lambda: transitions.pause(job(status=JobStatus.PAUSED), "job-1", NOW, "t"),
        lambda w: w.landed,
    ),
    Row(
        "a finished job cannot be paused",
        lambda: transitions.pause(job(status=JobStatus.COMPLETE), "job-1", NOW, "t"),
        TransitionRefusedError,
    ),
    Row(
        "cancel fences the worker and keeps the checkpoint",
        lambda: transitions.cancel(job(), "job-1", NOW, "t"),
        lambda w: w.job.lease_owner is None and w.job.checkpoint is not None and w.job.sequence == 6,
    ),
    Row(
        "a complete job cannot be cancelled",
        lambda: transitions.cancel(job(status=JobStatus.COMPLETE), "job-1", NOW, "t"),
        TransitionRefusedError,
    ),
    Row("pausing a gone job", lambda: transitions.pause(None, "job-1", NOW, "t"), JobNotFoundError),
]


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_each_rule(row: Row) -> None:
    if isinstance(row.expect, type):
        with pytest.raises(row.expect):
            row.act()
        return
    outcome = row.act()
    assert row.expect(outcome), outcome


def entry(text: str) -> LogEntry:
    return LogEntry(message=text, timestamp=NOW)


def test_the_history_is_the_chain_from_the_head_and_nothing_else() -> None:
    items = {
        "a": HistoryItem(token="a", prev=None, log=[entry("started")]),
        "b": HistoryItem(token="b", prev="a", log=[entry("page 1")], record=RECORD),
        "orphan": HistoryItem(token="orphan", prev="b", log=[entry("a refused commit")], record=RECORD),
        "c": HistoryItem(token="c", prev="b", log=[entry("page 2")]),
    }
    log, records = transitions.linked_history(items, "c")
    assert [line.message for line in log] == ["started", "page 1", "page 2"]
    assert records == [RECORD]
    assert transitions.linked_history(items, None) == ([], [])
    looped = {"x": HistoryItem(token="x", prev="y"), "y": HistoryItem(token="y", prev="x", log=[entry("y")])}
    assert [line.message for line in transitions.linked_history(looped, "x")[0]] == ["y"]
