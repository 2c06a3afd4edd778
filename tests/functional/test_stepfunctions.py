"""The stepfunctions driver end to end: the state machine on moto's engine, its Lambda tasks run by the local stack."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import boto3
import pytest
from moto import mock_aws

from cairn import Done, InlineScheduler, Job, JobStatus, Next, PhaseContext, Pipeline, RetryPolicy, run_pipeline
from cairn.core.registry import PipelineRegistry
from cairn.testing.faults import SimulatedCrash
from cairn.testing.stack import LocalStack
from cairn.testing.stepfunctions import (
    DEFINITION,
    create_state_machine,
    function_name,
    load_definition,
    route_lambda_tasks,
)
from pipelines import PIPELINES
from tests.aws import REGION, dynamodb_client, s3_client, sqs_client
from tests.events import load_event

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

OWNER = "arn:aws:iam::123456789012:user/alice"
INTAKE = PIPELINES.get("document-intake")
TASK_ERRORS = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
]


@dataclass
class Machine:
    """One deployment: the local stack and the state machine that drives it."""

    stack: LocalStack
    sfn: SFNClient
    arn: str

    def start(self, job_id: str, pipeline: Pipeline[Any], **options: Any) -> Job:
        """Start (or retry) a job as the API does: through the stepfunctions start scheduler."""
        return run_pipeline(
            job_id,
            pipeline,
            storage=self.stack.runtime.storage(OWNER),
            scheduler=self.stack.runtime.start_scheduler(OWNER, pipeline),
            **options,
        )

    def job(self, job_id: str) -> Job:
        found = self.stack.runtime.storage(OWNER).get_job(job_id)
        assert found is not None
        return found

    def finished(self, count: int, *, timeout: float = 180.0) -> list[dict[str, Any]]:
        """The machine's executions, oldest first, once there are ``count`` and none is running."""
        deadline = time.monotonic() + timeout
        while True:
            listed = self.sfn.list_executions(stateMachineArn=self.arn)["executions"]
            if len(listed) >= count and all(item["status"] != "RUNNING" for item in listed):
                described = [
                    cast(dict[str, Any], self.sfn.describe_execution(executionArn=item["executionArn"]))
                    for item in listed
                ]
                return sorted(described, key=lambda item: item["startDate"])
            if time.monotonic() > deadline:
                pytest.fail(f"Executions did not finish within {timeout}s: {[item['status'] for item in listed]}")
            time.sleep(0.02)

    def history(self, execution: dict[str, Any]) -> list[dict[str, Any]]:
        events = self.sfn.get_execution_history(executionArn=execution["executionArn"], maxResults=1000)["events"]
        return [dict(event) for event in events]

    def states(self, execution: dict[str, Any]) -> list[str]:
        """The names of the states the execution entered, in order."""
        return [
            event["stateEnteredEventDetails"]["name"]
            for event in self.history(execution)
            if "stateEnteredEventDetails" in event
        ]

    def advances(self, execution: dict[str, Any]) -> list[str]:
        """The phases the execution's RunPhase task invoked, in order."""
        phases = []
        for event in self.history(execution):
            if event["type"] == "TaskScheduled":
                payload = json.loads(event["taskScheduledEventDetails"]["parameters"])["Payload"]
                if payload["action"] == "advance":
                    phases.append(payload["phase"])
        return phases

    def entered(self, execution: dict[str, Any], state: str) -> list[dict[str, Any]]:
        """The events of ``state`` being entered, each with its input parsed."""
        found = []
        for event in self.history(execution):
            details = event.get("stateEnteredEventDetails")
            if details and details["name"] == state:
                found.append({"timestamp": event["timestamp"], "input": json.loads(details["input"])})
        return found


Deploy = Callable[[PipelineRegistry], Machine]


@pytest.fixture
def deploy() -> Iterator[Deploy]:
    """Deploys pipelines on moto with moto's Step Functions engine; its Lambda tasks run on the local stack."""
    with deployments() as make:
        yield make


