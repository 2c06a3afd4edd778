"""The template deployed onto a local AWS endpoint: what ``cairn dev`` serves, read from ``template.yaml``.

:func:`deploy` reads the template, resolves its parameters and conditions, and creates, in dependency
order, the DynamoDB table, the S3 buckets, the SQS queues and the Step Functions state machine on the
endpoint the ``client`` factory points at. Lambda functions are not created there: their configuration
(handler, code folder, environment resolved to the local resources, timeout, memory, async invoke
config, event sources) comes back in :class:`FunctionConfig` for a local runner. Resources of other
types (IAM, logs, alarms, topics, the layer, the HTTP API, policies) are only named, so that ``Ref`` and
``Fn::GetAtt`` give plausible strings, and are listed in :attr:`Deployment.skipped`.

Physical names are deterministic: an explicit name property (``TableName``, ``BucketName``,
``QueueName``, ``FunctionName``, ``Name``) when there is one, else ``<stack>-<LogicalId>`` (lowercased
for buckets) within the service's length limit.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..bundle.templating import cfnyaml
from ..bundle.templating.errors import TemplateError
from ..bundle.templating.intrinsic_names import references
from ..bundle.templating.serverless import merge_globals
from .intrinsics import (
    LIST_TYPES,
    NO_VALUE,
    PhysicalResource,
    Pseudo,
    Resolver,
    at,
    resolve_parameters,
    text,
)

FUNCTION: Final = "AWS::Serverless::Function"
TABLE: Final = "AWS::DynamoDB::Table"
BUCKET: Final = "AWS::S3::Bucket"
QUEUE: Final = "AWS::SQS::Queue"
STATE_MACHINE: Final = "AWS::Serverless::StateMachine"
#: Lambda's defaults when the template (and its Globals) leave them out.
DEFAULT_TIMEOUT: Final = 3.0
DEFAULT_MEMORY: Final = 128
DEFAULT_RETRY_ATTEMPTS: Final = 2
DEFAULT_SQS_BATCH: Final = 10
DEFAULT_RUNTIME: Final = ""
"""A function without a Runtime (an image): its workers run on this Python."""
_RATE = re.compile(r"rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)")
_RATE_UNITS: Final = {"minute": 60, "hour": 3600, "day": 86400}
_STACK_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,127}")
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
#: CloudFormation queue properties that are SQS queue attributes of the same name.
_QUEUE_ATTRIBUTES: Final = (
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "DelaySeconds",
    "FifoQueue",
    "FifoThroughputLimit",
    "KmsDataKeyReusePeriodSeconds",
    "KmsMasterKeyId",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "RedriveAllowPolicy",
    "RedrivePolicy",
    "SqsManagedSseEnabled",
    "VisibilityTimeout",
)
_INDEX_KEYS: Final = ("IndexName", "KeySchema", "Projection", "ProvisionedThroughput", "OnDemandThroughput")


class DeploymentError(TemplateError):
    """The template cannot be deployed locally: one line saying why."""


@dataclass(frozen=True)
class QueueInfo:
    """One SQS queue as created."""

    name: str
    url: str
    arn: str


@dataclass(frozen=True)
class StateMachineInfo:
    """The Step Functions state machine as created, with its definition (substitutions filled in)."""

    name: str
    arn: str
    definition: str


@dataclass(frozen=True)
class Route:
    """One HTTP API route: ``method`` upper-case (``ANY`` for any), ``public`` when it has no authorizer."""

    method: str
    path: str
    public: bool


@dataclass(frozen=True)
class ApiInfo:
    """The HTTP API: the function behind it and its routes."""

    function_name: str
    routes: list[Route]


@dataclass(frozen=True)
class SqsSource:
    """An SQS event source of a function."""

    queue_url: str
    queue_arn: str
    batch_size: int
    report_batch_item_failures: bool


@dataclass(frozen=True)
class Schedule:
    """A schedule event of a function (``Schedule`` or ``ScheduleV2``).

    ``every_seconds`` is the period of a ``rate(...)`` expression; it is None for a ``cron(...)`` (or a
    one-time ``at(...)``) expression, which is kept as written in ``expression`` for the runner to decide.
    """

    name: str
    every_seconds: float | None
    expression: str


@dataclass(frozen=True)
class FunctionConfig:
    """One Lambda function as the template configures it, every intrinsic resolved."""

    logical_id: str
    name: str
    handler: str
    code_uri: Path
    environment: dict[str, str]
    timeout: float
    memory: int
    maximum_retry_attempts: int
    on_failure: str | None
    sqs_sources: tuple[SqsSource, ...]
    schedules: tuple[Schedule, ...]
    http_routes: tuple[Route, ...]
    layers: tuple[str, ...]
    runtime: str = DEFAULT_RUNTIME
    built_layers: tuple[Path, ...] = ()
    """The ``python/`` folders of the function's layers when each is a built one (a ``sam build`` output:
    the function then runs on them alone, as in Lambda); empty when a layer is a source folder."""


@dataclass(frozen=True)
class Deployment:
    """What :func:`deploy` created and read. ``skipped`` maps the logical id of each resource only named to its type."""

    stack_name: str
    region: str
    account: str
    parameters: dict[str, str]
    table_name: str
    buckets: dict[str, str]
    queues: dict[str, QueueInfo]
    state_machine: StateMachineInfo | None
    functions: dict[str, FunctionConfig]
    api: ApiInfo | None
    skipped: dict[str, str]


def deploy(
    template: Path,
    *,
    client: Callable[[str], Any],
    stack_name: str = "cairn-dev",
    parameters: Mapping[str, str] | None = None,
    region: str = "us-east-1",
    account: str = "123456789012",
) -> Deployment:
    """Create the resources ``template`` declares on the endpoint of ``client(service_name)``, once per endpoint.

    Raises :class:`~cairn.dev.intrinsics.ParameterError` for a bad parameter value,
    :class:`~cairn.dev.intrinsics.ResolutionError` (naming where) for a value it cannot resolve, and
    :class:`DeploymentError` for a template it cannot deploy locally.
    """
    if _STACK_NAME.fullmatch(stack_name) is None:
        raise DeploymentError(f"Stack name {stack_name!r}: letters, digits and hyphens, starting with a letter")
    path = template.resolve()
    try:
        body = cfnyaml.load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DeploymentError(f"Cannot read {template}: {exc}") from None
    if not isinstance(body, Mapping) or not isinstance(body.get("Resources"), Mapping):
        raise DeploymentError(f"{template} is not a CloudFormation template (no Resources)")
    declarations = body.get("Parameters") or {}
    values = resolve_parameters(declarations, parameters)
    physical: dict[str, PhysicalResource] = {}
    resolver = Resolver(
        parameters=values,
        pseudo=Pseudo(stack_name, region, account),
        conditions=body.get("Conditions") or {},
        mappings=body.get("Mappings") or {},
        resources=physical,
        list_parameters=[
            name for name, spec in declarations.items() if str((spec or {}).get("Type", "")).startswith(LIST_TYPES)
        ],
    )
    resolver.check_rules(body.get("Rules"))
    stack = _Stack(path.parent, body, resolver, physical, client)
    return stack.deploy(values)


class _Stack:
    """One deployment in progress: the resources created so far and their physical values."""

    def __init__(
        self,
        root: Path,
        body: Mapping[str, Any],
        resolver: Resolver,
        physical: dict[str, PhysicalResource],
        client: Callable[[str], Any],
    ) -> None:
        self.root = root
        self.body = body
        self.resolver = resolver
        self.physical = physical
        self.pseudo = resolver.pseudo
        self.stack = str(self.pseudo["AWS::StackName"])
        self.region = str(self.pseudo["AWS::Region"])
        self.account = str(self.pseudo["AWS::AccountId"])
        self._client_factory = client
        self._clients: dict[str, Any] = {}
        self.tables: list[str] = []
        self.buckets: dict[str, str] = {}
        self.queues: dict[str, QueueInfo] = {}
        self.state_machines: list[StateMachineInfo] = []
        self.functions: dict[str, FunctionConfig] = {}
        self.skipped: dict[str, str] = {}
        self.layer_folders: dict[str, Path] = {}
        """Each layer's ARN (its Ref) and its ContentUri folder."""

    def client(self, service: str) -> Any:
        """The client of ``service``, made once."""
        if service not in self._clients:
            self._clients[service] = self._client_factory(service)
        return self._clients[service]

    def deploy(self, parameters: dict[str, str]) -> Deployment:
        """Create or name every present resource in dependency order, then gather the result."""
        present = self._present()
        self.resolver.absent |= set(self.body["Resources"]) - set(present)
        handlers: dict[str, Callable[[str, Mapping[str, Any], str], PhysicalResource]] = {
            TABLE: self._table,
            BUCKET: self._bucket,
            QUEUE: self._queue,
            STATE_MACHINE: self._state_machine,
            FUNCTION: self._function,
        }
        for logical_id in self._order(present):
            resource = present[logical_id]
            kind = str(resource.get("Type", ""))
            handler = handlers.get(kind, self._named)
            named_only = kind not in handlers
            path = f"Resources.{logical_id}.Properties"
            properties = resource.get("Properties") or {}
            self.physical[logical_id] = handler(logical_id, properties, path)
            if named_only:
                self.skipped[logical_id] = kind
        return Deployment(
            stack_name=self.stack,
            region=self.region,
            account=self.account,
            parameters=parameters,
            table_name=self._one("table", TABLE, self.tables),
            buckets=self.buckets,
            queues=self.queues,
            state_machine=self.state_machines[0] if self.state_machines else None,
            functions=self.functions,
            api=self._api(),
            skipped=self.skipped,
        )

    # ------------------------------------------------------------------ order

    def _present(self) -> dict[str, Mapping[str, Any]]:
        """The resources whose ``Condition`` holds (or that have none), in template order."""
        present: dict[str, Mapping[str, Any]] = {}
        for logical_id, resource in self.body["Resources"].items():
            if not isinstance(resource, Mapping):
                raise DeploymentError(f"Resources.{logical_id} is not a mapping")
            name = resource.get("Condition")
            if name is None or self.resolver.condition(str(name), f"Resources.{logical_id}.Condition"):
                present[logical_id] = resource
        return present

    def _order(self, present: Mapping[str, Mapping[str, Any]]) -> list[str]:
        """The present resources, each after those it refers to (or DependsOn), else in template order."""
        global_refs = references(self.body.get("Globals", {}).get("Function") or {})
        needs: dict[str, set[str]] = {}
        for logical_id, resource in present.items():
            depends = resource.get("DependsOn") or []
            named = references(resource.get("Properties") or {}) | set(
                [depends] if isinstance(depends, str) else depends
            )
            if resource.get("Type") == FUNCTION:
                named |= global_refs
            needs[logical_id] = (named & set(present)) - {logical_id}
        order: list[str] = []
        done: set[str] = set()
        while len(order) < len(present):
            ready = [name for name in present if name not in done and needs[name] <= done]
            if not ready:
                waiting = sorted(name for name in present if name not in done)
                raise DeploymentError(f"Circular references between the resources {', '.join(waiting)}")
            order += ready
            done |= set(ready)
        return order

    # ------------------------------------------------------------------ created resources

    def _table(self, logical_id: str, properties: Mapping[str, Any], path: str) -> PhysicalResource:
        """A DynamoDB table from its properties, then its TTL."""
        props = self.resolver.resolve(properties, path)
        name = str(props.get("TableName") or _name(self.stack, logical_id, 255))
        request: dict[str, Any] = {
            "TableName": name,
            "AttributeDefinitions": props.get("AttributeDefinitions", []),
            "KeySchema": props.get("KeySchema", []),
            "BillingMode": props.get("BillingMode", "PROVISIONED"),
        }
        for key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
            if props.get(key):
                request[key] = [{k: v for k, v in index.items() if k in _INDEX_KEYS} for index in props[key]]
        if "ProvisionedThroughput" in props:
            request["ProvisionedThroughput"] = props["ProvisionedThroughput"]
        stream = props.get("StreamSpecification")
        if stream:
            request["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": stream["StreamViewType"]}
        dynamodb = self.client("dynamodb")
        description = dynamodb.create_table(**request)["TableDescription"]
        ttl = props.get("TimeToLiveSpecification")
        if ttl:
            dynamodb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"Enabled": _truthy(ttl.get("Enabled")), "AttributeName": ttl["AttributeName"]},
            )
        self.tables.append(name)
        attributes = {"Arn": description["TableArn"]}
        if description.get("LatestStreamArn"):
            attributes["StreamArn"] = description["LatestStreamArn"]
        return PhysicalResource(name, attributes)

    def _bucket(self, logical_id: str, properties: Mapping[str, Any], path: str) -> PhysicalResource:
        """An S3 bucket, by name only (its other properties are not applied locally)."""
        explicit = properties.get("BucketName")
        name = (
            self.resolver.string(explicit, at(path, "BucketName"))
            if explicit is not None
            else _name(self.stack, logical_id, 63).lower().rstrip("-.")
        )
        request: dict[str, Any] = {"Bucket": name}
        if self.region != "us-east-1":
            request["CreateBucketConfiguration"] = {"LocationConstraint": self.region}
        self.client("s3").create_bucket(**request)
        self.buckets[logical_id] = name
        partition = self.pseudo["AWS::Partition"]
        return PhysicalResource(
            name,
            {
                "Arn": f"arn:{partition}:s3:::{name}",
                "DomainName": f"{name}.s3.amazonaws.com",
                "RegionalDomainName": f"{name}.s3.{self.region}.amazonaws.com",
            },
        )

    def _queue(self, logical_id: str, properties: Mapping[str, Any], path: str) -> PhysicalResource:
        """An SQS queue with its attributes (RedrivePolicy as JSON); FIFO names end in ``.fifo``."""
        props = self.resolver.resolve(properties, path)
        fifo = _truthy(props.get("FifoQueue", False))
        name = str(props.get("QueueName") or _name(self.stack, logical_id, 75 if fifo else 80))
        if fifo and not name.endswith(".fifo"):
            name += ".fifo"
        attributes: dict[str, str] = {}
        for key in _QUEUE_ATTRIBUTES:
            if key in props:
                value = props[key]
                attributes[key] = json.dumps(value) if isinstance(value, Mapping | list) else text(value)
        sqs = self.client("sqs")
        url = str(sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"])
        arn = str(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])
        self.queues[logical_id] = QueueInfo(name, url, arn)
        return PhysicalResource(url, {"Arn": arn, "QueueName": name, "QueueUrl": url})

    def _state_machine(self, logical_id: str, properties: Mapping[str, Any], path: str) -> PhysicalResource:
        """The state machine, its DefinitionUri file read with DefinitionSubstitutions filled in."""
        name = self._explicit_name(properties, "Name", path) or _name(self.stack, logical_id, 80)
        definition = self._definition(properties, path)
        role_name = _name(self.stack, f"{logical_id}Role", 64)
        role_arn = self._explicit_name(properties, "Role", path) or (
            f"arn:{self.pseudo['AWS::Partition']}:iam::{self.account}:role/{role_name}"
        )
        kind = self.resolver.string(properties.get("Type", "STANDARD"), at(path, "Type"))
        response = self.client("stepfunctions").create_state_machine(
            name=name, definition=definition, roleArn=role_arn, type=kind
        )
        arn = str(response["stateMachineArn"])
        self.state_machines.append(StateMachineInfo(name, arn, definition))
        if len(self.state_machines) > 1:
            raise DeploymentError(f"Resources.{logical_id}: the template declares more than one state machine")
        return PhysicalResource(arn, {"Arn": arn, "Name": name})

    def _definition(self, properties: Mapping[str, Any], path: str) -> str:
        """The definition's text, every ``${Name}`` replaced by its DefinitionSubstitutions value."""
        if "Definition" in properties:
            source = json.dumps(self.resolver.resolve(properties["Definition"], at(path, "Definition")), indent=2)
        elif isinstance(properties.get("DefinitionUri"), str):
            file = self.root / properties["DefinitionUri"]
            try:
                source = file.read_text(encoding="utf-8")
            except OSError as exc:
                raise DeploymentError(f"{at(path, 'DefinitionUri')}: cannot read {file}: {exc}") from None
        else:
            raise DeploymentError(f"{path}: a local state machine needs Definition or a DefinitionUri file path")
        where = at(path, "DefinitionSubstitutions")
        substitutions = {
            str(key): self.resolver.string(value, at(where, str(key)))
            for key, value in (properties.get("DefinitionSubstitutions") or {}).items()
        }

        def fill(match: re.Match[str]) -> str:
            key = match.group(1)
            if key not in substitutions:
                raise DeploymentError(f"{where}: the definition's ${{{key}}} has no substitution")
            return substitutions[key]

        return _PLACEHOLDER.sub(fill, source)

    # ------------------------------------------------------------------ functions

    def _function(self, logical_id: str, properties: Mapping[str, Any], path: str) -> PhysicalResource:
        """A function's configuration (Globals merged in); it is run locally, not created on the endpoint."""
        shared = self.body.get("Globals", {}).get("Function") or {}

        def setting(key: str, default: Any) -> Any:
            """The resolved property, merged with its resolved Globals value as SAM merges them."""
            own = self._resolved(properties, key, path)
            common = self._resolved(shared, key, "Globals.Function")
            if own is NO_VALUE:
                return default if common is NO_VALUE else common
            return own if common is NO_VALUE else merge_globals(common, own)

        name = self._explicit_name(properties, "FunctionName", path) or _name(self.stack, logical_id, 64)
        code_uri = setting("CodeUri", None)
        if not isinstance(code_uri, str):
            raise DeploymentError(f"{at(path, 'CodeUri')}: a local function needs a folder path")
        variables = (setting("Environment", {}) or {}).get("Variables") or {}
        environment = {}
        for key, value in variables.items():
            if isinstance(value, Mapping | list) or value is None:
                where = f"{path}.Environment.Variables.{key}"
                raise DeploymentError(f"{where}: an environment variable must be a string, got {value!r}")
            environment[str(key)] = text(value)
        invoke = setting("EventInvokeConfig", {}) or {}
        on_failure = (invoke.get("DestinationConfig") or {}).get("OnFailure") or {}
        events = setting("Events", {}) or {}
        layers = tuple(text(layer) for layer in setting("Layers", []))
        config = FunctionConfig(
            logical_id=logical_id,
            name=name,
            handler=text(setting("Handler", "")),
            code_uri=(self.root / code_uri).resolve(),
            environment=environment,
            timeout=_float(setting("Timeout", DEFAULT_TIMEOUT), at(path, "Timeout")),
            memory=_int(setting("MemorySize", DEFAULT_MEMORY), at(path, "MemorySize")),
            maximum_retry_attempts=_int(
                invoke.get("MaximumRetryAttempts", DEFAULT_RETRY_ATTEMPTS),
                at(path, "EventInvokeConfig.MaximumRetryAttempts"),
            ),
            on_failure=_function_name(on_failure.get("Destination")) if on_failure.get("Type") == "Lambda" else None,
            sqs_sources=tuple(self._sqs_sources(events, at(path, "Events"))),
            schedules=tuple(_schedules(events, at(path, "Events"))),
            http_routes=tuple(_routes(events)),
            layers=layers,
            runtime=text(setting("Runtime", DEFAULT_RUNTIME)),
            built_layers=self._built_layers(layers),
        )
        if name in self.functions:
            raise DeploymentError(f"{path}: two functions are named {name}")
        self.functions[name] = config
        return PhysicalResource(name, {"Arn": self._function_arn(name)})

    def _built_layers(self, layers: tuple[str, ...]) -> tuple[Path, ...]:
        """The layers' ``python/`` folders when every layer is a built one of this template, else ()."""
        folders = [self.layer_folders.get(layer) for layer in layers]
        built = [folder / "python" for folder in folders if folder is not None and (folder / "python").is_dir()]
        return tuple(built) if layers and len(built) == len(layers) else ()

    def _resolved(self, properties: Mapping[str, Any], key: str, path: str) -> Any:
        """Property ``key`` resolved, or NO_VALUE when it is left out."""
        return self.resolver.resolve(properties[key], at(path, key)) if key in properties else NO_VALUE

    def _function_arn(self, name: str) -> str:
        return f"arn:{self.pseudo['AWS::Partition']}:lambda:{self.region}:{self.account}:function:{name}"

    def _sqs_sources(self, events: Mapping[str, Any], path: str) -> list[SqsSource]:
        """The function's enabled SQS events; each names a queue of the template by ARN."""
        by_arn = {queue.arn: queue for queue in self.queues.values()}
        sources = []
        for event, spec in events.items():
            props = spec.get("Properties") or {}
            if spec.get("Type") != "SQS" or not _truthy(props.get("Enabled", True)):
                continue
            queue = by_arn.get(str(props.get("Queue")))
            if queue is None:
                raise DeploymentError(
                    f"{path}.{event}.Properties.Queue: {props.get('Queue')} is not a queue of the template"
                )
            sources.append(
                SqsSource(
                    queue_url=queue.url,
                    queue_arn=queue.arn,
                    batch_size=_int(props.get("BatchSize", DEFAULT_SQS_BATCH), f"{path}.{event}.Properties.BatchSize"),
                    report_batch_item_failures="ReportBatchItemFailures" in (props.get("FunctionResponseTypes") or []),
                )
            )
        return sources

    def _api(self) -> ApiInfo | None:
        """The one function with HttpApi events and its routes (None when no function has any)."""
        served = [function for function in self.functions.values() if function.http_routes]
        if len(served) > 1:
            names = ", ".join(function.name for function in served)
            raise DeploymentError(f"HttpApi events on more than one function ({names}): the local API serves one")
        return ApiInfo(served[0].name, list(served[0].http_routes)) if served else None

    # ------------------------------------------------------------------ named only

    def _named(self, logical_id: str, properties: Mapping[str, Any], path: str) -> PhysicalResource:
        """A resource not created locally: plausible names and ARNs for ``Ref`` and ``Fn::GetAtt``."""
        kind = str(self.body["Resources"][logical_id].get("Type", ""))
        partition, region, account = self.pseudo["AWS::Partition"], self.region, self.account
        name = _name(self.stack, logical_id, 64)
        explicit = {
            "AWS::Logs::LogGroup": "LogGroupName",
            "AWS::CloudWatch::Alarm": "AlarmName",
            "AWS::SNS::Topic": "TopicName",
            "AWS::IAM::Role": "RoleName",
            "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
            "AWS::Serverless::LayerVersion": "LayerName",
            "AWS::Lambda::LayerVersion": "LayerName",
        }.get(kind)
        if explicit is not None:
            name = self._quiet_name(properties, explicit, path) or name
        arn: str
        ref: str
        if kind == "AWS::IAM::Role":
            ref, arn = name, f"arn:{partition}:iam::{account}:role/{name}"
        elif kind == "AWS::IAM::ManagedPolicy":
            ref = arn = f"arn:{partition}:iam::{account}:policy/{name}"
        elif kind == "AWS::Logs::LogGroup":
            ref, arn = name, f"arn:{partition}:logs:{region}:{account}:log-group:{name}:*"
        elif kind == "AWS::SNS::Topic":
            ref = arn = f"arn:{partition}:sns:{region}:{account}:{name}"
        elif kind in ("AWS::Serverless::LayerVersion", "AWS::Lambda::LayerVersion"):
            ref = arn = f"arn:{partition}:lambda:{region}:{account}:layer:{name}:1"
            content = properties.get("ContentUri")
            if isinstance(content, str):
                self.layer_folders[arn] = (self.root / content).resolve()
        elif kind in ("AWS::Serverless::HttpApi", "AWS::Serverless::Api", "AWS::ApiGatewayV2::Api"):
            ref = hashlib.sha256(f"{self.stack}/{logical_id}".encode()).hexdigest()[:10]
            arn = f"arn:{partition}:apigateway:{region}::/apis/{ref}"
            endpoint = f"https://{ref}.execute-api.{region}.amazonaws.com"
            return PhysicalResource(ref, {"ApiId": ref, "ApiEndpoint": endpoint, "Arn": arn}, _fallback(ref))
        else:
            service = kind.split("::")[1].lower() if kind.count("::") == 2 else "unknown"
            ref, arn = name, f"arn:{partition}:{service}:{region}:{account}:{name}"
        return PhysicalResource(ref, {"Arn": arn}, _fallback(name))

    def _explicit_name(self, properties: Mapping[str, Any], key: str, path: str) -> str | None:
        """The resolved name property ``key``, or None when the template leaves it out."""
        value = properties.get(key)
        return None if value is None else self.resolver.string(value, at(path, key))

    def _quiet_name(self, properties: Mapping[str, Any], key: str, path: str) -> str | None:
        """Like :meth:`_explicit_name`, but None when it does not resolve (a resource only named must not fail)."""
        try:
            return self._explicit_name(properties, key, path)
        except TemplateError:
            return None

    def _one(self, what: str, kind: str, names: list[str]) -> str:
        if len(names) != 1:
            raise DeploymentError(
                f"A local deployment needs exactly one {what} ({kind}); the template has {len(names)}"
            )
        return names[0]


