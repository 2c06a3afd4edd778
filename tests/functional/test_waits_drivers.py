"""Sleep, WaitFor and signals on both AWS drivers, through the API and the deployed phase functions.

The direct driver runs on the test kit's API client on moto (:meth:`ApiClient.on_moto`): a delayed
advance goes to the SQS delay queue, whose delays :class:`SkippedDelays` skip on the stack's clock.
The stepfunctions driver runs the state machine on moto's engine (as tests/functional/test_stepfunctions.py
does); moto's Wait state really sleeps, so :class:`WaitStates` makes it move the same skipping
clock to the end of the wait instead (and can hold a Wait until a test releases it). Nothing else
of moto's engine changes: the Wait states run, with the seconds the execution computed.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction

from cairn import Done, Job, JobStatus, PhaseContext, Pipeline, Sleep, WaitFor
from cairn.core.registry import PipelineRegistry
from cairn.scheduling.messages import AdvanceMessage
from cairn.testing.api import ApiClient, Reply
from cairn.testing.clock import SkippingClock
from cairn.testing.moto_aws import fake_aws
from cairn.testing.stack import LocalStack
from cairn.testing.stepfunctions import create_state_machine, route_lambda_tasks
from tests.aws import REGION, dynamodb_client, s3_client, sqs_client
from tests.functional.test_stepfunctions import Machine

ALICE = "arn:aws:iam::123456789012:user/alice"
TWO_HOURS = 7200
HOUR = 3600
QUEUE_CAP = 900  # SQS's longest DelaySeconds
SWEEP = {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}
Runs = Counter[str]


# -- pipelines --------------------------------------------------------------------------------------


def napper(runs: Runs) -> Pipeline[Any]:
    """``nap`` sleeps ``state["seconds"]``, then ``after`` finishes with the state nap handed over."""
    pipeline: Pipeline[Any] = Pipeline("napper")

    @pipeline.phase
    def nap(ctx: PhaseContext[Any]) -> Sleep:
        runs["nap"] += 1
        return Sleep(ctx.state["seconds"], "after", {**ctx.state, "packed": ["a", "b"]})

    @pipeline.phase
    def after(ctx: PhaseContext[Any]) -> Done:
        runs["after"] += 1
        return Done({**ctx.state, "woke": True})

    return pipeline


def review(runs: Runs) -> Pipeline[Any]:
    """``draft`` waits for "approval" (timeout and timeout phase from the state); ``publish`` or ``escalate``."""
    pipeline: Pipeline[Any] = Pipeline("review")

    @pipeline.phase
    def draft(ctx: PhaseContext[Any]) -> WaitFor:
        runs["draft"] += 1
        state = {"doc": ctx.state["doc"]}
        return WaitFor(
            "approval", "publish", state, timeout=ctx.state.get("timeout"), timeout_phase=ctx.state.get("onTimeout")
        )

    @pipeline.phase
    def publish(ctx: PhaseContext[Any]) -> Done:
        runs["publish"] += 1
        return Done({"doc": ctx.state["doc"], "approval": ctx.signal})

    @pipeline.phase
    def escalate(ctx: PhaseContext[Any]) -> Done:
        runs["escalate"] += 1
        return Done({"doc": ctx.state["doc"], "escalated": True, "signal": ctx.signal})

    return pipeline


# -- the two deployments ----------------------------------------------------------------------------


class WaitStates:
    """moto's Wait states on a skipping clock: a Wait moves the clock to its end instead of sleeping.

    While held (:meth:`hold`), a Wait notes its seconds and blocks until :meth:`release` (or until its
    execution is stopped), so a test can act while an execution waits.
    """

    def __init__(self, clock: SkippingClock) -> None:
        self.clock = clock
        self.seconds: list[int] = []
        self._open = threading.Event()
        self._open.set()

    def hold(self) -> None:
        """Keep the next Wait states waiting until :meth:`release`."""
        self._open.clear()

    def release(self) -> None:
        """Let every held Wait end (at its own end time on the clock)."""
        self._open.set()

    def entered(self, count: int, *, timeout: float = 10.0) -> None:
        """Return once ``count`` Wait states have been entered."""
        until(lambda: len(self.seconds) >= count, timeout=timeout, what=f"{count} Wait state(s)")

    def _wait(self, env: Any, wait_seconds: int) -> None:
        started = self.clock()
        self.seconds.append(wait_seconds)
        while not self._open.wait(0.01):
            if not env.is_running():  # the execution was stopped while waiting
                return
        self.clock.advance_to(started + wait_seconds * 1000)

    @contextmanager
    def skipped(self) -> Iterator[None]:
        """While open, moto's Wait states wait on the clock (see the class)."""

        def wait_interval(function: WaitFunction, env: Any, wait_seconds: int) -> None:
            self._wait(env, wait_seconds)

        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(WaitFunction, "_wait_interval", wait_interval)
                yield
        finally:
            self.release()


