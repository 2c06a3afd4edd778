"""The stack in production, on the template as ``sam deploy`` creates it: nothing dropped silently, limits
that protect the account, signals an on-call engineer can act on, data protection and safe deploys.

Each test reads the transformed template (the SAM transform after the language extensions) for the
parameter values it names; tests/functional/test_dev_deployment.py and tests/local/test_direct.py
create the same stack on moto's CloudFormation.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from cairn.bundle.templating import resources
from cairn.bundle.templating.parameters import ParameterError
from cairn.bundle.templating.parameters import check as check_parameters
from cairn.core.outcomes import Next
from cairn.core.pipeline import Pipeline
from cairn.core.settings import OWNER_CONCURRENCY, Settings
from cairn.features.owner_share import MAX_OWNER_LIMIT
from pipelines import PIPELINES
from tests.template.cfn import ROOT, load_yaml_template
from tests.template.stacks import phase_functions, stack
from tests.template.test_functions import invoke_config

OPERATIONS = ROOT / "docs" / "OPERATIONS.md"


# -- nothing is dropped


def test_the_scheduler_keeps_what_it_failed_on_three_times_in_its_own_queue() -> None:
    resolver = stack()
    config = invoke_config(resolver, "SchedulerFunction")
    assert config["Qualifier"] == "live"
    assert config["MaximumRetryAttempts"] == 2
    destination = config["DestinationConfig"]["OnFailure"]["Destination"]
    assert destination == resolver.arn("SchedulerDeadLetterQueue")
    queue = resolver.properties("SchedulerDeadLetterQueue")
    assert queue["MessageRetentionPeriod"] == 14 * 24 * 3600
    assert queue["SqsManagedSseEnabled"] is True
    outputs = resolver.resolve(resolver.template["Outputs"])
    assert outputs["SchedulerDeadLetterQueueUrl"]["Value"] == resolver.ref("SchedulerDeadLetterQueue")
    assert outputs["SchedulerFunctionName"]["Value"] == resolver.name("SchedulerFunction")


def test_the_sweep_runs_on_the_schedule_and_batch_the_parameters_give() -> None:
    resolver = stack(SweepSchedule="rate(2 minutes)", SweepBatchSize="25")
    (rule,) = [
        rule_id
        for rule_id in resolver.of_type("AWS::Events::Rule")
        if resolver.properties(rule_id)["Targets"][0]["Arn"] == resolver.arn("SchedulerFunction") + ":live"
    ]
    assert resolver.properties(rule)["ScheduleExpression"] == "rate(2 minutes)"
    variables = resolver.properties("SchedulerFunction")["Environment"]["Variables"]
    assert Settings.from_env(variables).sweep_batch == 25
    assert stack().properties(rule)["ScheduleExpression"] == "rate(5 minutes)"


# -- limits


def test_phase_functions_are_unreserved_unless_the_stack_or_the_phase_says() -> None:
    default, reserved = stack(), stack(PhaseReservedConcurrency="7")
    for function_id in phase_functions(default).values():
        assert "ReservedConcurrentExecutions" not in default.properties(function_id), function_id
        assert reserved.properties(function_id)["ReservedConcurrentExecutions"] == "7", function_id
    for front in ("SchedulerFunction", "ApiFunction"):
        assert "ReservedConcurrentExecutions" not in reserved.properties(front)


def test_a_phase_that_declares_its_reserved_concurrency_keeps_it_whatever_the_stack_says() -> None:
    pipeline: Pipeline[Any] = Pipeline("capped")
    pipeline.phase(name="hot", reserved_concurrency=3)(lambda ctx: Next("hot", ctx.state))
    pipeline.phase(name="cold")(lambda ctx: Next("cold", ctx.state))
    hot = resources.function(pipeline, pipeline.get_phase("hot"))["Properties"]
    cold = resources.function(pipeline, pipeline.get_phase("cold"))["Properties"]
    assert hot["ReservedConcurrentExecutions"] == 3
    assert cold["ReservedConcurrentExecutions"]["Fn::If"][0] == "HasPhaseReservedConcurrency"


@pytest.mark.parametrize("bad", [-1, 10_001, 2.5, True, "5"])
def test_a_reserved_concurrency_lambda_refuses_is_refused_at_registration(bad: Any) -> None:
    pipeline: Pipeline[Any] = Pipeline("capped")
    with pytest.raises(Exception, match="reserved_concurrency must be a whole number from 0 to 10000"):
        pipeline.phase(name="hot", reserved_concurrency=bad)(lambda ctx: Next("hot", ctx.state))


def test_the_stack_wide_limits_reach_every_function() -> None:
    resolver = stack(MaxTransitions="5000", MaxMapConcurrency="20")
    for function_id in resolver.of_type("AWS::Lambda::Function"):
        variables = resolver.properties(function_id)["Environment"]["Variables"]
        assert variables["CAIRN_MAX_TRANSITIONS"] == "5000", function_id
        assert variables["CAIRN_MAX_MAP_CONCURRENCY"] == "20", function_id
    unset = stack().properties("SchedulerFunction")["Environment"]["Variables"]
    assert unset["CAIRN_MAX_TRANSITIONS"] == unset["CAIRN_MAX_MAP_CONCURRENCY"] == ""


@pytest.mark.parametrize("bad", ["1.5", "two", "-1", str(MAX_OWNER_LIMIT + 1), "1e3", ""])
def test_the_owner_share_is_a_whole_number_the_functions_accept_or_the_stack_is_refused(bad: str) -> None:
    template = load_yaml_template()
    with pytest.raises(ParameterError, match="OwnerConcurrency"):
        check_parameters(template, {"OwnerConcurrency": bad})
    for good in ("0", "1", str(MAX_OWNER_LIMIT)):
        check_parameters(template, {"OwnerConcurrency": good})
        assert Settings.from_env({OWNER_CONCURRENCY: good}).owner_concurrency == int(good)
    variables = stack(OwnerConcurrency="3").properties("SchedulerFunction")["Environment"]["Variables"]
    assert variables[OWNER_CONCURRENCY] == "3"


@pytest.mark.parametrize(
    ("overrides", "share"),
    [
        ({}, "0"),
        ({"Stage": "prod", "AlarmEmail": "oncall@example.com"}, "100"),
        ({"Stage": "prod", "AlarmEmail": "oncall@example.com", "OwnerConcurrency": "0"}, "0"),
        ({"Stage": "prod", "AlarmEmail": "oncall@example.com", "OwnerConcurrency": "7"}, "7"),
    ],
)
def test_the_owner_share_is_on_in_prod_unless_the_deployer_says(overrides: dict[str, str], share: str) -> None:
    resolver = stack(**overrides)
    for function_id in resolver.of_type("AWS::Lambda::Function"):
        variables = resolver.properties(function_id)["Environment"]["Variables"]
        assert variables[OWNER_CONCURRENCY] == share, function_id
    assert Settings.from_env({OWNER_CONCURRENCY: share}).owner_concurrency == int(share)


def test_the_api_counts_each_owners_starts_at_the_rate_the_stack_gives() -> None:
    variables = stack().properties("ApiFunction")["Environment"]["Variables"]
    assert Settings.from_env(variables).owner_starts_per_minute == 600
    variables = stack(OwnerStartsPerMinute="0").properties("ApiFunction")["Environment"]["Variables"]
    assert Settings.from_env(variables).owner_starts_per_minute == 0
    with pytest.raises(ParameterError, match="OwnerStartsPerMinute"):
        check_parameters(load_yaml_template(), {"OwnerStartsPerMinute": "-5"})


# -- signals


def test_the_api_writes_a_json_access_log_line_with_the_request_id_and_the_caller() -> None:
    resolver = stack()
    (stage,) = resolver.of_type("AWS::ApiGatewayV2::Stage")
    settings = resolver.properties(stage)["AccessLogSettings"]
    assert settings["DestinationArn"] == resolver.arn("ApiAccessLogGroup")
    line = json.loads(settings["Format"])
    assert line["requestId"] == "$context.requestId"
    assert line["userArn"] == "$context.identity.userArn"  # the IAM caller
    assert line["jwtSubject"] == "$context.authorizer.claims.sub"  # the JWT caller
    assert line["status"] == "$context.status"
    assert resolver.properties("ApiAccessLogGroup")["RetentionInDays"] == "30"  # LogRetentionDays


@pytest.mark.parametrize("level", ["ERROR", "ALL"])
def test_the_state_machine_logs_at_the_level_the_parameter_gives_without_execution_data(level: str) -> None:
    resolver = stack(Driver="stepfunctions", StepFunctionsLogLevel=level)
    (machine,) = resolver.of_type("AWS::StepFunctions::StateMachine")
    logging = resolver.properties(machine)["LoggingConfiguration"]
    assert logging["Level"] == level
    assert logging["IncludeExecutionData"] is False
    (destination,) = logging["Destinations"]
    assert destination["CloudWatchLogsLogGroup"]["LogGroupArn"] == resolver.arn("StateMachineLogGroup")
    assert not stack(Driver="direct").exists("StateMachineLogGroup")


def test_every_alarm_names_a_runbook_section_that_exists() -> None:
    text = OPERATIONS.read_text(encoding="utf-8")
    named = set(re.findall(r"\*\*Alarm:\*\* `(\w+)`", text))
    resolver = stack(Driver="stepfunctions")
    for alarm_id in resolver.of_type("AWS::CloudWatch::Alarm"):
        description = resolver.properties(alarm_id)["AlarmDescription"]
        (section,) = re.findall(r"Runbook: docs/OPERATIONS\.md, (\w+)\.", description)
        assert section in named, (alarm_id, section)


@pytest.mark.parametrize("driver", ["direct", "stepfunctions"])
def test_the_dashboard_shows_jobs_phase_durations_and_every_alarm_of_the_stack(driver: str) -> None:
    resolver = stack(Driver=driver)
    dashboard = resolver.properties("StackDashboard")
    assert dashboard["DashboardName"] == "cairn-test-cairn"
    body = json.loads(dashboard["DashboardBody"])
    shown = [widget["properties"] for widget in body["widgets"]]
    (alarms,) = [widget["alarms"] for widget in shown if "alarms" in widget]
    assert sorted(alarms) == sorted(resolver.arn(alarm_id) for alarm_id in resolver.of_type("AWS::CloudWatch::Alarm"))
    metrics = [metric for widget in shown for metric in widget.get("metrics", [])]
    own = {metric[1] for metric in metrics if metric[0] == "cairn/cairn-test"}
    assert {"JobsStarted", "JobsCompleted", "JobsFailed", "StalledJobs"} <= own
    durations = {metric[3] for metric in metrics if metric[:2] == ["AWS/Lambda", "Duration"]}
    assert durations == {resolver.name(function_id) for function_id in phase_functions(resolver).values()}


def _own_metric(resolver: Any, metric: dict[str, Any]) -> tuple[str, str, dict[str, str]]:
    """(namespace, name, dimensions) of an alarm's metric, resolved."""
    resolved = resolver.resolve(metric)
    return resolved["Namespace"], resolved["MetricName"], {d["Name"]: d["Value"] for d in resolved["Dimensions"]}


