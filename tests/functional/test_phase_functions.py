"""The one phase handler (functions/phases.py): each phase function runs the phase its environment names."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from cairn import ConfigurationError, InlineScheduler, JobStatus, run_pipeline
from cairn.aws.phase_handler import phase_from_environment, registry_phase_handler
from cairn.aws.runtime import Runtime
from cairn.core.settings import PHASE, PIPELINE, Settings
from cairn.testing.invoker import LocalContext
from cairn.testing.stack import LocalStack
from pipelines import PIPELINES
from tests.aws import dynamodb_client, new_table, s3_client, sqs_client
from tests.events import phase_event

INTAKE = PIPELINES.get("document-intake")
KNOWN = ", ".join(PIPELINES.names)
OWNER = "arn:aws:iam::123456789012:user/alice"


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({}, f"needs {PIPELINE} and {PHASE}"),
        ({PIPELINE: "document-intake"}, f"needs {PHASE} in"),
        ({PHASE: "fetch"}, f"needs {PIPELINE} in"),
        ({PIPELINE: "document-intake", PHASE: ""}, f"needs {PHASE} in"),
        ({PIPELINE: "invoices", PHASE: "fetch"}, f'no registered pipeline: "invoices" \\(known: {KNOWN}\\)'),
        (
            {PIPELINE: "document-intake", PHASE: "summarise"},
            'no phase of pipeline "document-intake": "summarise" '
            "\\(its phases: fetch, split, extract, extract_page, publish\\)",
        ),
    ],
)
def test_a_phase_function_without_a_known_pipeline_and_phase_is_a_clear_configuration_error(
    environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        phase_from_environment(PIPELINES, environ)


def test_the_environment_names_the_pipeline_and_the_phase() -> None:
    pipeline, phase = phase_from_environment(PIPELINES, {PIPELINE: "document-intake", PHASE: "extract"})
    assert (pipeline, phase) == (INTAKE, "extract")


@pytest.mark.filterwarnings("ignore:No application metrics to publish")  # the invocation fails before any
def test_the_error_is_raised_by_the_first_invocation_not_at_import() -> None:
    handler = registry_phase_handler(PIPELINES, runtime=Runtime(settings=Settings()), environ={})
    context: Any = LocalContext("cairn-document-intake-fetch")
    with pytest.raises(ConfigurationError, match=PIPELINE):
        handler(phase_event("document-intake", "fetch"), context)


@pytest.fixture
def deployed_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A table on moto and the environment a deployed fetch function of document-intake has (stepfunctions driver)."""
    with mock_aws():
        table = new_table(dynamodb_client())
        environment = {
            "CAIRN_TABLE_NAME": table,
            "CAIRN_DRIVER": "stepfunctions",
            "CAIRN_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:cairn-pipeline",
            "CAIRN_FUNCTION_PREFIX": "cairn-",
            PIPELINE: "document-intake",
            PHASE: "fetch",
        }
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        yield table


def test_the_bundles_phase_handler_runs_the_phase_its_environment_names(deployed_environment: str) -> None:
    phases = importlib.reload(importlib.import_module("phases"))  # a fresh process: nothing resolved yet
    storage = Runtime(settings=Settings.from_env()).storage(OWNER)
    run_pipeline("job-0001", INTAKE, storage=storage, scheduler=InlineScheduler(), initial_state={"text": "Hello"})

    response: dict[str, Any] = phases.handler(
        phase_event("document-intake", "fetch"), LocalContext("cairn-document-intake-fetch")
    )

    assert response["status"] == "running"
    assert response["scheduled"]["phase"] == "split"
    job = storage.get_job("job-0001")
    assert job is not None
    assert [record.phase for record in job.phases] == ["fetch"]
    split = phases.handler(phase_event("document-intake", "split"), LocalContext("cairn-document-intake-fetch"))
    assert split["status"] == "rejected"  # this process runs fetch, whatever the event asks


def test_the_local_stack_deploys_one_function_per_phase_of_each_pipeline() -> None:
    with mock_aws():
        stack = LocalStack.create(PIPELINES, dynamodb=dynamodb_client(), s3=s3_client(), sqs=sqs_client())
        settings = stack.runtime.settings
        expected = {
            settings.phase_function(pipeline.name, phase) for pipeline in PIPELINES for phase in pipeline.phase_names
        }
        assert set(stack.invoker.functions) == {*expected, "cairn-scheduler"}
        start = stack.runtime.start_scheduler(OWNER, INTAKE)
        run_pipeline(
            "job-1", INTAKE, storage=stack.runtime.storage(OWNER), scheduler=start, initial_state={"text": "x"}
        )
        stack.run_until_idle()
        job = stack.runtime.storage(OWNER).get_job("job-1")
        assert job is not None
        assert job.status == JobStatus.COMPLETE