@dataclass
class Deployment:
    """One driver's deployment behind the API, on a clock that skips time."""

    driver: str
    api: ApiClient
    clock: SkippingClock
    machine: Machine | None = None
    waits: WaitStates | None = None

    @property
    def stack(self) -> LocalStack:
        return self.api.stack

    def start(self, pipeline: str, job_id: str, state: Any) -> None:
        """``POST /jobs``: the user's way in."""
        reply = self.api.post("/jobs", {"pipeline": pipeline, "jobId": job_id, "state": state})
        assert reply.status == 202, reply.body

    def view(self, job_id: str) -> dict[str, Any]:
        """``GET /jobs/{id}``: the job as the API shows it."""
        reply = self.api.get(f"/jobs/{job_id}")
        assert reply.status == 200, reply.body
        return dict(reply.body)

    def job(self, job_id: str) -> Job:
        found = self.stack.runtime.storage(ALICE).get_job(job_id)
        assert found is not None
        return found

    def signal(self, job_id: str, name: str, payload: Any) -> Reply:
        return self.api.post(f"/jobs/{job_id}/signals/{name}", payload)

    def settle(self, *, timeout: float = 20.0) -> None:
        """Run until nothing is left: the direct driver's invokes and delay queue, or every execution."""
        if self.machine is None:
            self.api.run_until_idle(timeout=timeout)
            return
        machine = self.machine
        until(lambda: not running_executions(machine), timeout=timeout, what="the executions to finish")

    def executions(self) -> list[dict[str, Any]]:
        """The state machine's executions, oldest first, with their states entered."""
        assert self.machine is not None
        machine = self.machine
        listed = machine.sfn.list_executions(stateMachineArn=machine.arn)["executions"]
        described = [dict(machine.sfn.describe_execution(executionArn=item["executionArn"])) for item in listed]
        for execution in described:
            execution["states"] = machine.states(execution)
        return sorted(described, key=lambda item: item["startDate"])


def running_executions(machine: Machine) -> list[Any]:
    return machine.sfn.list_executions(stateMachineArn=machine.arn, statusFilter="RUNNING")["executions"]


def until(condition: Callable[[], bool], *, timeout: float = 10.0, what: str = "the condition") -> None:
    """Poll ``condition`` until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"Timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


Deploy = Callable[[Pipeline[Any]], Deployment]


@contextmanager
def direct_driver() -> Iterator[Deploy]:
    """The direct driver: the test kit's API, phase functions and scheduler on moto, delays skipped."""
    with fake_aws():

        def make(pipeline: Pipeline[Any]) -> Deployment:
            clock = SkippingClock()
            return Deployment("direct", ApiClient.on_moto(pipeline, clock=clock, owner=ALICE), clock)

        yield make


@contextmanager
def stepfunctions_driver() -> Iterator[Deploy]:
    """The stepfunctions driver: the state machine on moto's engine, its Wait states on the stack's clock."""
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}), ExitStack() as patches:
        sfn = boto3.client("stepfunctions", region_name=REGION)
        machines: list[Machine] = []

        def make(pipeline: Pipeline[Any]) -> Deployment:
            clock = SkippingClock()
            arn = create_state_machine(sfn)
            stack = LocalStack.create(
                PipelineRegistry([pipeline]),
                dynamodb=dynamodb_client(),
                s3=s3_client(),
                sqs=sqs_client(),
                sfn=sfn,
                driver="stepfunctions",
                state_machine_arn=arn,
                clock=clock,
            )
            waits = WaitStates(clock)
            patches.enter_context(route_lambda_tasks(stack))
            patches.enter_context(waits.skipped())
            machines.append(Machine(stack, sfn, arn))
            return Deployment("stepfunctions", ApiClient(stack, owner=ALICE), clock, machines[-1], waits)

        try:
            yield make
        finally:
            for machine in machines:  # no execution may outlive moto
                for item in running_executions(machine):
                    sfn.stop_execution(executionArn=item["executionArn"])


