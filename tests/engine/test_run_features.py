"""The plug-in point for run-level features: a feature written outside the engine changes what every run does.

The shipped features (the fair share, metering, the guard, the budget, lessons) plug in through
:mod:`cairn.core.run_features`; so does one written here, with no engine file changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from cairn import Cairn, Done, JobStatus, MemoryStorage, Next, PhaseContext, Pipeline
from cairn.core import run_features
from cairn.core.errors import StateTooLargeError
from cairn.core.models import Checkpoint, Job
from cairn.core.run_features import CommitFacts, Run, RunHooks, register_run_feature
from cairn.core.scheduler_port import Scheduler
from cairn.core.transitions import Commit, Fence
from cairn.features import DEFAULT_FEATURES
from tests.support import FakeClock


def two_phases(name: str = "quota", ran: list[str] | None = None) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline(name)

    @pipeline.phase
    def first(ctx: PhaseContext[Any]) -> Next:
        ctx.save_state({"step": 1})
        return Next("second", {"step": 2})

    @pipeline.phase
    def second(ctx: PhaseContext[Any]) -> Done:
        if ran is not None:
            ran.append(ctx.phase)
        return Done({"ok": True})

    return pipeline


@dataclass
class Trace:
    """What the hooks saw, in order."""

    calls: list[str] = field(default_factory=list)


@dataclass
class TracingHooks(RunHooks):
    trace: Trace
    stop_before: str | None = None

    def admit(self, run: Run, scheduler: Scheduler) -> Job | None:
        self.trace.calls.append(f"admit {run.phase_name}")
        return None

    def before_phase(self, run: Run, scheduler: Scheduler) -> Job | None:
        self.trace.calls.append(f"before_phase {run.phase_name}")
        if run.phase_name == self.stop_before:
            run.entry("quota reached", level="error", kind="error")
            return run.commit("error", error="quota reached")
        return None

    def before_write(self, run: Run) -> None:
        self.trace.calls.append(f"before_write {run.phase_name}")

    def save_usage(self, run: Run, checkpoint: Checkpoint) -> Mapping[str, float]:
        self.trace.calls.append(f"save_usage {checkpoint.next_phase}")
        return {"quota_saves": 1}

    def commit_usage(self, run: Run, commit: CommitFacts) -> Mapping[str, float]:
        self.trace.calls.append(f"commit_usage {commit.kind}")
        return {"quota_commits": 1}

    def keeps_on_record(self, meter: str) -> bool:
        return meter == "quota_commits"

    def close(self, run: Run) -> None:
        self.trace.calls.append(f"close {run.phase_name}")


@dataclass
class Quota:
    """A feature of the test's own: traces every hook, and may stop a job before one phase."""

    trace: Trace
    stop_before: str | None = None
    name: str = "quota"

    def open(self, pipeline: Pipeline[Any]) -> RunHooks:
        self.trace.calls.append(f"open {pipeline.name}")
        return TracingHooks(self.trace, self.stop_before)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry as shipped, restored after the test (a test's feature never leaks into another)."""
    monkeypatch.setattr(run_features, "_FEATURES", dict(run_features._FEATURES))


def test_the_shipped_features_are_registered_in_the_order_they_run() -> None:
    assert [feature.name for feature in run_features.run_features()[: len(DEFAULT_FEATURES) + 1]] == [
        "maps",
        "owner-share",
        "metering",
        "transition-guard",
        "budget",
        "lessons",
    ]


@pytest.mark.usefixtures("registered")
def test_a_registered_feature_sees_every_point_of_each_run_in_order() -> None:
    trace = Trace()
    register_run_feature(Quota(trace))
    app = Cairn(two_phases(), storage=MemoryStorage(clock=FakeClock()))
    job = app.start(app.pipelines.names[0], "job-1", state={"step": 0})
    app.run_until_idle()

    assert app.get(job.job_id).status == JobStatus.COMPLETE
    assert trace.calls == [
        "open quota",
        "admit first",
        "before_phase first",
        "before_write first",
        "save_usage first",
        "before_write first",
        "commit_usage next",
        "close first",
        "open quota",
        "admit second",
        "before_phase second",
        "before_write second",
        "commit_usage done",
        "close second",
    ]
    done = app.get(job.job_id)
    assert done.usage["quota_saves"] == 1
    assert done.usage["quota_commits"] == 2
    records = app.storage.get_job_view(job.job_id, history=10)
    assert records is not None
    assert [record.usage.get("quota_commits") for record in records.job.phases] == [1, 1]
    assert all("quota_saves" not in record.usage for record in records.job.phases)  # not kept on the record


@pytest.mark.usefixtures("registered")
def test_a_feature_that_stops_a_job_before_its_phase_ends_the_run_there() -> None:
    ran: list[str] = []
    pipeline = two_phases("stopping", ran)
    app = Cairn(pipeline, storage=MemoryStorage(clock=FakeClock()))
    register_run_feature(Quota(Trace(), stop_before="second"))  # after the Cairn was made: its next run has it
    app.start(app.pipelines.names[0], "job-1", state={"step": 0})
    app.run_until_idle()

    job = app.get("job-1")
    assert job.status == JobStatus.ERROR
    assert job.error == "quota reached"
    assert ran == []
    assert job.checkpoint is not None
    assert job.checkpoint.next_phase == "second"  # a retry resumes there


def test_the_engine_runs_alone_with_no_feature_and_meters_nothing() -> None:
    storage = MemoryStorage(clock=FakeClock())
    pipeline = two_phases("alone")
    app = Cairn(pipeline, storage=storage)
    app.features = ()
    app.start(app.pipelines.names[0], "job-1", state={"step": 0})
    app.run_until_idle()

    job = app.get("job-1")
    assert job.status == JobStatus.COMPLETE
    assert job.usage == {}
    with_features = Cairn(two_phases("metered"), storage=MemoryStorage(clock=FakeClock()))
    with_features.start("metered", "job-1", state={"step": 0})
    with_features.run_until_idle()
    assert with_features.get("job-1").usage["transitions"] == 2
    assert with_features.get("job-1").usage["lambda_requests"] == 2


class RefusesTheFirstNext(MemoryStorage):
    """A store whose first ``next`` commit is refused as too large (as DynamoDB refuses an item over 400 KB)."""

    refused = False

    def commit(self, job_id: str, fence: Fence, request: Commit) -> Job:
        if request.kind == "next" and not self.refused:
            self.refused = True
            raise StateTooLargeError(500_000, 400_000)
        return super().commit(job_id, fence, request)


def test_a_commit_the_store_refuses_adds_nothing_to_the_commit_that_follows() -> None:
    storage = RefusesTheFirstNext(clock=FakeClock())
    app = Cairn(two_phases("refused"), storage=storage)
    app.start("refused", "job-1", state={"step": 0})
    app.run_until_idle()

    job = app.get("job-1")
    assert storage.refused
    assert job.status == JobStatus.ERROR
    assert "cannot be stored" in (job.error or "")
    assert job.usage["lambda_requests"] == 1  # the one run, metered once: with the error that ended it
    assert "transitions" not in job.usage  # the refused next left no phase
