"""The storage port's one required interface is a job's life: a store of those nine methods alone passes the core
contract and runs pipelines without maps, waits or lessons; using one of those is a clear ConfigurationError."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from cairn import Cairn, ConfigurationError, Done, InlineScheduler, Map, Next, Pipeline, WaitFor
from cairn.adapters import Checkpoint, Claim, Clock, Commit, Fence, Job, JobStatus, Save, StartJob, Storage
from cairn.storage.delegating import DelegatingStorage
from cairn.storage.memory import MemoryStorage
from cairn.testing.contract import JobContract
from tests.support import FakeClock


class CoreOnlyStorage(Storage):
    """The nine required methods, handed to a memory store; every capability left at the port's default."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        self.inner = MemoryStorage(clock=self.clock)

    def get_job(self, job_id: str) -> Job | None:
        return self.inner.get_job(job_id)

    def list_jobs(self, *, status: JobStatus | None = None) -> list[Job]:
        return self.inner.list_jobs(status=status)

    def start_job(self, request: StartJob) -> Job:
        return self.inner.start_job(request)

    def claim(self, request: Claim) -> Job | None:
        return self.inner.claim(request)

    def save(self, job_id: str, fence: Fence, request: Save) -> Job:
        return self.inner.save(job_id, fence, request)

    def commit(self, job_id: str, fence: Fence, request: Commit) -> Job:
        return self.inner.commit(job_id, fence, request)

    def pause(self, job_id: str, *, by: str | None = None) -> Job:
        return self.inner.pause(job_id, by=by)

    def cancel(self, job_id: str, *, by: str | None = None) -> Job:
        return self.inner.cancel(job_id, by=by)

    def entered(self, job_id: str, phase: str, *, before: int | None = None) -> Checkpoint | None:
        return self.inner.entered(job_id, phase, before=before)


class TestTheCoreContractOnAStoreOfTheRequiredMethodsAlone(JobContract):
    def make_storage(self, clock: Clock) -> Storage:
        return CoreOnlyStorage(clock=clock)


def _app(pipeline: Pipeline[Any]) -> tuple[Cairn, CoreOnlyStorage]:
    clock = FakeClock()
    store = CoreOnlyStorage(clock=clock)
    return Cairn(pipeline, storage=store, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep)), store


def test_a_pipeline_of_plain_phases_runs_to_its_end() -> None:
    pipeline: Pipeline[Any] = Pipeline("plain")

    @pipeline.phase
    def first(ctx: Any) -> Next:
        return Next("second", {"n": 1})

    @pipeline.phase
    def second(ctx: Any) -> Done:
        return Done({"n": ctx.state["n"] + 1})

    app, _ = _app(pipeline)
    app.start("plain", "plain-1", state={})
    app.run_until_idle()
    assert app.get("plain-1").result == {"n": 2}


@pytest.mark.parametrize("capability", ["maps", "signals and waits"])
def test_a_capability_the_store_lacks_is_a_clear_error(capability: str) -> None:
    pipeline: Pipeline[Any] = Pipeline("uses")

    @pipeline.phase
    def first(ctx: Any) -> Map | WaitFor:
        if capability == "maps":
            return Map([1, 2], phase="item", then="end")
        return WaitFor("approval", next_phase="end", state={})

    @pipeline.phase
    def item(ctx: Any) -> Done:
        return Done(ctx.state)

    @pipeline.phase
    def end(ctx: Any) -> Done:
        return Done(None)

    app, store = _app(pipeline)
    app.start("uses", "uses-1", state={})
    if capability == "maps":  # the map's start is refused: no item of it is written
        with pytest.raises(ConfigurationError, match=f"CoreOnlyStorage keeps no {capability}"):
            app.run_until_idle()
    else:
        app.run_until_idle()
        assert app.get("uses-1").status.value == "waiting"
        with pytest.raises(ConfigurationError, match=f"CoreOnlyStorage keeps no {capability}"):
            app.signal("uses-1", "approval", {})
    with pytest.raises(ConfigurationError, match="CoreOnlyStorage keeps no lessons"):
        store.recall("uses", 5)


def test_the_wrapper_forwards_every_method_of_the_port() -> None:
    """A capability added to the port is forwarded by ``DelegatingStorage`` too, or a wrapped store loses it."""
    port = {name for name, value in inspect.getmembers(Storage) if callable(value) and not name.startswith("_")}
    assert port - set(DelegatingStorage.__dict__) == set()
    assert {"get_job", "create_map", "deliver_signal", "recall", "owner_shares", "result_link"} <= port