@contextmanager
def deployments() -> Iterator[Deploy]:
    """While open, deploys pipelines on moto with moto's Step Functions engine (the ``deploy`` fixture's)."""
    with (
        mock_aws(config={"stepfunctions": {"execute_state_machine": True}}),
        ExitStack() as routes,
    ):
        sfn = boto3.client("stepfunctions", region_name=REGION)
        machines: list[Machine] = []

        def make(pipelines: PipelineRegistry) -> Machine:
            arn = create_state_machine(sfn)
            stack = LocalStack.create(
                pipelines,
                dynamodb=dynamodb_client(),
                s3=s3_client(),
                sqs=sqs_client(),
                sfn=sfn,
                driver="stepfunctions",
                state_machine_arn=arn,
            )
            routes.enter_context(route_lambda_tasks(stack))
            machines.append(Machine(stack, sfn, arn))
            return machines[-1]

        yield make
        for machine in machines:  # no execution may outlive moto
            for item in sfn.list_executions(stateMachineArn=machine.arn, statusFilter="RUNNING")["executions"]:
                sfn.stop_execution(executionArn=item["executionArn"])


def crashing_pipeline(runs: Counter[str], *, crashes: int, retry: RetryPolicy | None = None) -> Pipeline[Any]:
    """``load`` -> ``boom``; ``boom``'s worker dies on its first ``crashes`` runs."""
    pipeline: Pipeline[Any] = Pipeline("crashing")

    @pipeline.phase
    def load(ctx: PhaseContext[Any]) -> Next:
        runs["load"] += 1
        return Next("boom", {"loaded": True})

    @pipeline.phase(retry=retry or RetryPolicy())
    def boom(ctx: PhaseContext[Any]) -> Done:
        runs["boom"] += 1
        if runs["boom"] <= crashes:
            raise SimulatedCrash("the worker running boom died")
        return Done({"loaded": ctx.state["loaded"], "boom_runs": runs["boom"]})

    return pipeline


def test_a_document_runs_through_its_four_phase_functions_in_one_execution(deploy: Deploy) -> None:
    machine = deploy(PIPELINES)

    machine.start("job-0001", INTAKE, initial_state={"document": "invoice.txt"})

    [execution] = machine.finished(1)
    assert execution["status"] == "SUCCEEDED"
    assert machine.advances(execution) == ["fetch", "split", "extract", "publish"]
    assert machine.states(execution)[-3:] == ["RunPhase", "AfterPhase", "NothingToRun"]
    # resolved once, at the start; each phase after it runs the advance the one before reported: 2 transitions
    states = machine.states(execution)
    first = states.index("RunPhase")
    assert states[:first] == ["CheckStartDelay", "ResolveNextPhase", "ShouldRunPhase"]
    assert states[first:] == ["RunPhase", "AfterPhase"] * 4 + ["NothingToRun"]
    job = machine.job("job-0001")
    assert job.status == JobStatus.COMPLETE
    assert job.checkpoint is None
    assert [record.phase for record in job.phases] == ["fetch", "split", "extract", "publish"]
    assert job.result["document"]["kind"] == "invoice"
    assert job.result["document"]["pages"] == 3
    assert job.result["fields"]["references"]["invoice"] == "INV-2025-0342"
    assert [party["name"] for party in job.result["fields"]["parties"]] == [
        "Harbor Point Logistics Inc.",
        "Northwind Cloud Services LLC",
    ]


def test_no_state_travels_through_the_execution(deploy: Deploy) -> None:
    machine = deploy(PIPELINES)

    machine.start("job-0001", INTAKE, initial_state={"document": "report.txt"})

    [execution] = machine.finished(1)
    assert execution["status"] == "SUCCEEDED"
    sizes = [
        len(details.get("input") or details.get("output") or "")
        for event in machine.history(execution)
        for key, details in event.items()
        if key.endswith("EventDetails") and isinstance(details, dict)
    ]
    assert max(sizes) < 1_000  # the document and its pages stay in the checkpoint


