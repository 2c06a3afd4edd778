"""``cairn dev`` with the stepfunctions driver: the template's state machine runs on moto, its tasks in workers."""

from __future__ import annotations

import boto3
import pytest

from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("local-stepfunctions")


def test_a_job_completes_through_the_state_machine(stepfunctions_stack: DevStack) -> None:
    assert stepfunctions_stack.api.health()["driver"] == "stepfunctions"
    stepfunctions_stack.api.start("document-intake", state={"document": "invoice.txt"}, job_id="sfn-invoice")
    view = stepfunctions_stack.wait_for("sfn-invoice")
    assert view["status"] == "complete", view
    assert [record["phase"] for record in view["phases"]] == ["fetch", "split", "extract", "publish"]
    info = stepfunctions_stack.admin("info")
    sfn = boto3.client(
        "stepfunctions",
        endpoint_url=info["awsEndpoint"],
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    assert info["outputs"]["StateMachineArn"] == info["stateMachine"]  # describe-stacks' output
    executions = sfn.list_executions(stateMachineArn=info["stateMachine"])["executions"]
    assert [execution["status"] for execution in executions] == ["SUCCEEDED"]
    history = sfn.get_execution_history(executionArn=executions[0]["executionArn"])["events"]
    tasks = [event for event in history if event["type"] == "TaskSucceeded"]
    assert len(tasks) >= 4  # each phase ran as a lambda:invoke task of the state machine


def test_a_map_over_the_pages_runs_in_the_state_machines_map_state(stepfunctions_stack: DevStack) -> None:
    state = {"document": "contract.txt", "page_concurrency": 2}
    stepfunctions_stack.api.start("document-intake", state=state, job_id="sfn-map")
    view = stepfunctions_stack.wait_for("sfn-map")
    assert view["status"] == "complete", view
    assert [record["phase"] for record in view["phases"]] == ["fetch", "split", "publish"]
    assert [record["outcome"] for record in view["phases"]] == ["next", "map", "done"]
    assert view["usage"]["pages"] == view["result"]["document"]["pages"]  # one item per page


def test_a_rerun_from_a_phase_runs_a_new_execution_from_there(stepfunctions_stack: DevStack) -> None:
    stepfunctions_stack.api.start("document-intake", state={"document": "report.txt"}, job_id="sfn-rerun")
    first = stepfunctions_stack.wait_for("sfn-rerun")
    assert first["status"] == "complete", first

    rerun = stepfunctions_stack.api.retry("sfn-rerun", mode="from", phase="extract")
    assert rerun["nextPhase"] == "extract"
    view = stepfunctions_stack.wait_for("sfn-rerun")
    assert view["status"] == "complete", view
    phases = [record["phase"] for record in stepfunctions_stack.phases("sfn-rerun")]
    assert phases == ["fetch", "split", "extract", "publish", "extract", "publish"]
    assert view["result"] == first["result"]
