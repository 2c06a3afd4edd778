"""cairn.dev.deployment: template.yaml transformed by SAM and created by moto's CloudFormation, in-process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cairn.bundle.templating.transform import TransformError
from cairn.dev.deployment import DeploymentError, deploy
from cairn.dev.models import Deployment, Route
from pipelines import PIPELINES

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
REGION = "us-east-1"
PHASES = ("fetch", "split", "extract", "publish")


def client(name: str) -> Any:
    return boto3.client(name, region_name=REGION)  # type: ignore[call-overload]


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield


@pytest.fixture
def direct(aws: None) -> Deployment:
    return deploy(TEMPLATE, client=client)


@pytest.fixture
def stepfunctions(aws: None) -> Deployment:
    return deploy(TEMPLATE, client=client, parameters={"Driver": "stepfunctions"})


def test_the_stack_is_created_with_its_outputs(direct: Deployment) -> None:
    (stack,) = client("cloudformation").describe_stacks(StackName="cairn-dev")["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    outputs = {item["OutputKey"]: item["OutputValue"] for item in stack["Outputs"]}
    assert outputs == direct.outputs
    assert outputs["TableName"] == direct.table_name
    assert outputs["ApiFunctionName"] == "cairn-dev-api"
    assert outputs["ApiUrl"] == f"https://{direct.resources['HttpApi']}.execute-api.{REGION}.amazonaws.com/"
    assert outputs["LayerArn"].startswith(f"arn:aws:lambda:{REGION}:123456789012:layer:")
    assert "StateMachineArn" not in outputs


def test_the_table_has_the_templates_keys_indexes_and_ttl(direct: Deployment) -> None:
    assert direct.table_name is not None
    assert direct.table_name.startswith("cairn-dev-CheckpointTable-")
    dynamodb = client("dynamodb")
    table = dynamodb.describe_table(TableName=direct.table_name)["Table"]
    assert table["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    indexes = {index["IndexName"]: index for index in table["GlobalSecondaryIndexes"]}
    assert set(indexes) == {"Listing", "StatusListing", "PipelineListing", "CostListing", "Stalled"}
    assert [key["AttributeName"] for key in indexes["StatusListing"]["KeySchema"]] == ["owner", "status", "createdAt"]
    ttl = dynamodb.describe_time_to_live(TableName=direct.table_name)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expiresAt"}


def test_the_delay_queue_redrives_to_the_dead_letter_queue(direct: Deployment) -> None:
    sqs = client("sqs")
    delay = direct.outputs["DelayQueueUrl"].rsplit("/", 1)[1]
    url = sqs.get_queue_url(QueueName=delay)["QueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    dead = direct.outputs["DeadLetterQueueUrl"].rsplit("/", 1)[1]
    assert json.loads(attributes["RedrivePolicy"])["deadLetterTargetArn"].endswith(f":{dead}")
    assert attributes["VisibilityTimeout"] == "360"


def test_lambda_lists_the_functions_and_they_carry_their_environment(direct: Deployment) -> None:
    listed = {function["FunctionName"] for function in client("lambda").list_functions()["Functions"]}
    registered = {f"cairn-dev-{p.name}-{phase}" for p in PIPELINES for phase in p.phase_names}
    assert listed == set(direct.functions) == {"cairn-dev-api", "cairn-dev-scheduler", *registered}
    for phase in PHASES:
        function = direct.functions[f"cairn-dev-document-intake-{phase}"]
        assert function.handler == "phases.handler"
        assert function.code_uri == ROOT / "functions"
        assert function.environment["CAIRN_PHASE"] == phase
        assert function.on_failure == "cairn-dev-scheduler"
        assert function.maximum_retry_attempts == 0
    for function in direct.functions.values():
        environment = function.environment
        assert environment["CAIRN_TABLE_NAME"] == direct.table_name
        assert environment["CAIRN_STATE_BUCKET"] == direct.outputs["StateBucketName"]
        assert environment["CAIRN_FUNCTION_PREFIX"] == "cairn-dev-"
        assert environment["CAIRN_DRIVER"] == "direct"
        assert environment["CAIRN_STATE_MACHINE_ARN"] == ""
        assert environment["CAIRN_SWEEP_IDLE_SECONDS"] == "600"
    extract = direct.functions["cairn-dev-document-intake-extract"]
    assert (extract.timeout, extract.memory) == (900.0, 1024)
    assert direct.functions["cairn-dev-api"].maximum_retry_attempts == 2


def test_the_scheduler_polls_the_delay_queue_and_sweeps_every_five_minutes(direct: Deployment) -> None:
    scheduler = direct.functions["cairn-dev-scheduler"]
    assert scheduler.on_failure is None
    (source,) = scheduler.sqs_sources
    assert source.queue_url.endswith(direct.outputs["DelayQueueUrl"].rsplit("/", 1)[1])
    assert (source.batch_size, source.report_batch_item_failures) == (10, True)
    (schedule,) = scheduler.schedules
    assert (schedule.name, schedule.every_seconds) == ("Sweep", 300)


def test_the_scheduler_reads_the_tables_stream_and_moto_delivers_none_of_it(direct: Deployment) -> None:
    from moto.dynamodb.models import dynamodb_backends

    scheduler = direct.functions["cairn-dev-scheduler"]
    (source,) = scheduler.stream_sources
    table = client("dynamodb").describe_table(TableName=direct.table_name)["Table"]
    assert source.stream_arn == table["LatestStreamArn"]
    assert table["StreamSpecification"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    assert (source.starting_position, source.batch_size, source.report_batch_item_failures) == (
        "TRIM_HORIZON",
        100,
        True,
    )
    assert source.filters == ('{"dynamodb": {"Keys": {"sk": {"S": ["JOB"]}}}}',)
    assert source.maximum_retry_attempts == 100
    assert source.on_failure_queue is not None
    assert source.on_failure_queue.endswith(direct.outputs["SchedulerDeadLetterQueueUrl"].rsplit("/", 1)[1])
    assert direct.table_name is not None
    assert dynamodb_backends["123456789012"][REGION].get_table(direct.table_name).lambda_event_source_mappings == {}
    assert direct.functions["cairn-dev-api"].environment["CAIRN_STATUS_COUNTS"] == "maintained"


def test_the_api_routes_come_from_the_http_apis_openapi_body(direct: Deployment) -> None:
    assert direct.api is not None
    assert direct.api.function_name == "cairn-dev-api"
    routes = set(direct.api.routes)
    assert Route("POST", "/jobs", public=False) in routes
    assert Route("GET", "/jobs/{jobId}", public=False) in routes
    assert Route("GET", "/health", public=True) in routes
    assert direct.resources["HttpApi"]


def test_the_types_moto_does_not_create_are_named(direct: Deployment) -> None:
    assert "HttpApi" in direct.resources
    assert "AWS::Lambda::EventInvokeConfig" in direct.covered
    assert direct.covered["AWS::ApiGatewayV2::Api"] == ["HttpApi"]
    created = {"AWS::Lambda::Function", "AWS::DynamoDB::Table", "AWS::SQS::Queue"}
    created |= {"AWS::CloudWatch::Alarm", "AWS::Lambda::Alias", "AWS::Lambda::Version", "AWS::CloudWatch::Dashboard"}
    assert not created & set(direct.covered)


def test_direct_has_no_state_machine(direct: Deployment) -> None:
    assert direct.state_machine is None
    assert client("stepfunctions").list_state_machines()["stateMachines"] == []
    assert direct.parameters["Driver"] == "direct"


def test_stepfunctions_creates_the_state_machine_with_its_substitutions(stepfunctions: Deployment) -> None:
    machine = stepfunctions.state_machine
    assert machine is not None
    assert machine.name == "cairn-dev-pipeline"
    assert stepfunctions.outputs["StateMachineArn"] == machine.arn
    described = client("stepfunctions").describe_state_machine(stateMachineArn=machine.arn)
    assert described["definition"] == machine.definition
    assert "${" not in machine.definition
    states = json.loads(machine.definition)["States"]
    scheduler_arn = "arn:aws:lambda:us-east-1:123456789012:function:cairn-dev-scheduler:live"  # its alias
    assert states["ResolveNextPhase"]["Parameters"]["FunctionName"] == scheduler_arn
    for function in stepfunctions.functions.values():
        assert function.environment["CAIRN_STATE_MACHINE_ARN"] == machine.arn


def test_another_stack_name_renames_the_functions(aws: None) -> None:
    deployment = deploy(TEMPLATE, client=client, stack_name="Other-Stack")
    assert deployment.table_name is not None
    assert deployment.table_name.startswith("Other-Stack-CheckpointTable-")
    assert "Other-Stack-scheduler" in deployment.functions
    assert deployment.functions["Other-Stack-api"].environment["CAIRN_FUNCTION_PREFIX"] == "Other-Stack-"


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"Driver": "fast"}, "Parameter 'Driver' must be one of AllowedValues"),
        ({"DocumentsBucket": "Not_A_Bucket"}, "Parameter 'DocumentsBucket' must match pattern ^$|^[a-z0-9]"),
        ({"SweepIdleSeconds": "5"}, "Parameter 'SweepIdleSeconds' must be a number not less than 60"),
        ({"ApiAuth": "JWT"}, "ApiAuth=JWT needs JwtIssuer."),
        ({"Stage": "prod"}, "Stage=prod needs AlarmEmail or AlarmTopicArn, or no alarm pages anyone"),
        ({"Stage": "prod", "AlarmEmail": "", "AlarmTopicArn": ""}, "Stage=prod needs AlarmEmail or AlarmTopicArn"),
        ({"Nonsense": "1"}, "Parameters: [Nonsense] do not exist in the template"),
    ],
)
def test_bad_parameter_values_fail_as_cloudformation_fails_them(
    aws: None, parameters: dict[str, str], message: str
) -> None:
    with pytest.raises(DeploymentError) as caught:
        deploy(TEMPLATE, client=client, parameters=parameters)
    assert str(caught.value).startswith("CloudFormation cannot create stack cairn-dev: ")
    assert message in str(caught.value)
    assert client("cloudformation").list_stacks()["StackSummaries"] == []


SMALL = """
Transform: AWS::Serverless-2016-10-31
Resources:
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: code/
      Handler: worker.handler
      Runtime: python3.12
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "template.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_missing_code_folder_is_named(aws: None, tmp_path: Path) -> None:
    with pytest.raises(TransformError, match=r"^Resources\.Worker\.Properties\.CodeUri: no folder .*code$"):
        deploy(write(tmp_path, SMALL), client=client)