@pytest.mark.parametrize("driver", ["direct", "stepfunctions"])
def test_failed_jobs_alarm_on_the_count_the_functions_emit_on_every_driver(driver: str) -> None:
    resolver = stack(Driver=driver)
    variables = resolver.properties("SchedulerFunction")["Environment"]["Variables"]
    emitted = (variables["POWERTOOLS_METRICS_NAMESPACE"], {"service": variables["POWERTOOLS_SERVICE_NAME"]})
    count = resolver.properties("FailedJobsAlarm")
    namespace, name, dimensions = _own_metric(resolver, count)
    assert (namespace, dimensions) == emitted
    assert name == "JobsFailed"
    assert (count["Statistic"], count["Period"], count["ComparisonOperator"]) == ("Sum", 300, "GreaterThanThreshold")
    assert count["Threshold"] == "0"  # any failed job, by default
    assert stack(FailedJobsThreshold="25").properties("FailedJobsAlarm")["Threshold"] == "25"

    rate = resolver.properties("JobFailureRateAlarm")
    assert rate["Threshold"] == "10"
    read = {metric["Id"]: metric for metric in rate["Metrics"]}
    assert [metric["Id"] for metric in rate["Metrics"] if metric["ReturnData"]] == ["rate"]
    assert read["rate"]["Expression"] == "IF(ended >= 10, 100 * FILL(failed, 0) / ended, 0)"
    assert read["ended"]["Expression"] == "FILL(failed, 0) + FILL(completed, 0)"
    for metric_id, metric_name in (("failed", "JobsFailed"), ("completed", "JobsCompleted")):
        assert _own_metric(resolver, read[metric_id]["MetricStat"]["Metric"]) == (*emitted[:1], metric_name, emitted[1])
    assert stack(FailedJobsPercent="50").properties("JobFailureRateAlarm")["Threshold"] == "50"


