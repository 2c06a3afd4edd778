"""cairn dev: an async invoke config whose on-failure destination is an SQS queue (the scheduler's dead-letter
queue in template.yaml) is read from the created stack, and a failed async invocation's record lands in it."""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cairn.dev.deployment import deploy
from cairn.dev.lambda_service import LambdaService
from cairn.dev.logs import DevLog
from cairn.dev.models import Deployment

ROOT = Path(__file__).resolve().parents[2]
REGION = "us-east-1"
ACCOUNT = "123456789012"
STACK = "cairn-dev"
# moto's CloudFormation warns of the EventInvokeConfig it does not create (cairn dev reads it from the template).
pytestmark = pytest.mark.filterwarnings("ignore:Tried to parse .* not supported by moto:UserWarning")

TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  Failures:
    Type: AWS::SQS::Queue
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      FunctionName: !Sub "${AWS::StackName}-worker"
      CodeUri: code/
      Handler: handlers.boom
      Runtime: python3.12
      EventInvokeConfig:
        MaximumRetryAttempts: 0
        DestinationConfig:
          OnFailure:
            Type: SQS
            Destination: !GetAtt Failures.Arn
  Caller:
    Type: AWS::Serverless::Function
    Properties:
      FunctionName: !Sub "${AWS::StackName}-caller"
      CodeUri: code/
      Handler: handlers.boom
      Runtime: python3.12
      EventInvokeConfig:
        MaximumRetryAttempts: 1
        DestinationConfig:
          OnFailure:
            Type: Lambda
            Destination: !GetAtt Worker.Arn
Outputs:
  FailuresUrl:
    Value: !Ref Failures
"""

HANDLERS = """
def boom(event, context):
    raise ValueError("the scheduler broke")
"""


def client(name: str) -> Any:
    return boto3.client(name, region_name=REGION)  # type: ignore[call-overload]


@pytest.fixture
def deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Deployment]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "handlers.py").write_text(HANDLERS)
    (tmp_path / "template.yaml").write_text(TEMPLATE)
    with mock_aws():
        yield deploy(tmp_path / "template.yaml", client=client, stack_name=STACK, region=REGION, account=ACCOUNT)


def test_an_sqs_on_failure_destination_is_read_as_its_queue_url(deployment: Deployment) -> None:
    worker = deployment.functions[f"{STACK}-worker"]
    queue_url = deployment.outputs["FailuresUrl"]
    assert (worker.on_failure, worker.on_failure_queue) == (None, queue_url)
    assert worker.maximum_retry_attempts == 0
    caller = deployment.functions[f"{STACK}-caller"]
    assert (caller.on_failure, caller.on_failure_queue) == (f"{STACK}-worker", None)
    assert caller.maximum_retry_attempts == 1


def test_a_failed_async_invocation_sends_its_on_failure_record_to_the_queue(deployment: Deployment) -> None:
    sqs = client("sqs")
    queue_url = deployment.outputs["FailuresUrl"]
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "layers" / "cairn")}
    log = io.StringIO()
    lambdas = LambdaService(
        deployment.functions, environment, DevLog(log), region=REGION, account=ACCOUNT, concurrency=1, sqs=sqs
    )
    try:
        payload = {"requestContext": {"requestId": "r-1"}, "requestPayload": {"jobId": "job-1", "phase": "work"}}
        request_id = lambdas.invoke_async(f"{STACK}-worker", payload)
        messages = _receive(sqs, queue_url)
    finally:
        lambdas.close()

    [message] = messages
    record = json.loads(message["Body"])
    assert record["requestPayload"] == payload
    assert record["requestContext"] == {
        "requestId": request_id,
        "functionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{STACK}-worker:$LATEST",
        "condition": "RetriesExhausted",
        "approximateInvokeCount": 1,
    }
    assert record["responseContext"]["functionError"] == "Unhandled"
    assert record["responsePayload"]["errorType"] == "ValueError"
    assert record["responsePayload"]["errorMessage"] == "the scheduler broke"
    assert {"version", "timestamp"} <= set(record)
    assert "on-failure record to the queue" in log.getvalue()


def _receive(sqs: Any, queue_url: str, timeout: float = 120.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        messages: list[dict[str, Any]] = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get(
            "Messages", []
        )
        if messages:
            return messages
        time.sleep(0.1)
    raise AssertionError(f"no on-failure record reached the queue in {timeout:g}s")