def test_lambdas_defaults_apply(aws: None, tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    worker = deploy(write(tmp_path, SMALL), client=client, stack_name="tiny").functions
    (function,) = worker.values()
    assert function.name.startswith("tiny-Worker-")
    assert (function.timeout, function.memory, function.maximum_retry_attempts) == (3.0, 128, 2)
    assert function.code_uri == tmp_path / "code"


def test_the_transforms_own_message_names_what_it_rejects(aws: None, tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    text = SMALL + "      Events:\n        E:\n          Type: Bogus\n"
    with pytest.raises(TransformError, match="Invalid Serverless Application Specification document"):
        deploy(write(tmp_path, text), client=client)


def test_cloudformations_own_message_names_what_it_fails(aws: None, tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    text = SMALL + "      Environment:\n        Variables:\n          X: !ImportValue missing-export\n"
    with pytest.raises(DeploymentError, match="No export named missing-export found"):
        deploy(write(tmp_path, text), client=client)


def test_the_production_resources_are_created_on_moto(aws: None) -> None:
    """Stage=prod, an alarm address and the stepfunctions driver: what protects the data and what signals, created."""
    deployment = deploy(
        TEMPLATE,
        client=client,
        parameters={"Driver": "stepfunctions", "Stage": "prod", "AlarmEmail": "oncall@example.com"},
    )
    assert deployment.table_name is not None
    table = client("dynamodb").describe_table(TableName=deployment.table_name)["Table"]
    assert table["DeletionProtectionEnabled"] is True
    bucket = deployment.outputs["StateBucketName"]
    assert client("s3").get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    sns = client("sns")
    (topic,) = sns.list_topics()["Topics"]
    key_id = sns.get_topic_attributes(TopicArn=topic["TopicArn"])["Attributes"]["KmsMasterKeyId"]
    assert key_id in [key["KeyId"] for key in client("kms").list_keys()["Keys"]]  # the stack's own key
    queue = deployment.outputs["SchedulerDeadLetterQueueUrl"]
    assert "SchedulerDeadLetterQueue" in queue
    cloudwatch = client("cloudwatch")
    alarms = {alarm["AlarmName"]: alarm for alarm in cloudwatch.describe_alarms()["MetricAlarms"]}
    assert any("-ExecutionsFailedAlarm-" in name for name in alarms)
    assert any("-StalledJobsAlarm-" in name for name in alarms)
    assert any("-FailedJobsAlarm-" in name for name in alarms)
    assert any("-JobFailureRateAlarm-" in name for name in alarms)
    assert all(alarm["AlarmActions"] == [topic["TopicArn"]] for alarm in alarms.values()), "an alarm pages no one"
    raw = cloudwatch.get_dashboard(DashboardName=deployment.outputs["DashboardName"])["DashboardBody"]
    body = raw if isinstance(raw, dict) else json.loads(raw)  # moto keeps the body it parsed
    (shown,) = [widget["properties"]["alarms"] for widget in body["widgets"] if widget["type"] == "alarm"]
    assert sorted(shown) == sorted(alarm["AlarmArn"] for alarm in alarms.values())
    aliases = client("lambda").list_aliases(FunctionName="cairn-dev-document-intake-extract")["Aliases"]
    assert [(alias["Name"], alias["FunctionVersion"]) for alias in aliases] == [("live", "1")]