DRIVERS = {"direct": direct_driver, "stepfunctions": stepfunctions_driver}


@pytest.fixture(params=sorted(DRIVERS))
def deploy(request: pytest.FixtureRequest) -> Iterator[Deploy]:
    """Deploys one pipeline on each driver in turn."""
    with DRIVERS[request.param]() as make:
        yield make


# -- what the direct driver's functions did ---------------------------------------------------------


def recorded(stack: LocalStack, function: str) -> list[tuple[dict[str, Any], Any]]:
    """Wrap deployed ``function`` (keeping its failure destination and loop setting): its events and responses."""
    calls: list[tuple[dict[str, Any], Any]] = []
    spec = stack.invoker.functions[function]

    def handler(event: dict[str, Any], context: Any) -> Any:
        response = spec.handler(event, context)
        calls.append((event, response))
        return response

    stack.invoker.functions[function] = dataclasses.replace(spec, handler=handler)
    return calls


def queue_deliveries(deployment: Deployment) -> list[int]:
    """The clock at each delivery of the delay queue to the scheduler function."""
    seen: list[int] = []
    scheduler = deployment.stack.runtime.settings.scheduler_function
    assert scheduler is not None
    spec = deployment.stack.invoker.functions[scheduler]

    def handler(event: dict[str, Any], context: Any) -> Any:
        if isinstance(event.get("Records"), list):
            seen.append(deployment.clock())
        return spec.handler(event, context)

    deployment.stack.invoker.functions[scheduler] = dataclasses.replace(spec, handler=handler)
    return seen


def phase_function(deployment: Deployment, pipeline: str, phase: str) -> str:
    return deployment.stack.runtime.settings.phase_function(pipeline, phase)


def statuses(calls: list[tuple[dict[str, Any], Any]]) -> list[str]:
    return [response["status"] for _, response in calls]


def delay_queue(stack: LocalStack) -> tuple[Any, str]:
    """The delay queue's client and URL."""
    sqs, queue_url = stack.runtime.sqs, stack.runtime.settings.delay_queue_url
    assert sqs is not None
    assert queue_url is not None
    return sqs, queue_url


def on_stepfunctions(deployment: Deployment) -> tuple[WaitStates, Machine]:
    """The Wait states and the state machine of a stepfunctions deployment."""
    assert deployment.waits is not None
    assert deployment.machine is not None
    return deployment.waits, deployment.machine


def sweep(deployment: Deployment) -> list[str]:
    """Run the scheduled sweep; the jobs it revived."""
    scheduler = deployment.stack.runtime.settings.scheduler_function
    assert scheduler is not None
    return list(deployment.stack.call(scheduler, SWEEP)["revived"])


# -- 1. Sleep --------------------------------------------------------------------------------------


