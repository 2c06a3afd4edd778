"""The functions as deployed: the code they run, the settings they read, how failures and delays reach the scheduler."""

from __future__ import annotations

import importlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cairn.aws.api_auth import PUBLIC_ROUTES
from cairn.aws.dynamodb import schema as dynamodb_schema
from cairn.aws.phase_handler import phase_from_environment
from cairn.core import settings as settings_module
from cairn.core.settings import NOT_DEPLOYED, PHASE, PIPELINE, Settings
from cairn.dev.event_filters import parse, passes
from pipelines import PIPELINES
from tests.template.cfn import (
    STACK,
    STATE_MACHINE,
    TEMPLATE,
    Resolver,
    apply_language_extensions,
    parameter_values,
    sam_template,
    sam_transform,
)
from tests.template.stacks import DEPLOYMENTS, JWT, phase_functions, registered_phases, stack

ROUTES = {
    ("post", "/bulk"),
    ("get", "/bulk/{bulkId}"),
    ("get", "/bulk/{bulkId}/jobs"),
    ("post", "/jobs"),
    ("get", "/jobs"),
    ("get", "/jobs/counts"),
    ("get", "/failures"),
    ("get", "/jobs/{jobId}"),
    ("get", "/jobs/{jobId}/log"),
    ("get", "/jobs/{jobId}/history"),
    ("get", "/jobs/{jobId}/states/{phase}"),
    ("get", "/jobs/{jobId}/diff"),
    ("get", "/jobs/{jobId}/maps"),
    ("get", "/jobs/{jobId}/maps/{mapId}/items/{index}"),
    ("post", "/jobs/{jobId}/retry"),
    ("post", "/jobs/{jobId}/pause"),
    ("post", "/jobs/{jobId}/cancel"),
    ("post", "/jobs/{jobId}/nudge"),
    ("post", "/jobs/{jobId}/signals/{name}"),
    ("get", "/pipelines"),
    ("get", "/health"),
    ("get", "/openapi.json"),
    ("get", "/health/deep"),
    ("get", "/dashboard"),
    ("get", "/assets/{file}"),
}


def setting_names() -> set[str]:
    """Every environment variable cairn.core.settings reads (its CAIRN_* constants) but the phase functions' own.

    ``CAIRN_PIPELINE`` and ``CAIRN_PHASE`` name the phase a phase function runs: the registry tests check them;
    ``NOT_DEPLOYED`` are read but never set by the template.
    """
    names = {
        value
        for name, value in vars(settings_module).items()
        if name.isupper() and isinstance(value, str) and value.startswith("CAIRN_")
    } - {PIPELINE, PHASE, *NOT_DEPLOYED}
    assert len(names) >= 11, "cairn.core.settings constants were not found"
    return names


def environment(resolver: Resolver, function_id: str) -> dict[str, str]:
    variables: dict[str, str] = resolver.properties(function_id)["Environment"]["Variables"]
    return variables


def invoke_config(resolver: Resolver, function_id: str) -> dict[str, Any]:
    (config,) = [
        resolver.properties(config_id)
        for config_id in resolver.of_type("AWS::Lambda::EventInvokeConfig")
        if resolver.resources[config_id]["Properties"]["FunctionName"] == {"Ref": function_id}
    ]
    return config


# -- (f) crashes go to the scheduler


@pytest.mark.parametrize("overrides", DEPLOYMENTS)
def test_every_phase_function_reports_a_failed_invocation_to_the_scheduler_without_retrying(
    overrides: dict[str, str],
) -> None:
    resolver = stack(**overrides)
    for function_id in phase_functions(resolver).values():
        config = invoke_config(resolver, function_id)
        assert config["MaximumRetryAttempts"] == 0, function_id
        assert config["Qualifier"] == "live", function_id  # the alias every phase function is invoked through
        scheduler = resolver.arn("SchedulerFunction") + ":live"  # the scheduler's alias, as everything invokes it
        assert config["DestinationConfig"]["OnFailure"] == {"Destination": scheduler}


def test_every_registered_phase_has_a_function_whose_handler_runs_that_phase() -> None:
    resolver = stack()
    functions = phase_functions(resolver)
    assert set(functions) == set(registered_phases())
    for (pipeline_name, phase), function_id in functions.items():
        module, attribute = resolver.properties(function_id)["Handler"].rsplit(".", 1)
        assert callable(getattr(importlib.import_module(module), attribute)), function_id
        pipeline, runs = phase_from_environment(PIPELINES, environment(resolver, function_id))
        assert (pipeline.name, runs) == (pipeline_name, phase), function_id


