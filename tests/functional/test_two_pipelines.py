"""Two pipelines that share phase names, deployed together: each job runs its own pipeline's phase functions.

``invoice-review`` has a ``fetch`` and a ``publish`` phase, as document-intake does. Its jobs and
document-intake's run side by side on the local stack, under the direct driver and under the
stepfunctions driver, and every phase invocation lands in the function named for its own pipeline.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cairn import Done, JobStatus, Next, PhaseContext, Pipeline
from cairn.core.registry import PipelineRegistry
from cairn.core.settings import DriverName, Settings
from cairn.testing.invoker import LambdaHandler
from cairn.testing.stack import LocalStack
from cairn.testing.stepfunctions import create_state_machine, route_lambda_tasks
from pipelines import PIPELINES
from tests.aws import REGION, dynamodb_client, s3_client, sqs_client

OWNER = "arn:aws:iam::123456789012:user/alice"
INTAKE = PIPELINES.get("document-intake")

invoice_review: Pipeline[Any] = Pipeline("invoice-review")


@invoice_review.phase(name="fetch", timeout=60)
def fetch_invoice(ctx: PhaseContext[Any]) -> Next:
    """Look the invoice up (here: take it from the input)."""
    return Next("publish", {**ctx.state, "fetched": True})


@invoice_review.phase(name="publish")
def publish_review(ctx: PhaseContext[Any]) -> Done:
    """Approve invoices under 1000."""
    return Done(
        {"invoice": ctx.state["invoice"], "fetched": ctx.state["fetched"], "approved": ctx.state["amount"] < 1000}
    )


REGISTRY = PipelineRegistry([*PIPELINES, invoice_review])
INTAKE_FUNCTIONS = [
    "cairn-document-intake-fetch",
    "cairn-document-intake-split",
    "cairn-document-intake-extract",
    "cairn-document-intake-extract_page",
    "cairn-document-intake-publish",
]
REVIEW_FUNCTIONS = ["cairn-invoice-review-fetch", "cairn-invoice-review-publish"]


class PhaseCalls:
    """Every phase function invocation on a stack, by job: the function's name and the status it answered."""

    def __init__(self, stack: LocalStack) -> None:
        self.by_job: dict[str, list[str]] = defaultdict(list)
        self.statuses: list[str] = []
        for pipeline in stack.pipelines:
            for phase in pipeline.phase_names:
                name = stack.runtime.settings.phase_function(pipeline.name, phase)
                spec = stack.invoker.functions[name]
                stack.invoker.register(
                    name,
                    self._recorded(name, spec.handler),
                    on_failure=spec.on_failure,
                    recursive_loop=spec.recursive_loop,
                )

    def _recorded(self, name: str, handler: LambdaHandler) -> LambdaHandler:
        def recorded(event: dict[str, Any], context: Any) -> Any:
            self.by_job[event["jobId"]].append(name)
            response = handler(event, context)
            self.statuses.append(response["status"])
            return response

        return recorded


def local_stack(driver: DriverName, routes: ExitStack) -> LocalStack:
    """The bundle with both pipelines, under ``driver`` (the state machine on moto's engine for stepfunctions)."""
    sfn = boto3.client("stepfunctions", region_name=REGION) if driver == "stepfunctions" else None
    stack = LocalStack.create(
        REGISTRY,
        dynamodb=dynamodb_client(),
        s3=s3_client(),
        sqs=sqs_client(),
        sfn=sfn,
        driver=driver,
        state_machine_arn=create_state_machine(sfn) if sfn is not None else None,
    )
    if driver == "stepfunctions":
        routes.enter_context(route_lambda_tasks(stack))
    return stack


def wait_for_executions(stack: LocalStack, count: int, *, timeout: float = 180.0) -> list[str]:
    """The statuses of the state machine's executions, once there are ``count`` and none is running."""
    sfn, arn = stack.runtime.sfn, stack.runtime.settings.state_machine_arn
    assert sfn is not None
    assert arn is not None
    deadline = time.monotonic() + timeout
    while True:
        listed = sfn.list_executions(stateMachineArn=arn)["executions"]
        if len(listed) >= count and all(item["status"] != "RUNNING" for item in listed):
            return [item["status"] for item in listed]
        if time.monotonic() > deadline:
            pytest.fail(f"Executions did not finish within {timeout}s: {[item['status'] for item in listed]}")
        time.sleep(0.02)


