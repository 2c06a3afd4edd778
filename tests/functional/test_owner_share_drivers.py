"""A fair share per owner on both AWS drivers, through the API and the deployed phase functions.

``CAIRN_OWNER_CONCURRENCY`` is the stack's share (the template's ``OwnerConcurrency``). With a share of
1, three jobs of one owner never run a phase at the same time, and all complete: on the stepfunctions
driver, whose executions run at once, a waiting job's execution loops through its Wait state (it never
fails); the local direct driver runs one invocation at a time (a waiting job hops the delay queue: the
view test below). A waiting job's view says why it waits.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from cairn import Done, JobStatus, Next, PhaseContext, Pipeline
from cairn.core.settings import OWNER_CONCURRENCY
from cairn.features import owner_share
from cairn.features.owner_share import OwnerShares, SlotRequest
from tests.functional.test_waits_drivers import ALICE, DRIVERS, Deploy, direct_driver


class Overlaps:
    """Phases running at once, counted inside the phase code."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.runs: Counter[tuple[str, str]] = Counter()

    def pipeline(self) -> Pipeline[Any]:
        pipeline: Pipeline[Any] = Pipeline("shared")

        def count(ctx: PhaseContext[Any]) -> None:
            with self.lock:
                self.running += 1
                self.most = max(self.most, self.running)
                self.runs[(ctx.job_id, ctx.phase)] += 1
            time.sleep(0.05)  # long enough for another execution's phase to overlap, were it let through
            with self.lock:
                self.running -= 1

        @pipeline.phase
        def first(ctx: PhaseContext[Any]) -> Next:
            count(ctx)
            return Next("second", ctx.state)

        @pipeline.phase
        def second(ctx: PhaseContext[Any]) -> Done:
            count(ctx)
            return Done(ctx.state)

        return pipeline


@pytest.fixture(params=sorted(DRIVERS))
def deploy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Deploy]:
    monkeypatch.setenv(OWNER_CONCURRENCY, "1")
    with DRIVERS[request.param]() as make:
        yield make


def test_a_share_of_one_runs_one_phase_of_the_owner_at_a_time_and_every_job_completes(
    deploy: Deploy, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[str] = []
    original = owner_share.wait_for_share

    def counted(run: Any, taken: Any, scheduler: Any) -> Any:
        waits.append(run.job.job_id)
        return original(run, taken, scheduler)

    monkeypatch.setattr(owner_share, "wait_for_share", counted)
    overlaps = Overlaps()
    deployment = deploy(overlaps.pipeline())
    jobs = [f"job-{index}" for index in range(3)]
    for job_id in jobs:
        deployment.start("shared", job_id, {"n": job_id})
    deployment.settle(timeout=120)
    assert overlaps.most == 1
    assert set(overlaps.runs.values()) == {1}
    assert len(overlaps.runs) == 6
    for job_id in jobs:
        view = deployment.view(job_id)
        assert view["status"] == JobStatus.COMPLETE.value, view
        assert "shareWait" not in view
    if deployment.machine is not None:  # executions run at once: jobs waited, each in its execution, none failed
        assert waits
        assert {execution["status"] for execution in deployment.executions()} == {"SUCCEEDED"}


def test_a_waiting_jobs_view_says_why_it_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(OWNER_CONCURRENCY, "1")
    overlaps = Overlaps()
    with direct_driver() as make:
        deployment = make(overlaps.pipeline())
        store = deployment.stack.runtime.storage(ALICE)
        assert isinstance(store, OwnerShares)
        now = deployment.clock()
        # another job of the owner holds its one slot for a minute (its worker, say, died holding it)
        held = SlotRequest(owner=ALICE, job_id="other", holder="w#1", limit=1, now_ms=now, expires_at=now + 60_000)
        assert store.take_slot(held) is None
        deployment.start("shared", "waits", {"n": 1})
        deployment.stack.invoker.drain()  # the phase function ran, found the share taken, and gave the job back
        view = deployment.view("waits")
        assert view["status"] == JobStatus.RUNNING.value
        assert view["shareWait"] == "waiting for its owner's share: 1 of 1 phases running"
        assert view["wakeAt"] > now
        assert overlaps.runs == Counter()
        deployment.settle(timeout=60)  # the slot expires; the job runs
        done = deployment.view("waits")
        assert done["status"] == JobStatus.COMPLETE.value
        assert "shareWait" not in done
        assert overlaps.runs == Counter({("waits", "first"): 1, ("waits", "second"): 1})