def test_no_function_runs_a_phase_the_registry_does_not_have() -> None:
    resolver = stack()
    phase_function_ids = {
        function_id
        for function_id in resolver.of_type("AWS::Lambda::Function")
        if PHASE in resolver.properties(function_id).get("Environment", {}).get("Variables", {})
    }
    assert phase_function_ids == set(phase_functions(resolver).values())


@pytest.mark.parametrize("overrides", [{}, {"DocumentsBucket": "cairn-documents"}])
def test_every_phase_function_has_the_timeout_memory_and_environment_its_phase_declares(
    overrides: dict[str, str],
) -> None:
    resolver = stack(**overrides)
    for key, function_id in phase_functions(resolver).items():
        _, phase = registered_phases()[key]
        function = resolver.properties(function_id)
        assert (function["Timeout"], function["MemorySize"]) == (phase.function.timeout, phase.function.memory), key
        declared = resolver.resolve(dict(phase.function.environment))
        assert declared.items() <= environment(resolver, function_id).items(), key


def test_every_handler_in_the_template_imports_and_is_callable() -> None:
    resolver = stack()
    for function_id in resolver.of_type("AWS::Lambda::Function"):
        module, attribute = resolver.properties(function_id)["Handler"].rsplit(".", 1)
        assert callable(getattr(importlib.import_module(module), attribute)), function_id


def test_no_phase_function_outlives_its_claim() -> None:
    """A worker still running after its lease could be taken over; Lambda's timeout must end it first."""
    resolver = stack()
    for key, function_id in phase_functions(resolver).items():
        timeout = resolver.properties(function_id)["Timeout"]
        assert timeout <= registered_phases()[key][1].lease_seconds, key


def test_the_state_machine_waits_longer_than_the_longest_phase() -> None:
    resolver = stack()
    longest = max(resolver.properties(function_id)["Timeout"] for function_id in phase_functions(resolver).values())
    states = json.loads(STATE_MACHINE.read_text(encoding="utf-8"))["States"]
    phase_tasks = [
        state
        for state in states.values()
        if "FunctionName.$" in state.get("Parameters", {}) and state["Type"] == "Task"
    ]
    assert phase_tasks, "no task invokes the function resolve names"
    for task in phase_tasks:
        assert task["TimeoutSeconds"] > longest


# -- (g) settings


@pytest.mark.parametrize("overrides", DEPLOYMENTS)
def test_every_function_gets_every_setting_cairn_reads(overrides: dict[str, str]) -> None:
    resolver = stack(**overrides)
    for function_id in resolver.of_type("AWS::Lambda::Function"):
        variables = environment(resolver, function_id)
        missing = setting_names() - set(variables)
        assert missing == set(), function_id
        empty = {name for name in setting_names() if variables[name] == ""}
        # empty by default: the stack's ceilings (each pipeline's and each map's own apply), the direct driver's ARN
        # the price table's region and override file (the shipped us-east-1 prices apply), and the stack's redaction
        # (each pipeline's own applies)
        unset = {"CAIRN_MAX_TRANSITIONS", "CAIRN_MAX_MAP_CONCURRENCY", "CAIRN_PRICE_REGION", "CAIRN_PRICES"}
        unset |= {"CAIRN_REDACT"}
        unset |= {"CAIRN_STATE_MACHINE_ARN"} if overrides["Driver"] == "direct" else set()
        assert empty <= unset, function_id


@pytest.mark.parametrize("driver", ["direct", "stepfunctions"])
def test_the_settings_name_the_resources_of_the_stack(driver: str) -> None:
    resolver = stack(Driver=driver)
    functions = phase_functions(resolver)
    for function_id in resolver.of_type("AWS::Lambda::Function"):
        settings = Settings.from_env(environment(resolver, function_id))
        assert settings.driver == driver
        assert settings.table_name == resolver.ref("CheckpointTable")
        assert settings.state_bucket == resolver.ref("StateBucket")
        assert settings.delay_queue_url == resolver.ref("DelayQueue")
        assert settings.scheduler_function == f"{resolver.name('SchedulerFunction')}:live"
        for key, phase_id in functions.items():
            assert settings.phase_function(*key) == f"{resolver.name(phase_id)}:live"
        if driver == "stepfunctions":
            assert settings.state_machine_arn == resolver.ref("PipelineStateMachine")
        else:
            assert settings.state_machine_arn is None
            assert not resolver.exists("PipelineStateMachine")