def test_direct_a_two_hour_sleep_hops_the_delay_queue_then_runs_the_next_phase(direct: Deploy) -> None:
    runs: Runs = Counter()
    deployment = direct(napper(runs))
    hops = queue_deliveries(deployment)
    after_calls = recorded(deployment.stack, phase_function(deployment, "napper", "after"))
    slept_at = deployment.clock()

    deployment.start("napper", "nap-1", {"seconds": TWO_HOURS})
    deployment.stack.invoker.drain()  # nap runs; its wake-up is on the delay queue

    view = deployment.view("nap-1")
    assert (view["status"], view["nextPhase"]) == ("running", "after")
    assert view["wakeAt"] == slept_at + TWO_HOURS * 1000
    assert deployment.job("nap-1").not_before == view["wakeAt"]
    assert runs == Counter({"nap": 1})
    assert deployment.stack.delayed_waiting() == 1

    deployment.settle()

    assert runs == Counter({"nap": 1, "after": 1})
    assert len(hops) == TWO_HOURS // QUEUE_CAP  # re-queued every 15 minutes until the wake-up is due
    assert {later - earlier for earlier, later in pairwise([slept_at, *hops])} == {QUEUE_CAP * 1000}
    assert statuses(after_calls) == ["complete"]
    done = deployment.job("nap-1")
    assert done.status == JobStatus.COMPLETE
    assert done.result == {"seconds": TWO_HOURS, "packed": ["a", "b"], "woke": True}
    assert [(record.phase, record.outcome) for record in done.phases] == [("nap", "sleep"), ("after", "done")]
    assert done.phases[1].started_at >= view["wakeAt"]
    assert deployment.view("nap-1")["wakeAt"] is None


def test_stepfunctions_a_two_hour_sleep_is_a_wait_state_of_the_execution(stepfunctions: Deploy) -> None:
    runs: Runs = Counter()
    deployment = stepfunctions(napper(runs))
    waits, machine = on_stepfunctions(deployment)
    waits.hold()
    slept_at = deployment.clock()

    deployment.start("napper", "nap-1", {"seconds": TWO_HOURS})
    waits.entered(1)

    view = deployment.view("nap-1")
    assert (view["status"], view["nextPhase"]) == ("running", "after")
    assert view["wakeAt"] == slept_at + TWO_HOURS * 1000
    assert runs == Counter({"nap": 1})
    assert waits.seconds == [TWO_HOURS]  # the execution waits in its Wait state; no function runs meanwhile

    waits.release()
    deployment.settle()

    [execution] = deployment.executions()
    assert execution["status"] == "SUCCEEDED"
    assert execution["states"].count("WaitBeforeResolve") == 1
    assert machine.advances(execution) == ["nap", "after"]
    assert runs == Counter({"nap": 1, "after": 1})
    done = deployment.job("nap-1")
    assert done.status == JobStatus.COMPLETE
    assert done.result == {"seconds": TWO_HOURS, "packed": ["a", "b"], "woke": True}
    assert done.phases[1].started_at >= view["wakeAt"]


# -- 2. pause or cancel while sleeping -------------------------------------------------------------


def sleep_until_held(deployment: Deployment, job_id: str) -> None:
    """Start a two-hour nap and return while it sleeps (its wake-up queued, or its execution in its Wait)."""
    if deployment.waits is not None:
        deployment.waits.hold()
    deployment.start("napper", job_id, {"seconds": TWO_HOURS})
    if deployment.waits is not None:
        deployment.waits.entered(1)
    else:
        deployment.stack.invoker.drain()
    assert deployment.view(job_id)["wakeAt"] is not None


@pytest.mark.parametrize("action", ["pause", "cancel"])
def test_a_sleeping_job_paused_or_cancelled_does_not_wake_and_a_paused_one_resumed_later_completes(
    deploy: Deploy, action: str
) -> None:
    runs: Runs = Counter()
    deployment = deploy(napper(runs))
    sleep_until_held(deployment, "nap-1")
    wake_at = deployment.view("nap-1")["wakeAt"]

    reply = deployment.api.post(f"/jobs/nap-1/{action}")
    assert reply.status == 200, reply.body
    if deployment.waits is not None:
        deployment.waits.release()
    deployment.settle()

    assert deployment.clock() >= wake_at  # the wake-up came and found the job no longer running
    assert runs == Counter({"nap": 1})
    stopped = deployment.job("nap-1")
    assert stopped.status == (JobStatus.PAUSED if action == "pause" else JobStatus.CANCELLED)
    assert stopped.checkpoint is not None
    assert stopped.checkpoint.next_phase == "after"
    if deployment.driver == "stepfunctions":
        [execution] = deployment.executions()
        assert (execution["status"], execution["states"][-1]) == ("SUCCEEDED", "NothingToRun")
    if action == "cancel":
        return

    reply = deployment.api.post("/jobs/nap-1/retry", {"mode": "resume"})
    assert reply.status == 202, reply.body
    deployment.settle()

    assert runs == Counter({"nap": 1, "after": 1})
    done = deployment.job("nap-1")
    assert done.status == JobStatus.COMPLETE
    assert done.result == {"seconds": TWO_HOURS, "packed": ["a", "b"], "woke": True}