def _schedules(events: Mapping[str, Any], path: str) -> list[Schedule]:
    """The function's enabled Schedule and ScheduleV2 events; ``rate(...)`` read as seconds."""
    found = []
    for event, spec in events.items():
        props = spec.get("Properties") or {}
        if spec.get("Type") not in ("Schedule", "ScheduleV2"):
            continue
        if not _truthy(props.get("Enabled", True)) or str(props.get("State", "ENABLED")) == "DISABLED":
            continue
        key = "Schedule" if spec["Type"] == "Schedule" else "ScheduleExpression"
        expression = str(props.get(key, "")).strip()
        if expression.startswith(("cron(", "at(")):
            found.append(Schedule(str(props.get("Name") or event), None, expression))
            continue
        rate = _RATE.fullmatch(expression)
        if rate is None:
            raise DeploymentError(f"{path}.{event}.Properties.{key}: cannot read the schedule {expression!r}")
        amount, unit = int(rate.group(1)), rate.group(2).rstrip("s")
        if amount < 1 or (amount == 1) != (rate.group(2) == unit):
            raise DeploymentError(f"{path}.{event}.Properties.{key}: {expression!r} (rate(1 minute), rate(5 minutes))")
        found.append(Schedule(str(props.get("Name") or event), float(amount * _RATE_UNITS[unit]), expression))
    return found


