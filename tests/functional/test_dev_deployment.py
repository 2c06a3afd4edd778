"""cairn.dev.deployment: template.yaml deployed onto moto in-process, as ``cairn dev`` does on its endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cairn.dev.deployment import Deployment, DeploymentError, Route, deploy
from cairn.dev.intrinsics import ParameterError, ResolutionError
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


# ---------------------------------------------------------------- the real template


def test_the_table_has_the_templates_keys_indexes_and_ttl(direct: Deployment) -> None:
    assert direct.table_name == "cairn-dev-CheckpointTable"
    dynamodb = client("dynamodb")
    table = dynamodb.describe_table(TableName=direct.table_name)["Table"]
    assert table["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    indexes = {index["IndexName"]: index for index in table["GlobalSecondaryIndexes"]}
    assert set(indexes) == {"ByStatus", "ByOwner", "Stalled"}
    assert indexes["Stalled"]["KeySchema"] == [
        {"AttributeName": "sweepKey", "KeyType": "HASH"},
        {"AttributeName": "createdAt", "KeyType": "RANGE"},
    ]
    assert indexes["ByOwner"]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    ttl = dynamodb.describe_time_to_live(TableName=direct.table_name)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expiresAt"}


def test_the_bucket_exists(direct: Deployment) -> None:
    assert direct.buckets == {"StateBucket": "cairn-dev-statebucket"}
    client("s3").head_bucket(Bucket="cairn-dev-statebucket")


def test_the_delay_queue_redrives_to_the_dead_letter_queue(direct: Deployment) -> None:
    delay, dead = direct.queues["DelayQueue"], direct.queues["DeadLetterQueue"]
    assert delay.name == "cairn-dev-DelayQueue"
    sqs = client("sqs")
    assert sqs.get_queue_url(QueueName=delay.name)["QueueUrl"] == delay.url
    attributes = sqs.get_queue_attributes(QueueUrl=delay.url, AttributeNames=["All"])["Attributes"]
    assert json.loads(attributes["RedrivePolicy"]) == {"deadLetterTargetArn": dead.arn, "maxReceiveCount": 5}
    assert attributes["VisibilityTimeout"] == "360"
    assert attributes["QueueArn"] == delay.arn
    dead_attributes = sqs.get_queue_attributes(QueueUrl=dead.url, AttributeNames=["MessageRetentionPeriod"])
    assert dead_attributes["Attributes"]["MessageRetentionPeriod"] == "1209600"


def test_the_functions_and_their_environment(direct: Deployment) -> None:
    phases = {f"cairn-dev-document-intake-{phase}": phase for phase in PHASES}
    registered = {f"cairn-dev-{p.name}-{phase}" for p in PIPELINES for phase in p.phase_names}
    assert set(direct.functions) == {"cairn-dev-api", "cairn-dev-scheduler", *registered}
    assert set(phases) <= registered
    for name, phase in phases.items():
        function = direct.functions[name]
        assert function.handler == "phases.handler"
        assert function.code_uri == ROOT / "functions"
        assert function.environment["CAIRN_PIPELINE"] == "document-intake"
        assert function.environment["CAIRN_PHASE"] == phase
        assert function.on_failure == "cairn-dev-scheduler"
        assert function.maximum_retry_attempts == 0
    for function in direct.functions.values():
        environment = function.environment
        assert environment["CAIRN_TABLE_NAME"] == direct.table_name
        assert environment["CAIRN_STATE_BUCKET"] == "cairn-dev-statebucket"
        assert environment["CAIRN_DELAY_QUEUE_URL"] == direct.queues["DelayQueue"].url
        assert environment["CAIRN_FUNCTION_PREFIX"] == "cairn-dev-"
        assert environment["CAIRN_SCHEDULER_FUNCTION"] == "cairn-dev-scheduler"
        assert environment["CAIRN_DRIVER"] == "direct"
        assert environment["CAIRN_STATE_MACHINE_ARN"] == ""
        assert environment["CAIRN_SWEEP_IDLE_SECONDS"] == "600"
        assert all(isinstance(value, str) for value in environment.values())
    extract = direct.functions["cairn-dev-document-intake-extract"]
    assert (extract.timeout, extract.memory) == (900.0, 1024)
    assert direct.functions["cairn-dev-document-intake-fetch"].environment["DOCUMENTS_BUCKET"] == ""
    assert direct.functions["cairn-dev-api"].handler == "api.app.handler"
    assert direct.functions["cairn-dev-api"].maximum_retry_attempts == 2


def test_the_scheduler_polls_the_delay_queue_and_sweeps_every_five_minutes(direct: Deployment) -> None:
    scheduler = direct.functions["cairn-dev-scheduler"]
    assert scheduler.handler == "scheduler.app.handler"
    assert scheduler.on_failure is None
    (source,) = scheduler.sqs_sources
    assert source.queue_url == direct.queues["DelayQueue"].url
    assert source.queue_arn == direct.queues["DelayQueue"].arn
    assert (source.batch_size, source.report_batch_item_failures) == (10, True)
    (schedule,) = scheduler.schedules
    assert schedule.every_seconds == 300


def test_the_api_functions_routes(direct: Deployment) -> None:
    assert direct.api is not None
    assert direct.api.function_name == "cairn-dev-api"
    routes = set(direct.api.routes)
    assert Route("POST", "/jobs", public=False) in routes
    assert Route("GET", "/jobs/{jobId}", public=False) in routes
    assert Route("GET", "/health", public=True) in routes
    assert tuple(direct.api.routes) == direct.functions["cairn-dev-api"].http_routes


def test_resources_only_named_are_listed_as_skipped(direct: Deployment) -> None:
    assert direct.skipped["SchedulerRole"] == "AWS::IAM::Role"
    assert direct.skipped["CairnLayer"] == "AWS::Serverless::LayerVersion"
    assert direct.skipped["HttpApi"] == "AWS::Serverless::HttpApi"
    assert direct.skipped["QueuesPolicy"] == "AWS::SQS::QueuePolicy"
    assert "PipelineStateMachine" not in direct.skipped
    assert "AlarmTopic" not in direct.skipped
    layer = direct.functions["cairn-dev-api"].layers
    assert layer == ("arn:aws:lambda:us-east-1:123456789012:layer:cairn-dev-cairn:1",)


def test_direct_has_no_state_machine(direct: Deployment) -> None:
    assert direct.state_machine is None
    assert client("stepfunctions").list_state_machines()["stateMachines"] == []
    assert direct.parameters["Driver"] == "direct"


def test_stepfunctions_creates_the_state_machine_with_the_schedulers_arn(stepfunctions: Deployment) -> None:
    machine = stepfunctions.state_machine
    assert machine is not None
    assert machine.name == "cairn-dev-pipeline"
    scheduler_arn = "arn:aws:lambda:us-east-1:123456789012:function:cairn-dev-scheduler"
    described = client("stepfunctions").describe_state_machine(stateMachineArn=machine.arn)
    assert described["definition"] == machine.definition
    assert "${" not in machine.definition
    states = json.loads(machine.definition)["States"]
    assert states["ResolveNextPhase"]["Parameters"]["FunctionName"] == scheduler_arn
    for function in stepfunctions.functions.values():
        assert function.environment["CAIRN_STATE_MACHINE_ARN"] == machine.arn
        assert function.environment["CAIRN_DRIVER"] == "stepfunctions"


def test_another_stack_name_renames_everything(aws: None) -> None:
    deployment = deploy(TEMPLATE, client=client, stack_name="Other-Stack")
    assert deployment.table_name == "Other-Stack-CheckpointTable"
    assert deployment.buckets == {"StateBucket": "other-stack-statebucket"}
    assert "Other-Stack-scheduler" in deployment.functions
    assert deployment.functions["Other-Stack-api"].environment["CAIRN_FUNCTION_PREFIX"] == "Other-Stack-"


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"Driver": "fast"}, "Parameter Driver: 'fast' is not one of the allowed values direct, stepfunctions"),
        ({"DocumentsBucket": "Not_A_Bucket"}, "Parameter DocumentsBucket: 'Not_A_Bucket' does not match"),
        ({"ApiAuth": "JWT"}, "Rule JwtNeedsIssuerAndAudience: ApiAuth=JWT needs JwtIssuer."),
    ],
)
def test_bad_parameter_values_are_clear_errors(aws: None, parameters: dict[str, str], message: str) -> None:
    with pytest.raises(ParameterError) as caught:
        deploy(TEMPLATE, client=client, parameters=parameters)
    assert message in str(caught.value)
    assert client("dynamodb").list_tables()["TableNames"] == []


# ---------------------------------------------------------------- a small template for the edge cases

SMALL = """
Transform: AWS::Serverless-2016-10-31
Parameters:
  Mode:
    Type: String
    Default: plain
    AllowedValues: [plain, fancy]