# -- 3. WaitFor and signals ------------------------------------------------------------------------


def test_a_signal_through_the_api_runs_the_next_phase_with_its_payload_once(deploy: Deploy) -> None:
    runs: Runs = Counter()
    deployment = deploy(review(runs))
    if deployment.waits is not None:
        deployment.waits.hold()  # the execution waits out the timeout in its Wait state
    waited_at = deployment.clock()
    deployment.start("review", "doc-1", {"doc": "q3.pdf", "timeout": HOUR})
    if deployment.waits is not None:
        deployment.waits.entered(1)
        assert deployment.waits.seconds == [HOUR]
    else:
        deployment.stack.invoker.drain()
        assert deployment.stack.delayed_waiting() == 1  # the timeout

    view = deployment.view("doc-1")
    assert (view["status"], view["waitingFor"], view["nextPhase"]) == ("waiting", "approval", "publish")
    assert view["waitDeadline"] == waited_at + HOUR * 1000
    assert view["wakeAt"] is None
    sequence = view["sequence"]

    other = deployment.signal("doc-1", "rejection", {"by": "reviewer-of-rejections"})
    assert (other.status, other.code) == (409, "conflict")
    assert deployment.view("doc-1")["sequence"] == sequence  # refused: nothing written

    approval = {"approved": True, "by": "bob"}
    reply = deployment.signal("doc-1", "approval", approval)
    assert reply.status == 202, reply.body
    assert reply.body["waitingFor"] is None
    again = deployment.signal("doc-1", "approval", {"approved": False, "by": "second-delivery"})
    assert (again.status, again.code) == (409, "conflict")

    if deployment.waits is not None:  # the signal's execution runs publish while the first still waits
        until(lambda: deployment.job("doc-1").status == JobStatus.COMPLETE, what="publish")
        deployment.waits.release()
    deployment.settle()

    assert deployment.clock() >= view["waitDeadline"]  # the timeout came after the signal and changed nothing
    assert runs == Counter({"draft": 1, "publish": 1})
    done = deployment.job("doc-1")
    assert done.status == JobStatus.COMPLETE
    assert done.error is None
    assert done.result == {"doc": "q3.pdf", "approval": approval}
    assert done.signal is None  # consumed by the phase that read it
    stored = done.model_dump_json()
    assert "second-delivery" not in stored
    assert "reviewer-of-rejections" not in stored
    assert [entry.message for entry in done.log].count('Received signal "approval"') == 1
    assert deployment.signal("doc-1", "approval", approval).status == 409
    if deployment.driver == "stepfunctions":
        waited, signalled = deployment.executions()
        assert (waited["status"], waited["states"][-1]) == ("SUCCEEDED", "NothingToRun")  # stale: resolved nothing
        _, machine = on_stepfunctions(deployment)
        assert machine.advances(waited) == ["draft"]
        assert machine.advances(signalled) == ["publish"]


# -- 4. timeouts -----------------------------------------------------------------------------------


def test_a_wait_without_its_signal_times_out_into_error(deploy: Deploy) -> None:
    runs: Runs = Counter()
    deployment = deploy(review(runs))
    waited_at = deployment.clock()

    deployment.start("review", "doc-1", {"doc": "q3.pdf", "timeout": 600})
    deployment.settle()

    assert deployment.clock() >= waited_at + 600_000
    assert runs == Counter({"draft": 1})
    failed = deployment.job("doc-1")
    assert failed.status == JobStatus.ERROR
    assert 'Timed out waiting for signal "approval"' in (failed.error or "")
    assert deployment.view("doc-1")["status"] == "error"
    late = deployment.signal("doc-1", "approval", {"approved": True})
    assert (late.status, late.code) == (409, "conflict")
    if deployment.driver == "stepfunctions":
        [execution] = deployment.executions()
        assert (execution["status"], execution["error"]) == ("FAILED", "cairn.JobFailed")


