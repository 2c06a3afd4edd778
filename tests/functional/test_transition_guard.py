"""The transition guard on both AWS drivers: a self-loop stops in error, naming the setting, on the deployed stack.

The stack's functions run with ``RecursiveLoop: Allow`` (tests/functional/test_recursive_chain.py), so
Lambda would let a phase that loops to itself run for ever: the engine stops it at the pipeline's
``max_transitions``. The direct driver runs on the test kit's API on moto; the stepfunctions driver
runs the state machine on moto's engine (the deployments of tests/functional/test_waits_drivers.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from cairn import JobStatus, Next, PhaseContext, Pipeline
from cairn.features.transition_guard import GUARD_STOP, TRANSITIONS
from tests.functional.test_waits_drivers import DRIVERS, Deploy, Deployment
from tests.support import counters

LIMIT = 6
JOB = "job-loop"
STOPPED = (
    f'Job "{JOB}" reached its limit of {LIMIT} transitions (Pipeline(max_transitions={LIMIT}), or '
    "CAIRN_MAX_TRANSITIONS for the stack): a phase that loops or fans out without end is stopped here. "
    f"Retry the job to allow it {LIMIT} more, or raise the limit first if that is not enough."
)


def self_loop(runs: Counter[str]) -> Pipeline[Any]:
    """``spin`` returns Next to itself, for ever."""
    pipeline: Pipeline[Any] = Pipeline("spinner", max_transitions=LIMIT)

    @pipeline.phase
    def spin(ctx: PhaseContext[Any]) -> Next:
        runs["spin"] += 1
        return Next("spin", {"turns": ctx.state["turns"] + 1})

    return pipeline


@pytest.fixture(params=sorted(DRIVERS))
def deploy(request: pytest.FixtureRequest) -> Iterator[Deploy]:
    """Deploys one pipeline on each driver in turn."""
    with DRIVERS[request.param]() as make:
        yield make


def stopped_at_the_limit(deployment: Deployment, runs: Counter[str], *, stops: int) -> dict[str, Any]:
    """The job as the API shows it, once the guard stopped it for the ``stops``-th time."""
    turns = stops * LIMIT
    view = deployment.view(JOB)
    assert view["status"] == JobStatus.ERROR.value, view
    assert view["error"] == STOPPED
    assert runs["spin"] == turns
    assert counters(view["usage"]) == {TRANSITIONS: turns, GUARD_STOP: turns}
    job = deployment.job(JOB)
    assert job.checkpoint is not None
    assert job.checkpoint.state == {"turns": turns}  # a retry goes on from the last turn
    assert [entry.level for entry in job.log if entry.message == STOPPED] == ["error"] * stops
    return view


def test_a_self_loop_stops_in_error_at_its_limit(deploy: Deploy) -> None:
    runs: Counter[str] = Counter()
    deployment = deploy(self_loop(runs))

    deployment.start("spinner", JOB, {"turns": 0})
    deployment.settle(timeout=60)

    stopped_at_the_limit(deployment, runs, stops=1)
    job = deployment.job(JOB)
    assert [record.outcome for record in job.phases] == ["next"] * LIMIT + ["error"]
    if deployment.machine is not None:  # one execution, failed as any job in error fails it: nothing left to run
        [execution] = deployment.executions()
        assert (execution["status"], execution["error"]) == ("FAILED", "cairn.JobFailed")
        assert deployment.machine.advances(execution) == ["spin"] * (LIMIT + 1)


def test_a_retry_of_the_stopped_loop_runs_its_limit_again_and_stops(deploy: Deploy) -> None:
    runs: Counter[str] = Counter()
    deployment = deploy(self_loop(runs))
    deployment.start("spinner", JOB, {"turns": 0})
    deployment.settle(timeout=60)

    reply = deployment.api.post(f"/jobs/{JOB}/retry", {"mode": "resume"})
    assert reply.status == 202, reply.body
    deployment.settle(timeout=60)

    stopped_at_the_limit(deployment, runs, stops=2)