@pytest.mark.parametrize(
    ("overrides", "refused"),
    [
        ({"Stage": "prod"}, True),
        ({"Stage": "prod", "AlarmEmail": "oncall@example.com"}, False),
        ({"Stage": "prod", "AlarmTopicArn": "arn:aws:sns:eu-west-1:123456789012:oncall"}, False),
        ({"Stage": "dev"}, False),
        ({}, False),
    ],
)
def test_a_prod_stack_needs_somewhere_for_its_alarms_to_go(overrides: dict[str, str], refused: bool) -> None:
    template = load_yaml_template()
    if refused:
        with pytest.raises(ParameterError, match="Stage=prod needs AlarmEmail or AlarmTopicArn"):
            check_parameters(template, overrides)
    else:
        check_parameters(template, overrides)


# -- data protection


@pytest.mark.parametrize(
    ("overrides", "protected"),
    [
        ({}, False),
        ({"Stage": "prod"}, True),
        ({"Stage": "prod", "TableDeletionProtection": "disabled"}, False),
        ({"TableDeletionProtection": "enabled"}, True),
    ],
)
def test_the_table_is_protected_from_deletion_in_prod_by_default(overrides: dict[str, str], protected: bool) -> None:
    table = stack(**overrides).properties("CheckpointTable")
    assert table["DeletionProtectionEnabled"] is protected


