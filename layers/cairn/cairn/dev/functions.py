"""The local runner's view of a created stack: each Lambda function's :class:`FunctionConfig`, and the HTTP API.

Everything is read from the transformed template and the stack moto created: a function's handler,
runtime, timeout, memory and environment from the Lambda service, its layers from its resource; its SQS and
DynamoDB stream sources from its event source mappings; its schedules from the ``AWS::Events::Rule`` resources
that target it; its async invoke config from its ``AWS::Lambda::EventInvokeConfig`` (retries, and an on-failure
destination that is a function or a queue); the API's routes from the OpenAPI body of the
``AWS::ApiGatewayV2::Api``. Intrinsics are resolved by moto (:func:`cairn.dev.coverage.resolved`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from ..bundle.templating.errors import TemplateError
from ..core.settings import schedule_seconds
from .coverage import API, EVENT_INVOKE_CONFIG, resolved
from .event_filters import FilterError, parse
from .models import ApiInfo, FunctionConfig, Route, Schedule, SqsSource, StreamSource

LAMBDA_FUNCTION: Final = "AWS::Lambda::Function"
DEFAULT_RETRY_ATTEMPTS: Final = 2
_ANY_METHOD: Final = "X-AMAZON-APIGATEWAY-ANY-METHOD"


class DeploymentError(TemplateError):
    """The template cannot be deployed locally: one line saying why."""


class StackReader:
    """Reads the functions and the API of one created stack."""

    def __init__(
        self,
        template: Mapping[str, Any],
        stack: Any,
        client: Callable[[str], Any],
        folder: Callable[[Any], Path | None],
    ) -> None:
        self.resources: Mapping[str, Mapping[str, Any]] = template["Resources"]
        self.stack = stack
        self.lambda_client = client("lambda")
        self.sqs = client("sqs")
        self.folder = folder
        self.names = {
            logical_id: str(resource.physical_resource_id)
            for logical_id in self.resources
            if (resource := stack.resource_map[logical_id]) is not None and hasattr(resource, "physical_resource_id")
        }

    def of_type(self, kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each created (or covered) resource of ``kind``: its logical id and its resolved properties."""
        for logical_id, resource in self.resources.items():
            if resource.get("Type") != kind:
                continue
            if kind != EVENT_INVOKE_CONFIG and logical_id not in self.names:
                continue
            condition = resource.get("Condition")
            if condition and not self.stack.resource_map.lazy_condition_map[condition]:
                continue
            yield logical_id, resolved(self.stack, dict(resource.get("Properties") or {}))

    def functions(self) -> dict[str, FunctionConfig]:
        """Every function of the stack, by name."""
        layer_folders = {
            self.names[logical_id]: self.folder(props.get("Content"))
            for logical_id, props in self.of_type("AWS::Lambda::LayerVersion")
        }
        invoke = {_function_name(props.get("FunctionName")): props for _, props in self.of_type(EVENT_INVOKE_CONFIG)}
        rules = list(self.of_type("AWS::Events::Rule"))
        routes = self.routes()
        found = {}
        for logical_id, properties in self.of_type(LAMBDA_FUNCTION):
            name = self.names[logical_id]
            folder = self.folder(properties.get("Code"))
            if folder is None:
                raise DeploymentError(f"Resources.{logical_id}: a local function needs its CodeUri as a folder")
            configuration = self.lambda_client.get_function(FunctionName=name)["Configuration"]
            arn = str(configuration["FunctionArn"])
            config = invoke.get(name) or {}
            on_failure = ((config.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
            layers = tuple(str(layer) for layer in properties.get("Layers") or [])  # moto's function leaves them out
            found[name] = FunctionConfig(
                logical_id=logical_id,
                name=name,
                handler=str(configuration.get("Handler", "")),
                code_uri=folder,
                environment={
                    str(key): str(value)
                    for key, value in ((configuration.get("Environment") or {}).get("Variables") or {}).items()
                },
                timeout=float(configuration["Timeout"]),
                memory=int(configuration["MemorySize"]),
                maximum_retry_attempts=int(config.get("MaximumRetryAttempts", DEFAULT_RETRY_ATTEMPTS)),
                on_failure=_function_name(on_failure) if on_failure and ":function:" in str(on_failure) else None,
                on_failure_queue=self._queue_url(on_failure) if on_failure and ":sqs:" in str(on_failure) else None,
                sqs_sources=tuple(self._sqs_sources(name)),
                stream_sources=tuple(self._stream_sources(name)),
                schedules=tuple(_schedules(rules, arn, logical_id)),
                http_routes=tuple(route for route, function in routes if _invokes(function, arn)),
                layers=layers,
                runtime=str(configuration.get("Runtime", "")),
                built_layers=_built_layers(layers, layer_folders),
            )
        return found

    def _queue_url(self, arn: Any) -> str:
        """The URL of the stack's queue ``arn`` names (an ``arn:aws:sqs:<region>:<account>:<name>``)."""
        return str(self.sqs.get_queue_url(QueueName=str(arn).rsplit(":", 1)[1])["QueueUrl"])

    def _mappings(self, name: str, service: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """The function's enabled event source mappings of ``service`` (``sqs``, ``dynamodb``): source ARN, mapping."""
        listed = self.lambda_client.list_event_source_mappings()["EventSourceMappings"]
        for mapping in listed:  # bound to the function or to an alias of it (AutoPublishAlias)
            if _function_name(mapping.get("FunctionArn", "")) != name:
                continue
            arn = str(mapping.get("EventSourceArn", ""))
            if f":{service}:" in arn and mapping.get("State") in ("Enabled", "Creating", None):
                yield arn, mapping

    def _stream_sources(self, name: str) -> Iterator[StreamSource]:
        """The function's enabled DynamoDB stream event source mappings, their filters checked."""
        for arn, mapping in self._mappings(name, "dynamodb"):
            patterns = tuple(
                str(item.get("Pattern", "")) for item in (mapping.get("FilterCriteria") or {}).get("Filters") or []
            )
            for pattern in patterns:
                try:
                    parse(pattern)
                except FilterError as exc:
                    raise DeploymentError(f"the event source of {name} on {arn}: {exc}") from None
            on_failure = str(((mapping.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination", ""))
            yield StreamSource(
                stream_arn=arn,
                starting_position=str(mapping.get("StartingPosition") or "TRIM_HORIZON"),
                batch_size=int(mapping.get("BatchSize") or 100),
                report_batch_item_failures="ReportBatchItemFailures" in (mapping.get("FunctionResponseTypes") or []),
                filters=patterns,
                maximum_retry_attempts=int(mapping.get("MaximumRetryAttempts", -1)),
                on_failure_queue=self._queue_url(on_failure) if ":sqs:" in on_failure else None,
            )

    def _sqs_sources(self, name: str) -> Iterator[SqsSource]:
        """The function's enabled SQS event source mappings."""
        for arn, mapping in self._mappings(name, "sqs"):
            yield SqsSource(
                queue_url=self._queue_url(arn),
                queue_arn=arn,
                batch_size=int(mapping.get("BatchSize") or 10),
                report_batch_item_failures="ReportBatchItemFailures" in (mapping.get("FunctionResponseTypes") or []),
            )

    def routes(self) -> list[tuple[Route, str]]:
        """Each route of the stack's HTTP APIs, and the ARN of the function its integration invokes."""
        found = []
        for _, properties in self.of_type(API):
            for path, methods in ((properties.get("Body") or {}).get("paths") or {}).items():
                for method, operation in methods.items():
                    uri = str((operation.get("x-amazon-apigateway-integration") or {}).get("uri", ""))
                    function = uri.split("/functions/", 1)[-1].removesuffix("/invocations")
                    public = {"NONE": []} in (operation.get("security") or [])
                    verb = "ANY" if method.upper() == _ANY_METHOD else method.upper()
                    found.append((Route(verb, str(path), public), function))
        return found

    def api(self, functions: Mapping[str, FunctionConfig]) -> ApiInfo | None:
        """The one function behind the HTTP API and its routes (None when no function has any)."""
        served = [function for function in functions.values() if function.http_routes]
        if len(served) > 1:
            names = ", ".join(function.name for function in served)
            raise DeploymentError(f"HTTP API routes to more than one function ({names}): the local API serves one")
        return ApiInfo(served[0].name, list(served[0].http_routes)) if served else None


def _schedules(rules: list[tuple[str, dict[str, Any]]], function_arn: str, logical_id: str) -> Iterator[Schedule]:
    """The enabled schedule rules targeting the function; ``rate(...)`` read as seconds."""
    for rule_id, properties in rules:
        targets = [str(target.get("Arn")) for target in properties.get("Targets") or []]
        expression = str(properties.get("ScheduleExpression", "")).strip()
        invoked = any(_invokes(target, function_arn) for target in targets)
        if not invoked or not expression or properties.get("State") == "DISABLED":
            continue
        name = rule_id.removeprefix(logical_id) or rule_id
        if expression.startswith(("cron(", "at(")):
            yield Schedule(name, None, expression)
            continue
        seconds = schedule_seconds(expression)
        if seconds is None:
            raise DeploymentError(f"Resources.{rule_id}.Properties.ScheduleExpression: cannot read {expression!r}")
        yield Schedule(name, float(seconds), expression)


def _built_layers(layers: tuple[str, ...], folders: Mapping[str, Path | None]) -> tuple[Path, ...]:
    """The layers' ``python/`` folders when every layer is a built one of this stack, else ()."""
    built = [folder / "python" for layer in layers if (folder := folders.get(layer)) and (folder / "python").is_dir()]
    return tuple(built) if layers and len(built) == len(layers) else ()


def _invokes(target: str, function_arn: str) -> bool:
    """Whether ``target`` (an ARN a rule or a route invokes) is the function or one of its versions or aliases."""
    return target == function_arn or target.startswith(f"{function_arn}:")


def _function_name(reference: Any) -> str:
    """The function name of a Lambda ARN (with or without a qualifier), or the name given."""
    value = str(reference)
    if ":function:" in value:
        return value.split(":function:", 1)[1].split(":", 1)[0]
    return value