def test_a_wait_with_a_timeout_phase_continues_there_and_completes(deploy: Deploy) -> None:
    runs: Runs = Counter()
    deployment = deploy(review(runs))

    deployment.start("review", "doc-1", {"doc": "q3.pdf", "timeout": 600, "onTimeout": "escalate"})
    deployment.settle()

    assert runs == Counter({"draft": 1, "escalate": 1})
    done = deployment.job("doc-1")
    assert done.status == JobStatus.COMPLETE
    assert done.result == {"doc": "q3.pdf", "escalated": True, "signal": None}
    assert [record.phase for record in done.phases] == ["draft", "escalate"]
    if deployment.driver == "stepfunctions":
        [execution] = deployment.executions()
        assert execution["status"] == "SUCCEEDED"
        _, machine = on_stepfunctions(deployment)
        # the Wait's end invokes the phase the wait leads to, whose advance ends the wait into escalate
        assert machine.advances(execution) == ["draft", "publish", "escalate"]


# -- 5. a wake-up that is lost, duplicated, or whose sender dies -----------------------------------


def test_direct_a_wake_up_delivered_twice_runs_the_next_phase_once(direct: Deploy) -> None:
    runs: Runs = Counter()
    deployment = direct(napper(runs))
    scheduler = deployment.stack.runtime.settings.scheduler_function
    assert scheduler is not None
    spec = deployment.stack.invoker.functions[scheduler]
    delivered: list[int] = []

    def twice(event: dict[str, Any], context: Any) -> Any:
        if isinstance(event.get("Records"), list) and not delivered:
            delivered.append(1)
            spec.handler(event, context)  # SQS delivers at least once: this one twice
        return spec.handler(event, context)

    deployment.stack.invoker.functions[scheduler] = dataclasses.replace(spec, handler=twice)
    after_calls = recorded(deployment.stack, phase_function(deployment, "napper", "after"))

    deployment.start("napper", "nap-1", {"seconds": TWO_HOURS})
    deployment.settle()

    assert sorted(statuses(after_calls)) == ["complete", "skipped"]  # both copies reached the phase function
    assert runs == Counter({"nap": 1, "after": 1})
    assert deployment.job("nap-1").status == JobStatus.COMPLETE


def test_direct_a_scheduler_that_dies_after_waking_the_job_is_retried_and_the_phase_runs_once(
    direct: Deploy,
) -> None:
    runs: Runs = Counter()
    deployment = direct(napper(runs))
    stack = deployment.stack
    sqs, queue_url = delay_queue(stack)
    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"VisibilityTimeout": "0"})
    scheduler = stack.runtime.settings.scheduler_function
    assert scheduler is not None
    spec = stack.invoker.functions[scheduler]
    died: list[int] = []

    def dies_after_invoking(event: dict[str, Any], context: Any) -> Any:
        queued = stack.invoker.pending()
        response = spec.handler(event, context)
        if isinstance(event.get("Records"), list) and stack.invoker.pending() > queued and not died:
            died.append(1)  # the phase is invoked, then the process dies: SQS delivers the batch again
            return {"batchItemFailures": [{"itemIdentifier": record["messageId"]} for record in event["Records"]]}
        return response

    stack.invoker.functions[scheduler] = dataclasses.replace(spec, handler=dies_after_invoking)
    after_calls = recorded(stack, phase_function(deployment, "napper", "after"))

    deployment.start("napper", "nap-1", {"seconds": TWO_HOURS})
    deployment.settle()

    assert died == [1]
    assert statuses(after_calls) == ["complete", "skipped"]
    assert runs == Counter({"nap": 1, "after": 1})
    assert deployment.job("nap-1").status == JobStatus.COMPLETE