def test_samconfig_deploys_prod_with_stage_prod() -> None:
    text = (ROOT / "samconfig.toml").read_text(encoding="utf-8")
    prod = text.split("[prod.global.parameters]", 1)[1].split("\n[", 1)[0]
    assert "Stage=prod" in prod


def test_the_bucket_keeps_old_versions_a_while_and_the_alarm_topic_is_encrypted() -> None:
    resolver = stack(AlarmEmail="oncall@example.com")
    assert resolver.properties("StateBucket")["VersioningConfiguration"] == {"Status": "Enabled"}
    topic = resolver.properties("AlarmTopic")
    assert topic["KmsMasterKeyId"] == resolver.ref("AlarmTopicKey")
    key = resolver.properties("AlarmTopicKey")
    assert key["EnableKeyRotation"] is True
    publishers = [
        statement
        for statement in key["KeyPolicy"]["Statement"]
        if statement["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    ]
    (publisher,) = publishers
    assert set(publisher["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}
    assert not stack().exists("AlarmTopicKey")


KEY = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def test_customer_managed_keys_encrypt_what_they_name_and_the_functions_use_them_through_the_service() -> None:
    default = stack()
    assert default.properties("CheckpointTable")["SSESpecification"] == {"SSEEnabled": True}
    (rule,) = default.properties("StateBucket")["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule == {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    keyed = stack(TableKmsKeyArn=KEY, BucketKmsKeyArn=KEY + "b", LogsKmsKeyArn=KEY + "c")
    table = keyed.properties("CheckpointTable")["SSESpecification"]
    assert table == {"SSEEnabled": True, "SSEType": "KMS", "KMSMasterKeyId": KEY}
    (rule,) = keyed.properties("StateBucket")["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": KEY + "b"}
    assert rule["BucketKeyEnabled"] is True
    statements = {
        statement["Sid"]: statement for statement in keyed.properties("JobStorePolicy")["PolicyDocument"]["Statement"]
    }
    assert statements["TableKey"]["Resource"] == KEY
    assert statements["TableKey"]["Condition"] == {
        "StringEquals": {"kms:ViaService": "dynamodb.us-east-1.amazonaws.com"}
    }
    assert statements["BucketKey"]["Resource"] == KEY + "b"
    assert statements["BucketKey"]["Condition"] == {"StringEquals": {"kms:ViaService": "s3.us-east-1.amazonaws.com"}}
    assert {"TableKey", "BucketKey"}.isdisjoint(
        statement["Sid"] for statement in default.properties("JobStorePolicy")["PolicyDocument"]["Statement"]
    )
    for group in keyed.of_type("AWS::Logs::LogGroup"):
        assert keyed.properties(group)["KmsKeyId"] == KEY + "c", group
        assert "KmsKeyId" not in default.properties(group), group
    with pytest.raises(ParameterError, match="TableKmsKeyArn"):
        check_parameters(load_yaml_template(), {"TableKmsKeyArn": "alias/my-key"})


def test_every_log_group_keeps_its_events_as_long_as_the_stack_says() -> None:
    for days, resolver in ((30, stack()), (365, stack(LogRetentionDays="365"))):
        groups = list(resolver.of_type("AWS::Logs::LogGroup"))
        assert len(groups) >= 13
        assert {str(resolver.properties(group)["RetentionInDays"]) for group in groups} == {str(days)}
    with pytest.raises(ParameterError, match="LogRetentionDays"):
        check_parameters(load_yaml_template(), {"LogRetentionDays": "45"})


# -- safe deploys


def test_every_phase_function_is_invoked_through_its_live_alias() -> None:
    resolver = stack()
    aliases = {}
    for alias_id in resolver.of_type("AWS::Lambda::Alias"):
        alias = resolver.resources[alias_id]["Properties"]
        version = alias["FunctionVersion"]["Fn::GetAtt"][0]  # the version SAM publishes of this very function
        assert resolver.resources[version]["Properties"]["FunctionName"] == alias["FunctionName"]
        aliases[alias["FunctionName"]["Ref"]] = alias["Name"]
    functions = phase_functions(resolver)
    assert aliases == dict.fromkeys([*functions.values(), "SchedulerFunction", "ApiFunction"], "live")
    variables = resolver.properties("SchedulerFunction")["Environment"]["Variables"]
    settings = Settings.from_env(variables)
    for key, function_id in functions.items():
        assert settings.phase_function(*key) == f"{resolver.name(function_id)}:live"
    assert settings.scheduler_function == f"{resolver.name('SchedulerFunction')}:live"
    granted = resolver.properties("InvokeFunctionsPolicy")["PolicyDocument"]["Statement"][0]["Resource"]
    assert sorted(granted) == sorted(
        f"{resolver.arn(function_id)}:live" for function_id in [*functions.values(), "SchedulerFunction"]
    )


@pytest.mark.parametrize("driver", ["direct", "stepfunctions"])
def test_everything_that_invokes_the_scheduler_invokes_its_live_alias(driver: str) -> None:
    resolver = stack(Driver=driver)
    alias = resolver.arn("SchedulerFunction") + ":live"
    mappings = list(resolver.of_type("AWS::Lambda::EventSourceMapping"))
    assert len(mappings) == 2
    for mapping in mappings:  # the delay queue, the table's stream
        assert resolver.properties(mapping)["FunctionName"] == alias
    sweeps = [
        rule for rule in resolver.of_type("AWS::Events::Rule") if "ScheduleExpression" in resolver.properties(rule)
    ]
    assert [resolver.properties(rule)["Targets"][0]["Arn"] for rule in sweeps] == [alias]
    for function_id in phase_functions(resolver).values():  # crash reports
        assert invoke_config(resolver, function_id)["DestinationConfig"]["OnFailure"]["Destination"] == alias
    if driver == "stepfunctions":
        substitutions = resolver.properties("PipelineStateMachine")["DefinitionSubstitutions"]
        assert substitutions["SchedulerFunctionArn"] == alias


@pytest.mark.parametrize(
    ("overrides", "scheduler", "api"),
    [
        ({}, None, None),
        ({"Stage": "prod", "AlarmEmail": "oncall@example.com"}, 20, None),
        ({"Stage": "prod", "AlarmEmail": "oncall@example.com", "SchedulerReservedConcurrency": ""}, None, None),
        ({"SchedulerReservedConcurrency": "5", "ApiReservedConcurrency": "30"}, "5", "30"),
    ],
)
def test_the_scheduler_is_reserved_in_prod_and_the_api_when_asked(
    overrides: dict[str, str], scheduler: object, api: object
) -> None:
    resolver = stack(**overrides)
    assert resolver.properties("SchedulerFunction").get("ReservedConcurrentExecutions") == scheduler
    assert resolver.properties("ApiFunction").get("ReservedConcurrentExecutions") == api


def test_the_scheduler_and_the_api_deploy_gradually_and_roll_back_on_their_alarms() -> None:
    resolver = stack(GradualDeployment="Linear10PercentEvery1Minute")
    for function_id, own in (("SchedulerFunction", "SchedulerErrorsAlarm"), ("ApiFunction", "ApiServerErrorsAlarm")):
        group = resolver.properties(f"{function_id}DeploymentGroup")
        assert group["DeploymentConfigName"] == "CodeDeployDefault.LambdaLinear10PercentEvery1Minute"
        alarms = {alarm["Name"] for alarm in group["AlarmConfiguration"]["Alarms"]}
        assert alarms == {resolver.name(own), resolver.name("JobFailureRateAlarm")}


def test_no_gradual_deployment_by_default_and_codedeploy_with_the_errors_alarms_when_asked() -> None:
    assert list(stack().of_type("AWS::CodeDeploy::DeploymentGroup")) == []
    resolver = stack(GradualDeployment="Canary10Percent5Minutes")
    functions = phase_functions(resolver)
    groups = {
        group_id: resolver.properties(group_id) for group_id in resolver.of_type("AWS::CodeDeploy::DeploymentGroup")
    }
    assert set(groups) == {
        f"{function_id}DeploymentGroup" for function_id in [*functions.values(), "SchedulerFunction", "ApiFunction"]
    }
    for (pipeline, _), function_id in functions.items():
        group = groups[f"{function_id}DeploymentGroup"]
        assert group["DeploymentConfigName"] == "CodeDeployDefault.LambdaCanary10Percent5Minutes"
        alarms = {alarm["Name"] for alarm in group["AlarmConfiguration"]["Alarms"]}
        errors = [*resources.alarm_ids(PIPELINES.get(pipeline), resources.ERRORS), "JobFailureRateAlarm"]
        assert alarms == {resolver.name(alarm_id) for alarm_id in errors}
        assert "DEPLOYMENT_STOP_ON_ALARM" in group["AutoRollbackConfiguration"]["Events"]
