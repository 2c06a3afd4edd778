"""What the local runner runs of a deployed stack: its functions, their event sources, the HTTP API."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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
class StreamSource:
    """A DynamoDB stream event source of a function (``Type: DynamoDB``)."""

    stream_arn: str
    starting_position: str
    """``TRIM_HORIZON`` or ``LATEST``."""
    batch_size: int
    report_batch_item_failures: bool
    filters: tuple[str, ...] = ()
    """The ``FilterCriteria`` patterns, as written (JSON): a record is delivered when one matches (or none is given)."""
    maximum_retry_attempts: int = -1
    """Retries of a failed batch before it is given up (-1: until it succeeds, or its records expire)."""
    on_failure_queue: str | None = None
    """The URL of the queue a given-up batch's on-failure record goes to (``DestinationConfig.OnFailure``)."""


@dataclass(frozen=True)
class Schedule:
    """A schedule of a function (an ``AWS::Events::Rule`` targeting it).

    ``every_seconds`` is the period of a ``rate(...)`` expression; it is None for a ``cron(...)`` (or a
    one-time ``at(...)``) expression, which is kept as written in ``expression`` for the runner to decide.
    """

    name: str
    every_seconds: float | None
    expression: str


@dataclass(frozen=True)
class FunctionConfig:
    """One Lambda function as the created stack configures it, every intrinsic resolved."""

    logical_id: str
    name: str
    handler: str
    code_uri: Path
    environment: dict[str, str]
    timeout: float
    memory: int
    maximum_retry_attempts: int
    on_failure: str | None
    """The function an async invocation's on-failure record goes to (an ``OnFailure`` of ``Type: Lambda``)."""
    sqs_sources: tuple[SqsSource, ...]
    schedules: tuple[Schedule, ...]
    http_routes: tuple[Route, ...]
    layers: tuple[str, ...]
    runtime: str = ""
    """Empty for a function without a Runtime (an image): its workers run on this Python."""
    built_layers: tuple[Path, ...] = ()
    """The ``python/`` folders of the function's layers when each is a built one (a ``sam build`` output:
    the function then runs on them alone, as in Lambda); empty when a layer is a source folder."""
    on_failure_queue: str | None = None
    """The URL of the queue an async invocation's on-failure record goes to (an ``OnFailure`` of ``Type: SQS``)."""
    stream_sources: tuple[StreamSource, ...] = ()


@dataclass(frozen=True)
class StateMachineInfo:
    """A Step Functions state machine of the stack, with its definition as created (substitutions filled in)."""

    name: str
    arn: str
    definition: str


@dataclass(frozen=True)
class Deployment:
    """The created stack and what the local runner runs of it.

    ``covered`` maps each resource type moto's CloudFormation does not create to its logical ids
    (:data:`cairn.dev.coverage.COVERED` says what the runner does for each).
    """

    stack_name: str
    region: str
    account: str
    parameters: dict[str, str]
    outputs: dict[str, str]
    resources: dict[str, str]
    """Each created resource's physical id, by logical id."""
    table_name: str | None
    state_machine: StateMachineInfo | None
    functions: dict[str, FunctionConfig]
    api: ApiInfo | None
    covered: dict[str, list[str]] = field(default_factory=dict)
    template: dict[str, Any] = field(default_factory=dict, repr=False)
    """The transformed template: what CloudFormation was given."""