def test_direct_a_lost_wake_up_is_left_to_the_sweep_once_the_job_is_due(direct: Deploy) -> None:
    runs: Runs = Counter()
    deployment = direct(napper(runs))
    stack = deployment.stack
    deployment.start("napper", "nap-1", {"seconds": TWO_HOURS})
    stack.invoker.drain()
    sqs, queue_url = delay_queue(stack)
    sqs.purge_queue(QueueUrl=queue_url)  # the wake-up is lost
    wake_at = deployment.view("nap-1")["wakeAt"]

    deployment.clock.advance_to(wake_at - 1000)
    assert sweep(deployment) == []
    idle = stack.runtime.settings.sweep_idle_seconds
    deployment.clock.advance_to(wake_at + idle * 1000 + 1000)
    assert sweep(deployment) == ["nap-1"]
    deployment.settle()

    assert runs == Counter({"nap": 1, "after": 1})
    assert deployment.job("nap-1").status == JobStatus.COMPLETE


@pytest.mark.parametrize("sleeper", ["stopped", "still waiting"])
def test_stepfunctions_a_wake_up_by_the_sweep_runs_the_next_phase_once(stepfunctions: Deploy, sleeper: str) -> None:
    runs: Runs = Counter()
    deployment = stepfunctions(napper(runs))
    waits, machine = on_stepfunctions(deployment)
    sleep_until_held(deployment, "nap-1")
    [sleeping] = running_executions(machine)
    if sleeper == "stopped":  # the execution that should wake the job dies in its Wait state
        machine.sfn.stop_execution(executionArn=sleeping["executionArn"])
    wake_at = deployment.view("nap-1")["wakeAt"]
    deployment.clock.advance_to(wake_at + deployment.stack.runtime.settings.sweep_idle_seconds * 1000 + 1000)

    assert sweep(deployment) == ["nap-1"]  # a second wake-up: a new execution
    until(lambda: deployment.job("nap-1").status == JobStatus.COMPLETE, what="the job to complete")
    waits.release()
    deployment.settle()

    assert runs == Counter({"nap": 1, "after": 1})
    first, revived = deployment.executions()
    assert first["status"] == ("ABORTED" if sleeper == "stopped" else "SUCCEEDED")
    if sleeper == "still waiting":
        assert first["states"][-1] == "NothingToRun"  # its Wait ended after the revived run: stale
        assert machine.advances(first) == ["nap"]
    assert machine.advances(revived) == ["after"]
    assert deployment.job("nap-1").result == {"seconds": TWO_HOURS, "packed": ["a", "b"], "woke": True}


# -- driver fixes: a timeout is never fired early; a wait leading to an unknown phase ---------------


def test_direct_a_timeout_delivered_before_its_deadline_goes_back_on_the_queue(direct: Deploy) -> None:
    runs: Runs = Counter()
    deployment = direct(review(runs))
    stack = deployment.stack
    deployment.start("review", "doc-1", {"doc": "q3.pdf", "timeout": 600})
    stack.invoker.drain()
    view = deployment.view("doc-1")
    sqs, queue_url = delay_queue(stack)
    sqs.purge_queue(QueueUrl=queue_url)
    # The receiving scheduler's clock is half a second behind the one that set the deadline.
    deployment.clock.advance_to(view["waitDeadline"] - 500)
    message = AdvanceMessage(
        job_id="doc-1",
        owner=ALICE,
        pipeline="review",
        phase="publish",
        sequence=view["sequence"],
        not_before=view["waitDeadline"],
    )
    early = {"Records": [{"messageId": "early-1", "body": json.dumps(message.to_wire())}]}
    scheduler = stack.runtime.settings.scheduler_function
    assert scheduler is not None

    assert stack.call(scheduler, early) == {"batchItemFailures": []}
    assert stack.invoker.pending() == 0  # not invoked: that advance would find the wait not yet over
    assert stack.delayed_waiting() == 1
    deployment.settle()

    failed = deployment.job("doc-1")
    assert failed.status == JobStatus.ERROR
    assert 'Timed out waiting for signal "approval"' in (failed.error or "")