def test_the_settings_follow_the_parameters() -> None:
    resolver = stack(SweepIdleSeconds="900", LogLevel="DEBUG", CheckpointTtlHours="48")
    variables = environment(resolver, "SchedulerFunction")
    assert Settings.from_env(variables).sweep_idle_seconds == 900
    assert variables["POWERTOOLS_LOG_LEVEL"] == variables["LOG_LEVEL"] == "DEBUG"
    assert variables["CAIRN_CHECKPOINT_TTL_HOURS"] == "48"
    assert variables["POWERTOOLS_SERVICE_NAME"] == "cairn"
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "cairn/cairn-test"  # one namespace per stack


def test_the_state_machine_arn_is_built_without_a_reference_to_it() -> None:
    """The scheduler's environment cannot Ref the state machine, which refers to the scheduler."""
    globals_env = sam_template()["Globals"]["Function"]["Environment"]["Variables"]
    assert "PipelineStateMachine" not in json.dumps(globals_env)
    machine = sam_template()["Resources"]["PipelineStateMachine"]["Properties"]
    assert machine["DefinitionSubstitutions"] == {"SchedulerFunctionArn": {"Ref": "SchedulerFunctionAliaslive"}}


# -- code, architecture, layer


@pytest.mark.parametrize("architecture", ["arm64", "x86_64"])
def test_functions_and_layer_share_runtime_and_architecture(architecture: str) -> None:
    resolver = stack(Architecture=architecture)
    (layer_id,) = resolver.of_type("AWS::Lambda::LayerVersion")
    layer = resolver.properties(layer_id)
    assert layer["CompatibleArchitectures"] == [architecture]
    for function_id in resolver.of_type("AWS::Lambda::Function"):
        function = resolver.properties(function_id)
        assert function["Architectures"] == [architecture]
        assert function["Runtime"] in layer["CompatibleRuntimes"]
        assert function["Layers"] == [resolver.ref(layer_id)]
        assert function["TracingConfig"] == {"Mode": "Active"}
    source = sam_template()["Resources"]["CairnLayer"]
    assert source["Properties"]["ContentUri"] == "layers/"  # built by layers/Makefile (plain sam build)
    assert source["Metadata"]["BuildMethod"] == "makefile"
    assert source["Metadata"]["BuildArchitecture"] == {"Ref": "Architecture"}
    assert source["Metadata"]["WorkingDirectory"] == {"Fn::Sub": "layers/${Architecture}"}


def test_every_function_logs_to_its_own_group_with_a_retention() -> None:
    resolver = stack()
    for function_id in resolver.of_type("AWS::Lambda::Function"):
        group = resolver.properties(function_id)["LoggingConfig"]["LogGroup"]
        assert group == f"/aws/lambda/{resolver.name(function_id)}"
    for group_id in resolver.of_type("AWS::Logs::LogGroup"):
        assert int(resolver.properties(group_id)["RetentionInDays"]) > 0


# -- the scheduler's events and the delay queue


def event_source_mappings(resolver: Resolver) -> dict[str, dict[str, Any]]:
    """The stack's event source mappings, by the service of their source (``sqs``, ``dynamodb``)."""
    mappings = [resolver.properties(mapping_id) for mapping_id in resolver.of_type("AWS::Lambda::EventSourceMapping")]
    by_service = {str(mapping["EventSourceArn"]).split(":")[2]: mapping for mapping in mappings}
    assert len(by_service) == len(mappings), "one mapping per service"
    return by_service