def test_a_crashing_phase_leaves_the_job_in_error_and_fails_the_execution_through_record_failure(
    deploy: Deploy,
) -> None:
    runs: Counter[str] = Counter()
    pipeline = crashing_pipeline(runs, crashes=1)
    machine = deploy(PipelineRegistry([pipeline]))

    machine.start("job-crash", pipeline)

    [execution] = machine.finished(1)
    assert execution["status"] == "FAILED"
    assert execution["error"] == "cairn.JobFailed"
    assert "job-crash" in execution["cause"]
    assert "boom" in execution["cause"]
    assert machine.states(execution)[-4:] == ["RunPhase", "RecordFailure", "AfterFailure", "RecordedJobFailed"]
    [report] = machine.entered(execution, "RecordFailure")
    assert report["input"]["failure"]["Error"] == "SimulatedCrash"
    job = machine.job("job-crash")
    assert job.status == JobStatus.ERROR
    assert "the worker running boom died" in (job.error or "")
    assert job.checkpoint is not None
    assert job.checkpoint.next_phase == "boom"
    assert job.checkpoint.state == {"loaded": True}
    assert job.lease_owner is None


def test_a_retry_is_a_new_execution_that_resumes_at_the_saved_phase(deploy: Deploy) -> None:
    runs: Counter[str] = Counter()
    pipeline = crashing_pipeline(runs, crashes=1)
    machine = deploy(PipelineRegistry([pipeline]))
    machine.start("job-crash", pipeline)
    machine.finished(1)

    machine.start("job-crash", pipeline, retry_mode="resume")

    first, retry = machine.finished(2)
    assert first["status"] == "FAILED"
    assert retry["status"] == "SUCCEEDED"
    assert machine.advances(retry) == ["boom"]
    assert runs == Counter({"load": 1, "boom": 2})
    job = machine.job("job-crash")
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"loaded": True, "boom_runs": 2}


def test_a_failing_phase_with_attempts_left_is_retried_after_its_backoff(deploy: Deploy) -> None:
    calls: Counter[str] = Counter()
    pipeline: Pipeline[Any] = Pipeline("flaky")

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=1.0, jitter=False))
    def wobble(ctx: PhaseContext[Any]) -> Done:
        calls["wobble"] += 1
        if ctx.attempt == 1:
            raise ConnectionError("the upstream service reset the connection")
        return Done({"attempt": ctx.attempt})

    machine = deploy(PipelineRegistry([pipeline]))

    machine.start("job-flaky", pipeline)

    [execution] = machine.finished(1)
    assert execution["status"] == "SUCCEEDED"
    assert machine.advances(execution) == ["wobble", "wobble"]
    [wait] = machine.entered(execution, "WaitBeforeResolve")
    [first_run, second_run] = machine.entered(execution, "RunPhase")
    assert wait["input"]["delay"] == 1.0
    assert wait["input"]["wait"] == {"seconds": 1}
    # the retry is resolved for the sequence the retry commit reached, one past the first run's claim and commit
    assert wait["input"]["sequence"] == first_run["input"]["invoked"]["Payload"]["next"]["sequence"] + 2
    assert second_run["input"]["invoked"]["Payload"]["next"]["sequence"] == wait["input"]["sequence"]
    assert (second_run["timestamp"] - wait["timestamp"]).total_seconds() >= 0.9
    job = machine.job("job-flaky")
    assert job.status == JobStatus.COMPLETE
    assert job.result == {"attempt": 2}
    assert [record.outcome for record in job.phases] == ["retry", "done"]