def test_stepfunctions_an_execution_started_with_a_fractional_delay_waits_it_out_rounded_up(
    stepfunctions: Deploy,
) -> None:
    runs: Runs = Counter()
    pipeline = review(runs)
    deployment = stepfunctions(pipeline)
    waits, machine = on_stepfunctions(deployment)
    waits.hold()
    deployment.start("review", "doc-1", {"doc": "q3.pdf", "timeout": 1.5})
    waits.entered(1)
    [first] = running_executions(machine)
    machine.sfn.stop_execution(executionArn=first["executionArn"])
    view = deployment.view("doc-1")

    # A new execution for the wait's timeout (as a resume of a waiting job starts one): 1.5 s away.
    deployment.stack.runtime.start_scheduler(ALICE, pipeline).schedule_advance(
        "doc-1", phase="publish", sequence=view["sequence"], delay=1.5
    )
    waits.entered(2)
    waits.release()
    deployment.settle()

    assert waits.seconds == [2, 2]
    failed = deployment.job("doc-1")
    assert failed.status == JobStatus.ERROR  # the wait had ended: 1 s would have found it still on
    assert 'Timed out waiting for signal "approval"' in (failed.error or "")
    stopped, timed_out = deployment.executions()
    assert stopped["status"] == "ABORTED"
    assert (timed_out["status"], timed_out["error"]) == ("FAILED", "cairn.JobFailed")


def test_a_wait_for_an_unknown_phase_times_out_into_its_timeout_phase(deploy: Deploy) -> None:
    runs: Runs = Counter()
    pipeline: Pipeline[Any] = Pipeline("astray")

    @pipeline.phase
    def draft(ctx: PhaseContext[Any]) -> WaitFor:
        return WaitFor("approval", "nowhere", {"doc": ctx.state["doc"]}, timeout=60, timeout_phase="escalate")

    @pipeline.phase
    def escalate(ctx: PhaseContext[Any]) -> Done:
        runs["escalate"] += 1
        return Done({**ctx.state, "escalated": True})

    deployment = deploy(pipeline)

    deployment.start("astray", "doc-1", {"doc": "q3.pdf"})
    deployment.settle()

    assert runs == Counter({"escalate": 1})
    done = deployment.job("doc-1")
    assert done.status == JobStatus.COMPLETE
    assert done.result == {"doc": "q3.pdf", "escalated": True}
    if deployment.driver == "stepfunctions":
        _, machine = on_stepfunctions(deployment)
        [execution] = deployment.executions()
        assert execution["status"] == "SUCCEEDED"
        [_, expiry, _] = machine.entered(execution, "RunPhase")
        advance = expiry["input"]["invoked"]["Payload"]["next"]  # the advance RunPhase ran
        assert advance["functionName"] == deployment.stack.runtime.settings.scheduler_function
        assert machine.advances(execution) == ["draft", "nowhere", "escalate"]


# -- a resumed sleep, and a sleep as long as the TTL --------------------------------------------------


def test_direct_a_sleeping_job_paused_and_resumed_before_its_wake_up_still_sleeps(direct: Deploy) -> None:
    runs: Runs = Counter()
    deployment = direct(napper(runs))
    sleep_until_held(deployment, "nap-1")
    wake_at = deployment.view("nap-1")["wakeAt"]
    assert deployment.api.post("/jobs/nap-1/pause").status == 200
    deployment.clock.advance(60)

    assert deployment.api.post("/jobs/nap-1/retry", {"mode": "resume"}).status == 202
    deployment.settle()

    done = deployment.job("nap-1")
    assert done.status == JobStatus.COMPLETE
    assert done.phases[-1].started_at >= wake_at


def test_direct_a_sleep_as_long_as_the_ttl_does_not_lose_the_job(direct: Deploy) -> None:
    runs: Runs = Counter()
    deployment = direct(napper(runs))
    day = 24 * HOUR  # the pipeline's TTL

    deployment.start("napper", "nap-1", {"seconds": day})
    deployment.settle()  # the delay queue skips the day on the stack's clock

    done = deployment.job("nap-1")  # still there after a day asleep: it woke and finished
    assert done.status == JobStatus.COMPLETE, done.error
    assert done.result == {"seconds": day, "packed": ["a", "b"], "woke": True}
    assert runs == Counter({"nap": 1, "after": 1})
    nap, after = done.phases
    assert (nap.phase, nap.outcome, after.phase, after.outcome) == ("nap", "sleep", "after", "done")
    assert after.started_at - nap.ended_at >= day * 1000  # it slept the whole TTL
    assert done.expires_at >= after.ended_at // 1000 + day  # and lives its TTL on from its last write (seconds)