def test_the_scheduler_takes_delayed_advances_in_batches_with_partial_failures() -> None:
    resolver = stack()
    mapping = event_source_mappings(resolver)["sqs"]
    assert mapping["FunctionName"] == resolver.arn("SchedulerFunction") + ":live"
    assert mapping["EventSourceArn"] == resolver.arn("DelayQueue")
    assert mapping["BatchSize"] == 10
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_the_scheduler_reads_the_job_items_changes_from_the_tables_stream_and_loses_none() -> None:
    resolver = stack()
    mapping = event_source_mappings(resolver)["dynamodb"]
    assert mapping["FunctionName"] == resolver.arn("SchedulerFunction") + ":live"
    assert mapping["EventSourceArn"] == resolver.get_att("CheckpointTable", "StreamArn")
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["MaximumRetryAttempts"] > 0  # retried, then its record kept in the dead-letter queue
    assert mapping["DestinationConfig"] == {"OnFailure": {"Destination": resolver.arn("SchedulerDeadLetterQueue")}}
    (only,) = [parse(item["Pattern"]) for item in mapping["FilterCriteria"]["Filters"]]

    def record(sk: str) -> dict[str, Any]:
        keys = {"pk": {"S": dynamodb_schema.job_pk("alice", "j1")}, "sk": {"S": sk}}
        return {"eventName": "MODIFY", "eventSource": "aws:dynamodb", "dynamodb": {"Keys": keys}}

    assert passes([only], record(dynamodb_schema.JOB_SK))
    for other in (f"{dynamodb_schema.HISTORY_PREFIX}1#000000000002#t", f"{dynamodb_schema.SAVE_PREFIX}t", "SHARE"):
        assert not passes([only], record(other)), other
    role = resolver.properties("SchedulerRole")["Policies"][0]["PolicyDocument"]["Statement"]
    (reads,) = [statement for statement in role if statement.get("Sid") == "TableStream"]
    assert reads["Resource"] == mapping["EventSourceArn"]
    assert sorted(reads["Action"]) == [
        "dynamodb:DescribeStream",
        "dynamodb:GetRecords",
        "dynamodb:GetShardIterator",
        "dynamodb:ListStreams",
    ]


def test_every_function_is_told_the_job_counts_are_maintained() -> None:
    resolver = stack()
    for function_id in resolver.of_type("AWS::Lambda::Function"):
        assert environment(resolver, function_id)["CAIRN_STATUS_COUNTS"] == "maintained", function_id


def test_the_delay_queue_outlasts_the_scheduler_and_dead_letters_after_five_receives() -> None:
    resolver = stack()
    queue = resolver.properties("DelayQueue")
    assert queue["VisibilityTimeout"] >= 6 * resolver.properties("SchedulerFunction")["Timeout"]
    assert queue["RedrivePolicy"] == {"deadLetterTargetArn": resolver.arn("DeadLetterQueue"), "maxReceiveCount": 5}
    for queue_id in ("DelayQueue", "DeadLetterQueue"):
        assert resolver.properties(queue_id)["SqsManagedSseEnabled"] is True


def test_the_sweep_runs_every_five_minutes() -> None:
    resolver = stack()
    (rule_id,) = resolver.of_type("AWS::Events::Rule")
    rule = resolver.properties(rule_id)
    assert rule["ScheduleExpression"] == "rate(5 minutes)"
    assert [target["Arn"] for target in rule["Targets"]] == [resolver.arn("SchedulerFunction") + ":live"]


# -- the API


def operations(resolver: Resolver) -> dict[tuple[str, str], dict[str, Any]]:
    paths = resolver.properties("HttpApi")["Body"]["paths"]
    return {(method, path): operation for path, methods in paths.items() for method, operation in methods.items()}


def test_the_api_serves_every_route_with_the_api_function() -> None:
    resolver = stack()
    found = operations(resolver)
    assert set(found) == ROUTES
    api = resolver.arn("ApiFunction")
    for operation in found.values():
        assert api in operation["x-amazon-apigateway-integration"]["uri"]
        assert operation["x-amazon-apigateway-integration"]["payloadFormatVersion"] == "2.0"


# The routes the code answers without a caller are exactly the routes the gateway leaves public.
PUBLIC = {(method.lower(), path) for method, path in PUBLIC_ROUTES}


def test_the_code_and_the_gateway_agree_on_the_public_routes() -> None:
    assert {("get", "/health"), ("get", "/openapi.json"), ("get", "/dashboard"), ("get", "/assets/{file}")} == PUBLIC
    assert PUBLIC < ROUTES


@pytest.mark.parametrize("overrides", DEPLOYMENTS)
def test_health_the_openapi_document_and_the_dashboard_are_public_for_every_auth(overrides: dict[str, str]) -> None:
    resolver = stack(**overrides)
    for route in PUBLIC:
        assert operations(resolver)[route]["security"] == [{"NONE": []}], route


