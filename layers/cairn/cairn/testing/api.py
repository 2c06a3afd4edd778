"""An API client for tests: the API function called as API Gateway calls it, for a signed-in owner.

:class:`ApiClient` invokes the API function of a :class:`~cairn.testing.stack.LocalStack` with the
HTTP API events of :mod:`cairn.testing.api_events`: each request carries its owner's authorizer
context, as a SigV4-signed request (an IAM principal's ARN) or a JWT (``jwt_caller(...)``) would.
``run_until_idle()`` runs the phase invocations the requests queued.

:meth:`ApiClient.on_moto` deploys your pipelines' phase functions, the scheduler and the API on
moto (inside :func:`cairn.testing.moto_aws.fake_aws`), on a clock that skips delays.
"""

from __future__ import annotations

import json as jsonlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Final, cast

from ..aws.api import api_handler
from ..core.pipeline import Pipeline
from ..core.registry import PipelineRegistry
from .api_events import LOCAL_IDENTITY, http_api_event, iam_caller, response_body
from .clock import SkippingClock
from .moto_aws import dynamodb_client, s3_client, sqs_client
from .skipped_delays import SkippedDelays
from .stack import LocalStack

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

API_FUNCTION = "cairn-api"
"""The name the API function is deployed under beside the phase functions and the scheduler."""

Caller = str | Mapping[str, Any] | None
"""Who calls: an IAM principal's ARN, an authorizer context (``jwt_caller(...)``), or None (nobody signed in)."""


class _Unset(Enum):
    SAME = "same"


SAME_OWNER: Final = _Unset.SAME
"""The ``owner`` of a request when none is given: the client's."""


@dataclass(frozen=True)
class Reply:
    """An API response: its status, its body (parsed when it is JSON) and its headers."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, response: Mapping[str, Any]) -> Reply:
        """The reply of an API function's response."""
        headers = {str(name): str(value) for name, value in (response.get("headers") or {}).items()}
        content_type = next((value for name, value in headers.items() if name.lower() == "content-type"), "")
        data = response_body(response)
        body: Any = data.decode() if data else None
        if data and "json" in content_type:
            body = jsonlib.loads(data)
        return cls(int(response["statusCode"]), body, headers)

    @property
    def code(self) -> str:
        """The error code of an error response."""
        return str(self.body["error"]["code"])

    @property
    def message(self) -> str:
        """The error message of an error response."""
        return str(self.body["error"]["message"])


def authorizer_of(caller: Caller) -> dict[str, Any] | None:
    """The authorizer context API Gateway gives a request of ``caller``."""
    if caller is None:
        return None
    if isinstance(caller, str):
        return iam_caller(caller)
    return dict(caller)


def registry_of(pipelines: Pipeline[Any] | Iterable[Pipeline[Any]] | PipelineRegistry) -> PipelineRegistry:
    """``pipelines`` as a registry."""
    if isinstance(pipelines, PipelineRegistry):
        return pipelines
    return PipelineRegistry([pipelines] if isinstance(pipelines, Pipeline) else pipelines)


class ApiClient:
    """The API function of ``stack``, called as API Gateway calls it for ``owner``.

    The API function is deployed on the stack on first use (as ``function``), for the stack's pipelines.
    """

    def __init__(self, stack: LocalStack, *, owner: Caller = LOCAL_IDENTITY, function: str = API_FUNCTION) -> None:
        self.stack = stack
        self.owner = owner
        self.function = function
        if function not in stack.invoker.functions:
            stack.register(function, api_handler(stack.pipelines, runtime=stack.runtime))

    @classmethod
    def on_moto(
        cls,
        pipelines: Pipeline[Any] | Iterable[Pipeline[Any]] | PipelineRegistry,
        *,
        clock: SkippingClock,
        owner: Caller = LOCAL_IDENTITY,
    ) -> ApiClient:
        """The API, phase functions and scheduler of ``pipelines`` on moto (call inside ``fake_aws``).

        Their storage reads ``clock``, and a delayed advance moves it instead of waiting.
        """
        sqs = cast("SQSClient", SkippedDelays(sqs_client(), clock))
        stack = LocalStack.create(
            registry_of(pipelines), dynamodb=dynamodb_client(), s3=s3_client(), sqs=sqs, clock=clock
        )
        return cls(stack, owner=owner)

    def as_owner(self, owner: Caller) -> ApiClient:
        """The same API, called by ``owner`` (an IAM principal's ARN, an authorizer context, None for nobody)."""
        return ApiClient(self.stack, owner=owner, function=self.function)

    def send(self, event: dict[str, Any]) -> Reply:
        """Invoke the API function with an event as it is."""
        return Reply.of(self.stack.call(self.function, event))

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        query: Mapping[str, str] | str | None = None,
        headers: Mapping[str, str] | None = None,
        owner: Caller | _Unset = SAME_OWNER,
    ) -> Reply:
        """Send one request; ``json`` (when not None) is its body, ``owner`` replaces the client's for it."""
        sent = {"accept": "application/json", **{name.lower(): value for name, value in (headers or {}).items()}}
        body = None
        if json is not None:
            body = jsonlib.dumps(json)
            sent.setdefault("content-type", "application/json")
        caller = self.owner if isinstance(owner, _Unset) else owner
        event = http_api_event(method, path, query=query, headers=sent, body=body, caller=authorizer_of(caller))
        return self.send(event)

    def get(
        self, path: str, *, query: Mapping[str, str] | str | None = None, owner: Caller | _Unset = SAME_OWNER
    ) -> Reply:
        """``GET path`` (with ``query``)."""
        return self.request("GET", path, query=query, owner=owner)

    def post(self, path: str, json: Any = None, *, owner: Caller | _Unset = SAME_OWNER) -> Reply:
        """``POST path`` with ``json`` as its body (none when None)."""
        return self.request("POST", path, json=json, owner=owner)

    def run_until_idle(self, *, timeout: float = 30.0) -> int:
        """Run the queued phase invocations and delayed advances until none are left; how many invocations ran."""
        return self.stack.run_until_idle(timeout=timeout)