Conditions:
  IsFancy: !Equals [!Ref Mode, fancy]
Globals:
  Function:
    Timeout: 10
    Environment:
      Variables:
        SHARED: !Ref Table
        OVERRIDDEN: global
Resources:
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: !Sub "${AWS::StackName}-jobs"
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions:
        - AttributeName: id
          AttributeType: S
      KeySchema:
        - AttributeName: id
          KeyType: HASH
  Fancy:
    Type: AWS::SQS::Queue
    Condition: IsFancy
    Properties:
      QueueName: fancy-queue
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: code/
      Handler: worker.handler
      Environment:
        Variables:
          OVERRIDDEN: own
          FANCY: !If [IsFancy, !Ref Fancy, !Ref AWS::NoValue]
      Events:
        Nightly:
          Type: Schedule
          Properties:
            Schedule: cron(0 3 * * ? *)
  Plain:
    Type: AWS::Serverless::Function
    Properties:
      FunctionName: plain
      Runtime: python3.12
      CodeUri: .
      Handler: plain.handler
      Timeout: !If [IsFancy, 30, !Ref AWS::NoValue]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "template.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_globals_defaults_and_overrides(aws: None, tmp_path: Path) -> None:
    deployment = deploy(write(tmp_path, SMALL.replace("    Timeout: 10\n", "")), client=client, stack_name="tiny")
    assert deployment.table_name == "tiny-jobs"
    worker = deployment.functions["tiny-Worker"]
    assert worker.code_uri == tmp_path / "code"
    assert worker.environment == {"SHARED": "tiny-jobs", "OVERRIDDEN": "own"}
    assert (worker.timeout, worker.memory, worker.maximum_retry_attempts) == (3.0, 128, 2)
    assert worker.on_failure is None
    (nightly,) = worker.schedules
    assert (nightly.name, nightly.every_seconds, nightly.expression) == ("Nightly", None, "cron(0 3 * * ? *)")
    assert deployment.functions["plain"].timeout == 3.0
    assert deployment.api is None