def test_every_other_route_needs_signed_requests_by_default() -> None:
    resolver = stack()
    body = resolver.properties("HttpApi")["Body"]
    assert set(body["components"]["securitySchemes"]) == {"AWS_IAM"}
    for route, operation in operations(resolver).items():
        if route not in PUBLIC:
            assert operation["security"] == [{"AWS_IAM": []}], route


def test_every_other_route_needs_a_token_of_the_issuer_with_jwt() -> None:
    resolver = Resolver(sam_transform(**JWT), **JWT)
    schemes = resolver.properties("HttpApi")["Body"]["components"]["securitySchemes"]
    authorizer = schemes["JwtAuthorizer"]["x-amazon-apigateway-authorizer"]
    assert authorizer["type"] == "jwt"
    assert authorizer["jwtConfiguration"] == {"issuer": JWT["JwtIssuer"], "audience": ["client-a", "client-b"]}
    for route, operation in operations(resolver).items():
        if route not in PUBLIC:
            assert operation["security"] == [{"JwtAuthorizer": []}], route


# The SAM CLI's own implementation of AWS::LanguageExtensions (what `--language-extensions` runs).
LANGUAGE_EXTENSIONS = """
import json, sys
from samcli.lib.cfn_language_extensions.api import process_template
from samcli.lib.cfn_language_extensions.models import PseudoParameterValues
from samcli.yamlhelper import yaml_parse
template = yaml_parse(open(sys.argv[1]).read())
pseudo = PseudoParameterValues(region="us-east-1", account_id="123456789012", stack_name=sys.argv[2])
for params in json.loads(sys.argv[3]):
    processed = process_template(template, parameter_values=params, pseudo_parameters=pseudo)
    print(json.dumps(processed["Resources"]["HttpApi"]["Properties"]["Auth"]))
"""