def test_a_crash_with_attempts_left_is_retried_after_record_failure(deploy: Deploy) -> None:
    runs: Counter[str] = Counter()
    pipeline = crashing_pipeline(runs, crashes=1, retry=RetryPolicy(max_attempts=2, backoff=1.0, jitter=False))
    machine = deploy(PipelineRegistry([pipeline]))

    machine.start("job-crash", pipeline)

    [execution] = machine.finished(1)
    assert execution["status"] == "SUCCEEDED"
    assert machine.advances(execution) == ["load", "boom", "boom"]
    states = machine.states(execution)
    assert states[states.index("RecordFailure") :][:4] == [
        "RecordFailure",
        "AfterFailure",
        "FollowRetry",
        "CheckStartDelay",
    ]
    assert "WaitBeforeResolve" in states[states.index("RecordFailure") :]
    assert machine.job("job-crash").result == {"loaded": True, "boom_runs": 2}


@pytest.mark.filterwarnings("ignore:No application metrics to publish")  # one process: the invocations share Metrics
def test_two_executions_for_one_job_run_each_phase_once(deploy: Deploy) -> None:
    runs: Counter[str] = Counter()
    both_invoked = threading.Event()
    pipeline: Pipeline[Any] = Pipeline("duplicated")

    @pipeline.phase
    def first(ctx: PhaseContext[Any]) -> Next:
        runs["first"] += 1
        # Hold the claim while the other execution tries this phase (it may also arrive after the claim moved
        # the job's sequence on, and then resolves to nothing to run without invoking).
        both_invoked.wait(timeout=10)
        return Next("second", {"first": True})

    @pipeline.phase
    def second(ctx: PhaseContext[Any]) -> Done:
        runs["second"] += 1
        return Done(ctx.state)

    machine = deploy(PipelineRegistry([pipeline]))
    first_function = machine.stack.runtime.settings.phase_function(pipeline.name, "first")
    handler = machine.stack.invoker.functions[first_function].handler
    invocations: list[str] = []
    lock = threading.Lock()

    def counted(event: dict[str, Any], context: Any) -> Any:
        with lock:
            invocations.append(event["jobId"])
            if len(invocations) == 2:
                both_invoked.set()
        return handler(event, context)

    machine.stack.register(first_function, counted)

    machine.start("job-twice", pipeline)
    machine.stack.runtime.start_scheduler(OWNER, pipeline).schedule_advance("job-twice", phase="first")

    executions = machine.finished(2)
    assert [execution["status"] for execution in executions] == ["SUCCEEDED", "SUCCEEDED"]
    assert runs == Counter({"first": 1, "second": 1})
    endings = sorted(machine.states(execution)[-1] for execution in executions)
    if len(invocations) == 2:  # the other execution reached the phase function and was refused the claim
        assert endings == ["NothingToRun", "OwnedElsewhere"]
    else:  # the other execution resolved after the claim and found its sequence stale
        assert invocations == ["job-twice"], [machine.states(e) for e in executions]
        assert endings == ["NothingToRun", "NothingToRun"]
    job = machine.job("job-twice")
    assert job.status == JobStatus.COMPLETE
    assert [record.phase for record in job.phases] == ["first", "second"]


def test_a_checkpoint_naming_an_unknown_phase_ends_the_job_in_error_through_the_scheduler(deploy: Deploy) -> None:
    pipeline: Pipeline[Any] = Pipeline("astray")

    @pipeline.phase
    def go(ctx: PhaseContext[Any]) -> Next:
        return Next("nowhere", {})

    machine = deploy(PipelineRegistry([pipeline]))

    machine.start("job-astray", pipeline)

    [execution] = machine.finished(1)
    assert execution["status"] == "FAILED"
    assert execution["error"] == "cairn.JobFailed"
    [_, unknown] = machine.entered(execution, "RunPhase")
    assert unknown["input"]["invoked"]["Payload"]["next"]["functionName"] == "cairn-scheduler"
    job = machine.job("job-astray")
    assert job.status == JobStatus.ERROR
    assert "nowhere" in (job.error or "")
    assert job.checkpoint is not None
    assert job.checkpoint.next_phase == "nowhere"