def _routes(events: Mapping[str, Any]) -> list[Route]:
    """The function's HttpApi routes; one without Method and Path is the API's ``$default`` route."""
    routes = []
    for spec in events.values():
        if spec.get("Type") != "HttpApi":
            continue
        props = spec.get("Properties") or {}
        public = str((props.get("Auth") or {}).get("Authorizer", "")) == "NONE"
        method = str(props.get("Method", "ANY")).upper()
        routes.append(
            Route(
                "ANY" if method == "X-AMAZON-APIGATEWAY-ANY-METHOD" else method,
                str(props.get("Path", "$default")),
                public,
            )
        )
    return routes


def _function_name(destination: Any) -> str:
    """The function name of a Lambda ARN (with or without a qualifier), or the name given."""
    value = str(destination)
    if ":function:" in value:
        return value.split(":function:", 1)[1].split(":", 1)[0]
    return value


def _name(stack: str, logical_id: str, limit: int) -> str:
    """``<stack>-<LogicalId>`` cut to ``limit`` characters."""
    return f"{stack}-{logical_id}"[:limit]


def _fallback(name: str) -> Callable[[str], str]:
    """Any other attribute of a resource only named: ``<name>.<attribute>``."""
    return lambda attribute: f"{name}.{attribute}"


def _truthy(value: Any) -> bool:
    """A CloudFormation boolean (``true``, ``"true"``, ``"True"``)."""
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _float(value: Any, path: str) -> float:
    """``value`` (a number or its text) as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise DeploymentError(f"{path}: expected a number, got {value!r}")
    try:
        return float(value)
    except ValueError:
        raise DeploymentError(f"{path}: expected a number, got {value!r}") from None


def _int(value: Any, path: str) -> int:
    """``value`` (a whole number or its text) as an int."""
    number = _float(value, path)
    if not number.is_integer():
        raise DeploymentError(f"{path}: expected a whole number, got {value!r}")
    return int(number)