@contextmanager
def deployment(driver: DriverName) -> Iterator[LocalStack]:
    """Both pipelines deployed on the local stack under ``driver``; no execution outlives moto."""
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}), ExitStack() as routes:
        stack = local_stack(driver, routes)
        yield stack
        sfn, arn = stack.runtime.sfn, stack.runtime.settings.state_machine_arn
        if sfn is not None and arn:
            for item in sfn.list_executions(stateMachineArn=arn, statusFilter="RUNNING")["executions"]:
                sfn.stop_execution(executionArn=item["executionArn"])


@pytest.fixture(params=["direct", "stepfunctions"])
def deployed(request: pytest.FixtureRequest) -> Iterator[LocalStack]:
    """Both pipelines deployed on the local stack, under each driver."""
    with deployment(request.param) as stack:
        yield stack


def test_the_two_pipelines_share_phase_names_but_not_function_names() -> None:
    settings = Settings(function_prefix="cairn-")
    assert {"fetch", "publish"} <= set(INTAKE.phase_names) & set(invoice_review.phase_names)
    assert [settings.phase_function(INTAKE.name, phase) for phase in INTAKE.phase_names] == INTAKE_FUNCTIONS
    review = [settings.phase_function(invoice_review.name, phase) for phase in invoice_review.phase_names]
    assert review == REVIEW_FUNCTIONS


@pytest.mark.filterwarnings("ignore:No application metrics to publish")  # one process: the invocations share Metrics
def test_jobs_of_both_pipelines_complete_each_through_its_own_phase_functions(deployed: LocalStack) -> None:
    calls = PhaseCalls(deployed)
    app = deployed.runtime.cairn(OWNER, REGISTRY)

    app.start(INTAKE, "doc-1", state={"document": "invoice.txt"})
    app.start(invoice_review, "inv-1", state={"invoice": "INV-7", "amount": 250})
    app.start(invoice_review, "inv-2", state={"invoice": "INV-8", "amount": 4000})
    if deployed.runtime.settings.driver == "stepfunctions":
        assert wait_for_executions(deployed, 3) == ["SUCCEEDED"] * 3
    else:
        deployed.run_until_idle()

    ran = [function for function in INTAKE_FUNCTIONS if not function.endswith("extract_page")]  # no map here
    assert calls.by_job == {"doc-1": ran, "inv-1": REVIEW_FUNCTIONS, "inv-2": REVIEW_FUNCTIONS}
    assert "rejected" not in calls.statuses
    document = app.get("doc-1")
    assert document.status == JobStatus.COMPLETE
    assert [record.phase for record in document.phases] == ["fetch", "split", "extract", "publish"]
    assert document.result["document"]["kind"] == "invoice"
    for job_id, approved in (("inv-1", True), ("inv-2", False)):
        review = app.get(job_id)
        assert review.status == JobStatus.COMPLETE, review.error
        assert [record.phase for record in review.phases] == ["fetch", "publish"]
        assert review.result["approved"] is approved
        assert review.result["fetched"] is True


def test_an_advance_sent_to_the_other_pipelines_function_of_the_same_phase_is_refused() -> None:
    with deployment("direct") as stack:
        app = stack.runtime.cairn(OWNER, REGISTRY)
        job = app.start(invoice_review, "inv-1", state={"invoice": "INV-7", "amount": 250})
        event = {
            "jobId": "inv-1",
            "owner": OWNER,
            "pipeline": "invoice-review",
            "phase": "fetch",
            "sequence": job.sequence,
        }

        response = stack.call(stack.runtime.settings.phase_function(INTAKE.name, "fetch"), event)

        assert response["status"] == "rejected"
        assert app.get("inv-1").phases == []
        stack.run_until_idle()  # the invoke the start queued goes to invoice-review's own fetch
        assert app.get("inv-1").status == JobStatus.COMPLETE