@pytest.mark.parametrize(("sample", "waits"), [("statemachine/start", False), ("statemachine/start-delayed", True)])
def test_an_execution_started_with_the_sample_input_drives_the_job(deploy: Deploy, sample: str, waits: bool) -> None:
    machine = deploy(PIPELINES)
    event = load_event(sample)
    run_pipeline(
        event["jobId"],
        INTAKE,
        storage=machine.stack.runtime.storage(event["owner"]),
        scheduler=InlineScheduler(),  # nothing starts the job but the execution below
        initial_state={"document": "contract.txt"},
    )

    machine.sfn.start_execution(stateMachineArn=machine.arn, input=json.dumps(event))

    [execution] = machine.finished(1)
    assert execution["status"] == "SUCCEEDED"
    assert ("WaitBeforeResolve" in machine.states(execution)) is waits
    job = machine.stack.runtime.storage(event["owner"]).get_job(event["jobId"])
    assert job is not None
    assert job.status == JobStatus.COMPLETE
    assert job.result["document"]["kind"] == "contract"


def test_the_definition_is_generic_over_phases_and_bounds_every_task() -> None:
    definition = json.loads(load_definition({"SchedulerFunctionArn": "arn:aws:lambda:us-east-1:1:function:s"}))
    states = definition["States"]
    tasks = {name: state for name, state in states.items() if state["Type"] == "Task"}

    assert set(tasks) == {"ResolveNextPhase", "RunPhase", "RecordFailure", "HandOff"}
    invokes = {name: state for name, state in tasks.items() if name != "HandOff"}
    assert all(state["Resource"] == "arn:aws:states:::lambda:invoke" for state in invokes.values())
    # the one other task starts a fresh execution of this machine, which takes the job on
    assert tasks["HandOff"]["Resource"] == "arn:aws:states:::states:startExecution"
    assert tasks["HandOff"]["Parameters"]["StateMachineArn.$"] == "$$.StateMachine.Id"
    assert all(0 < state["TimeoutSeconds"] <= 960 for state in tasks.values())
    assert tasks["RunPhase"]["TimeoutSeconds"] > 900
    assert tasks["RunPhase"]["Parameters"]["FunctionName.$"] == "$.invoked.Payload.next.functionName"
    assert tasks["RunPhase"]["Retry"][0]["ErrorEquals"] == TASK_ERRORS
    assert len(tasks["RunPhase"]["Retry"]) == 1
    assert tasks["RunPhase"]["Catch"] == [
        {"ErrorEquals": ["States.ALL"], "ResultPath": "$.failure", "Next": "RecordFailure"}
    ]
    assert tasks["RecordFailure"]["Retry"][0]["ErrorEquals"] == TASK_ERRORS
    raw = DEFINITION.read_text()
    assert all(name not in raw for name in ["fetch", "split", "extract", "publish", "document-intake"])


def test_a_definition_with_a_substitution_left_unfilled_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\$\{SchedulerFunctionArn\}"):
        load_definition({})
    template = tmp_path / "machine.asl.json"
    template.write_text('{"Comment": "${Other}"}')
    with pytest.raises(ValueError, match=r"\$\{Other\}"):
        load_definition({"SchedulerFunctionArn": "x"}, template)


@pytest.mark.parametrize(
    "reference",
    [
        "cairn-document-intake-fetch",
        "cairn-document-intake-fetch:live",
        "123456789012:function:cairn-document-intake-fetch",
        "arn:aws:lambda:us-east-1:123456789012:function:cairn-document-intake-fetch",
        "arn:aws:lambda:us-east-1:123456789012:function:cairn-document-intake-fetch:$LATEST",
    ],
)
def test_a_task_reaches_a_function_by_name_or_arn(reference: str) -> None:
    assert function_name(reference) == "cairn-document-intake-fetch"