def test_language_extensions_turn_the_api_auth_into_what_sam_reads(sam_cli: Path) -> None:
    """SAM reads Auth as plain strings: AWS::LanguageExtensions must resolve its Fn::If first, as the checks assume."""
    deployments = [{"ApiAuth": "IAM"}, JWT]
    result = subprocess.run(
        [str(sam_cli.parent / "python"), "-c", LANGUAGE_EXTENSIONS, str(TEMPLATE), STACK, json.dumps(deployments)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    resolved = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert resolved[0] == {"EnableIamAuthorizer": True, "DefaultAuthorizer": "AWS_IAM"}
    for overrides, auth in zip(deployments, resolved, strict=True):
        template = sam_template()
        ours = apply_language_extensions(template, parameter_values(template, overrides))
        expected = Resolver(ours, **overrides).resolve(ours["Resources"]["HttpApi"]["Properties"]["Auth"])
        assert auth == expected, overrides


def test_jwt_cannot_be_deployed_without_issuer_and_audience() -> None:
    rule = sam_template()["Rules"]["JwtNeedsIssuerAndAudience"]
    assert rule["RuleCondition"] == {"Fn::Equals": [{"Ref": "ApiAuth"}, "JWT"]}
    checked = {assertion["Assert"]["Fn::Not"][0]["Fn::Equals"][0]["Ref"] for assertion in rule["Assertions"]}
    assert checked == {"JwtIssuer", "JwtAudience"}


# -- alarms and outputs


def test_alarms_watch_the_phases_the_scheduler_the_queues_the_api_and_stalled_jobs() -> None:
    resolver = stack(Driver="stepfunctions")
    watched: set[str] = set()
    for alarm_id in resolver.of_type("AWS::CloudWatch::Alarm"):
        alarm = resolver.properties(alarm_id)
        assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
        # every alarm but the delay queue's age and the job failure rate goes off at the first one (the failed
        # jobs' count by default); a delay is never over 15 minutes
        expected = {"DelayQueueAgeAlarm": 1800, "JobFailureRateAlarm": "10", "FailedJobsAlarm": "0"}.get(alarm_id, 0)
        assert alarm["Threshold"] == expected, alarm_id
        assert "Runbook: docs/OPERATIONS.md, " in alarm["AlarmDescription"], alarm_id
        metrics = [metric["MetricStat"]["Metric"] for metric in alarm.get("Metrics", []) if "MetricStat" in metric]
        metrics += [alarm] if "MetricName" in alarm else []
        for metric in metrics:
            for dimension in metric["Dimensions"]:
                watched.add(f"{metric['MetricName']}:{dimension['Value']}")
    functions = [resolver.name(function_id) for function_id in phase_functions(resolver).values()]
    fronts = [resolver.name("SchedulerFunction"), resolver.name("ApiFunction")]
    expected = {f"{metric}:{name}" for name in functions for metric in ("Errors", "Throttles")}
    expected |= {f"DestinationDeliveryFailures:{name}" for name in [*functions, resolver.name("SchedulerFunction")]}
    expected |= {f"Throttles:{name}" for name in fronts}
    expected |= {
        f"Errors:{resolver.name('SchedulerFunction')}",
        f"ApproximateNumberOfMessagesVisible:{resolver.name('DeadLetterQueue')}",
        f"ApproximateNumberOfMessagesVisible:{resolver.name('SchedulerDeadLetterQueue')}",
        f"ApproximateAgeOfOldestMessage:{resolver.name('DelayQueue')}",
        f"ExecutionsFailed:{resolver.ref('PipelineStateMachine')}",
        f"5xx:{resolver.ref('HttpApi')}",
        "StalledJobs:cairn",
        "JobsFailed:cairn",
        "JobsCompleted:cairn",
    }
    assert expected <= watched, sorted(expected - watched)


@pytest.mark.parametrize("metric", ["Errors", "Throttles", "DestinationDeliveryFailures"])
def test_each_pipeline_has_alarms_summing_each_of_its_phases_once(metric: str) -> None:
    """One metric-math alarm per pipeline and metric (another per 10 phases more: CloudWatch's limit)."""
    resolver = stack()
    functions = phase_functions(resolver)
    summed: dict[str, list[str]] = {}
    for alarm_id in resolver.of_type("AWS::CloudWatch::Alarm"):
        metrics = resolver.properties(alarm_id).get("Metrics", [])
        stats = {metric["Id"]: metric["MetricStat"]["Metric"] for metric in metrics if "MetricStat" in metric}
        if not stats or {stat["MetricName"] for stat in stats.values()} != {metric}:
            continue
        (expression,) = [metric for metric in metrics if metric.get("ReturnData")]
        assert set(expression["Expression"].replace(" ", "").split("+")) == set(stats), alarm_id
        assert len(stats) <= 10, alarm_id
        for stat in stats.values():
            assert stat["Namespace"] == "AWS/Lambda", alarm_id
            (dimension,) = stat["Dimensions"]
            summed.setdefault(dimension["Value"], []).append(alarm_id)
    for pipeline in PIPELINES:
        names = [resolver.name(functions[pipeline.name, phase]) for phase in pipeline.phase_names]
        assert [len(summed.get(name, [])) for name in names] == [1] * len(names), pipeline.name
        alarms = {summed[name][0] for name in names}
        assert len(alarms) == -(-len(names) // 10), pipeline.name
        others = {name for name in summed if name not in names}
        assert not alarms & {alarm for name in others for alarm in summed[name]}, pipeline.name


@pytest.mark.parametrize("driver", ["direct", "stepfunctions"])
def test_the_outputs_name_what_a_user_needs(driver: str) -> None:
    template = sam_transform(Driver=driver)
    resolver = Resolver(template, Driver=driver)
    outputs = {
        name: resolver.resolve(output["Value"])
        for name, output in template["Outputs"].items()
        if "Condition" not in output or resolver.conditions[output["Condition"]]
    }
    assert outputs["ApiUrl"] == f"https://{resolver.ref('HttpApi')}.execute-api.us-east-1.amazonaws.com/"
    assert outputs["TableName"] == resolver.ref("CheckpointTable")
    assert outputs["StateBucketName"] == resolver.ref("StateBucket")
    assert outputs["DelayQueueUrl"] == resolver.ref("DelayQueue")
    assert outputs["DeadLetterQueueUrl"] == resolver.ref("DeadLetterQueue")
    assert outputs["SchedulerFunctionName"] == f"{STACK}-scheduler"
    assert outputs["ApiFunctionName"] == f"{STACK}-api"
    assert outputs["LayerArn"].startswith(f"arn:aws:lambda:us-east-1:123456789012:layer:{STACK}-cairn:")
    assert ("StateMachineArn" in outputs) is (driver == "stepfunctions")
