"""Per-caller protection, through the HTTP API as the local gateway serves it: the per-owner start rate (429 with
``Retry-After``, nothing started) and a ``/health`` that anonymous callers reach without a table read."""

from __future__ import annotations

import dataclasses
import http.client
import io
import json
from collections.abc import Iterator
from typing import Any, cast

import pytest

from cairn.aws.api import api_handler
from cairn.dev.environments import Outcome
from cairn.dev.gateway import ApiGateway
from cairn.dev.lambda_service import LambdaService
from cairn.dev.logs import DevLog
from cairn.dev.models import Route
from cairn.testing.api_events import LOCAL_IDENTITY
from cairn.testing.stack import LocalStack
from pipelines import PIPELINES
from tests.events import load_event
from tests.support import FakeClock
from tests.template.stacks import stack as template_stack

FUNCTION = "cairn-protection-api"
LIMIT = 3
INVOICE = {"document": "invoice.txt"}
#: The routes this file calls, public as the template makes them (checked below against the template).
ROUTES = [Route("POST", "/jobs", False), Route("GET", "/jobs/{jobId}", False), Route("GET", "/health", True)]
ROUTES += [Route("GET", "/health/deep", False)]


class ApiFunction:
    """The API function of the local stack, as the gateway invokes it."""

    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack

    def invoke(self, name: str, event: dict[str, Any]) -> Outcome:
        return Outcome(self.stack.call(FUNCTION, event))


@pytest.fixture
def gateway(stack: LocalStack) -> Iterator[ApiGateway]:
    """The HTTP API on a free loopback port, its function allowing ``LIMIT`` starts a minute per owner."""
    stack.runtime.settings = dataclasses.replace(stack.runtime.settings, owner_starts_per_minute=LIMIT)
    stack.register(FUNCTION, api_handler(PIPELINES, runtime=stack.runtime))
    lambdas = cast(LambdaService, ApiFunction(stack))
    served = ApiGateway(ROUTES, FUNCTION, lambdas, DevLog(io.StringIO()), identity=LOCAL_IDENTITY, port=0)
    served.start()
    yield served
    served.stop()


def request(
    gateway: ApiGateway, method: str, path: str, body: Any = None, *, identity: str | None = None
) -> tuple[int, dict[str, str], Any]:
    """One request: its status, headers and JSON body."""
    host, port = gateway.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    headers = {"Content-Type": "application/json"}
    if identity:
        headers["x-cairn-identity"] = identity
    try:
        connection.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), json.loads(response.read() or b"null")
    finally:
        connection.close()


def start(gateway: ApiGateway, job_id: str, *, identity: str | None = None) -> tuple[int, dict[str, str], Any]:
    body = {"pipeline": "document-intake", "jobId": job_id, "state": INVOICE}
    return request(gateway, "POST", "/jobs", body, identity=identity)


def test_a_start_past_the_owners_rate_is_429_with_retry_after_and_starts_nothing(
    gateway: ApiGateway, stack_clock: FakeClock
) -> None:
    stack_clock.advance_to((stack_clock() // 60_000 + 1) * 60_000 + 15_000)  # 15 s into a minute
    for number in range(LIMIT):
        assert start(gateway, f"job-{number}")[0] == 202

    status, headers, body = start(gateway, "job-over")

    assert status == 429
    assert body["error"]["code"] == "rate_limited"
    assert f"started {LIMIT} jobs this minute" in body["error"]["message"]
    assert headers["Retry-After"] == "45"  # the rest of the minute
    assert request(gateway, "GET", "/jobs/job-over")[0] == 404  # nothing started
    assert start(gateway, "job-other", identity="arn:aws:iam::123456789012:user/bob")[0] == 202  # bob's own rate
    stack_clock.advance(45)
    assert start(gateway, "job-over")[0] == 202  # the next minute


def test_a_start_refused_as_bad_input_is_not_counted(gateway: ApiGateway) -> None:
    unknown = {"pipeline": "no-such-pipeline", "jobId": "nope", "state": INVOICE}
    bad_state = {"pipeline": "document-intake", "jobId": "bad", "state": {"document": 7}}
    for _ in range(LIMIT + 1):
        assert request(gateway, "POST", "/jobs", unknown)[0] == 400
        assert request(gateway, "POST", "/jobs", bad_state)[0] == 400
    for number in range(LIMIT):
        assert start(gateway, f"job-{number}")[0] == 202


@pytest.mark.parametrize("corrupt", [{"S": "many"}, {"BOOL": True}, {"L": []}])
def test_a_corrupt_count_is_started_again_not_a_refusal_nor_an_outage(
    gateway: ApiGateway, stack: LocalStack, stack_clock: FakeClock, corrupt: dict[str, Any]
) -> None:
    stack_clock.advance_to((stack_clock() // 60_000 + 1) * 60_000 + 5_000)
    assert stack.runtime.dynamodb is not None
    table = stack.runtime.settings.table_name
    assert table is not None
    key = {"pk": {"S": f"RATE#{LOCAL_IDENTITY}"}, "sk": {"S": f"STARTS#{stack_clock() // 60_000}"}}
    stack.runtime.dynamodb.put_item(TableName=table, Item={**key, "starts": corrupt})

    assert start(gateway, "job-0")[0] == 202  # counted as the minute's first
    stored = stack.runtime.dynamodb.get_item(TableName=table, Key=key)["Item"]
    assert stored["starts"] == {"N": "1"}
    for number in range(1, LIMIT):
        assert start(gateway, f"job-{number}")[0] == 202
    assert start(gateway, "job-over")[0] == 429  # the limit holds again


def test_anonymous_health_answers_without_reading_the_table(gateway: ApiGateway, stack: LocalStack) -> None:
    assert request(gateway, "GET", "/health/deep")[2] == {"status": "ok", "driver": "direct", "checked": "table"}
    assert stack.runtime.dynamodb is not None
    assert stack.runtime.settings.table_name is not None
    stack.runtime.dynamodb.delete_table(TableName=stack.runtime.settings.table_name)

    status, _, body = request(gateway, "GET", "/health")
    assert (status, body) == (200, {"status": "ok", "driver": "direct", "checked": "api"})  # no table to read
    status, _, body = request(gateway, "GET", "/health/deep")
    assert (status, body["error"]["code"]) == (503, "unavailable")


def test_the_deep_check_needs_a_caller(stack: LocalStack) -> None:
    stack.register(FUNCTION, api_handler(PIPELINES, runtime=stack.runtime))
    event = load_event("api/health-deep")
    event["requestContext"].pop("authorizer", None)
    reply = stack.call(FUNCTION, event)
    assert reply["statusCode"] == 401


def test_the_routes_are_public_or_signed_as_the_template_makes_them() -> None:
    paths = template_stack().properties("HttpApi")["Body"]["paths"]
    for route in ROUTES:
        security = paths[route.path][route.method.lower()].get("security") or []
        assert ({"NONE": []} in security) is route.public, route