def test_globals_timeout_applies_unless_the_function_sets_its_own(aws: None, tmp_path: Path) -> None:
    plain = deploy(write(tmp_path, SMALL), client=client).functions
    assert plain["cairn-dev-Worker"].timeout == 10.0
    assert plain["plain"].timeout == 10.0
    fancy = deploy(write(tmp_path, SMALL), client=client, stack_name="f2", parameters={"Mode": "fancy"})
    assert fancy.functions["plain"].timeout == 30.0


def test_a_resource_whose_condition_is_false_is_absent(aws: None, tmp_path: Path) -> None:
    plain = deploy(write(tmp_path, SMALL), client=client)
    assert plain.queues == {}
    assert "Fancy" not in plain.skipped
    assert "FANCY" not in plain.functions["cairn-dev-Worker"].environment
    assert client("sqs").list_queues().get("QueueUrls", []) == []


def test_a_resource_whose_condition_holds_is_created(aws: None, tmp_path: Path) -> None:
    fancy = deploy(write(tmp_path, SMALL), client=client, parameters={"Mode": "fancy"})
    assert fancy.queues["Fancy"].name == "fancy-queue"
    assert fancy.functions["cairn-dev-Worker"].environment["FANCY"] == fancy.queues["Fancy"].url


def test_an_unsupported_intrinsic_names_its_path(aws: None, tmp_path: Path) -> None:
    text = SMALL.replace("OVERRIDDEN: own", "OVERRIDDEN: !ImportValue shared-thing")
    with pytest.raises(ResolutionError) as caught:
        deploy(write(tmp_path, text), client=client)
    assert str(caught.value) == (
        "Resources.Worker.Properties.Environment.Variables.OVERRIDDEN: Fn::ImportValue is not supported here"
    )


def test_an_unknown_reference_names_its_path(aws: None, tmp_path: Path) -> None:
    text = SMALL.replace("OVERRIDDEN: own", "OVERRIDDEN: !GetAtt Missing.Arn")
    with pytest.raises(ResolutionError, match=r"^Resources\.Worker\.Properties\.Environment\.Variables\.OVERRIDDEN"):
        deploy(write(tmp_path, text), client=client)


def test_a_reference_to_an_absent_resource_is_an_error(aws: None, tmp_path: Path) -> None:
    text = SMALL.replace("OVERRIDDEN: own", "OVERRIDDEN: !Ref Fancy")
    with pytest.raises(ResolutionError, match="Fancy is absent"):
        deploy(write(tmp_path, text), client=client)


def test_a_state_machine_placeholder_without_substitution_is_an_error(aws: None, tmp_path: Path) -> None:
    machine = {"StartAt": "A", "States": {"A": {"Type": "Pass", "Comment": "${Who}", "End": True}}}
    (tmp_path / "machine.json").write_text(json.dumps(machine), encoding="utf-8")
    text = SMALL + (
        "  Machine:\n"
        "    Type: AWS::Serverless::StateMachine\n"
        "    Properties:\n"
        "      DefinitionUri: machine.json\n"
        "      DefinitionSubstitutions:\n"
        "        Other: !GetAtt Plain.Arn\n"
    )
    with pytest.raises(
        DeploymentError, match=r"DefinitionSubstitutions: the definition's \$\{Who\} has no substitution"
    ):
        deploy(write(tmp_path, text), client=client)


def test_the_queue_a_redrive_policy_names_is_created_first(aws: None, tmp_path: Path) -> None:
    text = SMALL + (
        "  Main:\n"
        "    Type: AWS::SQS::Queue\n"
        "    Properties:\n"
        "      RedrivePolicy:\n"
        "        deadLetterTargetArn: !GetAtt Later.Arn\n"
        "        maxReceiveCount: 3\n"
        "  Later:\n"
        "    Type: AWS::SQS::Queue\n"
        "    Properties:\n"
        "      FifoQueue: false\n"
    )
    deployment = deploy(write(tmp_path, text), client=client)
    assert list(deployment.queues) == ["Later", "Main"]
    main = deployment.queues["Main"]
    attributes = client("sqs").get_queue_attributes(QueueUrl=main.url, AttributeNames=["RedrivePolicy"])["Attributes"]
    assert json.loads(attributes["RedrivePolicy"])["deadLetterTargetArn"] == deployment.queues["Later"].arn
