"""Bad input through the API's handler, as a user's request arrives: a clear 4xx, never a 500, and nothing changes."""

from __future__ import annotations

import base64
import dataclasses
import json
import random
from typing import Any

import pytest

from cairn import JobStatus
from cairn.aws.api import api_handler
from cairn.aws.api_request import MAX_BODY_BYTES, MAX_JSON_DEPTH
from cairn.aws.payloads import MAX_INPUT_BYTES
from cairn.aws.runtime import Runtime
from pipelines import PIPELINES
from tests.events import load_event
from tests.functional.api_client import JOB, Api, Reply, for_job

STATE = {"document": "invoice.txt"}
JOB_ROUTES = ["get-job", "get-job-log", "retry-job-resume", "pause-job", "cancel-job"]


def raw_event(
    name: str, body: str, *, content_type: str | None = "application/json", base64_encoded: bool = False
) -> dict[str, Any]:
    """Sample event ``api/<name>`` carrying ``body`` exactly as given (no JSON encoding)."""
    event = load_event(f"api/{name}")
    event["body"] = body
    event["isBase64Encoded"] = base64_encoded
    if content_type is None:
        event["headers"].pop("content-type", None)
    else:
        event["headers"]["content-type"] = content_type
    return event


def create_body(**fields: Any) -> str:
    return json.dumps({"pipeline": "document-intake", "jobId": "new-1", "state": STATE, **fields})


@pytest.fixture
def settled(api: Api) -> Api:
    """The API with one finished job, to check that a refused request changes nothing."""
    api.create()
    api.run()
    return api


def assert_nothing_changed(api: Api, before: tuple[Any, int]) -> None:
    job, items = before
    assert api.stored() == job
    assert api.item_count() == items
    assert api.stack.invoker.pending() == 0


def snapshot(api: Api) -> tuple[Any, int]:
    return api.stored(), api.item_count()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


UNREADABLE_BODIES = {
    "nested-50000-deep": (raw_event("create-job", "[" * 50000), 400, "The request body nests arrays and objects"),
    "state-nested-deep": (
        raw_event("create-job", '{"pipeline":"document-intake","state":' + "[" * 5000 + "]" * 5000 + "}"),
        400,
        f"The request body nests arrays and objects more than {MAX_JSON_DEPTH} deep",
    ),
    "nested-just-too-deep": (
        raw_event("create-job", create_body(state={"x": json.loads("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)})),
        400,
        "The request body nests arrays and objects",
    ),
    "integer-of-5000-digits": (
        raw_event("create-job", '{"pipeline":"document-intake","state":{"n":' + "9" * 5000 + "}}"),
        400,
        "A number in the request body has more than",
    ),
    "float-overflowing": (
        raw_event("create-job", '{"pipeline":"document-intake","state":{"n":1e999}}'),
        400,
        "A number in the request body is too large",
    ),
    "nan": (
        raw_event("create-job", '{"pipeline":"document-intake","state":NaN}'),
        400,
        "The request body is not valid",
    ),
    "not-utf-8": (
        raw_event("create-job", b64(b'{"pipeline":"document-intake","jobId":"\xff\xfe"}'), base64_encoded=True),
        400,
        "The request body is not UTF-8 text",
    ),
    "lone-surrogate": (
        raw_event("create-job", '{"pipeline":"document-intake","jobId":"new-1","state":{"document":"\\ud800"}}'),
        400,
        "The request body holds a string that is not valid Unicode",
    ),
    "invalid-base64": (
        raw_event("create-job", "!!not base64!!", base64_encoded=True),
        400,
        "The request body is not valid base64",
    ),
    "multipart-without-boundary": (
        raw_event("create-job", create_body(), content_type="multipart/form-data"),
        415,
        "Send the request body as application/json",
    ),
    "multipart-with-boundary": (
        raw_event("create-job", b64(b"--x\r\n\r\n--x--"), content_type="multipart/form-data; boundary=x"),
        415,
        "Send the request body as application/json",
    ),
    "form-encoded": (
        raw_event("create-job", "pipeline=document-intake", content_type="application/x-www-form-urlencoded"),
        415,
        "Send the request body as application/json",
    ),
    "text-plain": (raw_event("create-job", create_body(), content_type="text/plain"), 415, "Send the request body"),
    "json-in-latin-1": (
        raw_event("create-job", create_body(), content_type="application/json; charset=latin-1"),
        415,
        "Send the request body",
    ),
    "not-json": (raw_event("create-job", "{not json"), 400, "The request body is not valid JSON"),
    "retry-nested-deep": (raw_event("retry-job-full", "[" * 50000), 400, "The request body nests"),
    "retry-not-utf-8": (
        raw_event("retry-job-full", b64(b'{"mode":"\xc3"}'), base64_encoded=True),
        400,
        "The request body is not UTF-8",
    ),
}


@pytest.mark.parametrize(("event", "status", "message"), UNREADABLE_BODIES.values(), ids=UNREADABLE_BODIES.keys())
def test_a_body_the_api_cannot_read_is_a_clear_4xx_and_changes_nothing(
    settled: Api, event: dict[str, Any], status: int, message: str
) -> None:
    before = snapshot(settled)

    reply = settled.send(event)

    assert reply.status == status, reply.body
    assert reply.code == ("unsupported_media_type" if status == 415 else "invalid_request")
    assert reply.message.startswith(message), reply.message
    assert_nothing_changed(settled, before)


@pytest.mark.parametrize(
    "content_type", [None, "application/json; charset=utf-8", "Application/JSON", 'application/json;charset="UTF-8"']
)
def test_a_json_body_is_read_whatever_the_spelling_of_its_type(api: Api, content_type: str | None) -> None:
    reply = api.send(raw_event("create-job", create_body(), content_type=content_type))

    assert reply.status == 202, reply.body
    assert api.stored("new-1").input["document"] == STATE["document"]


def test_a_base64_encoded_json_body_is_read(api: Api) -> None:
    reply = api.send(raw_event("create-job", b64(create_body().encode()), base64_encoded=True))

    assert reply.status == 202, reply.body
    assert api.stored("new-1").input["document"] == STATE["document"]


def test_a_body_nested_as_deep_as_allowed_with_a_long_number_is_read(api: Api) -> None:
    deep = json.loads("[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1))
    body = json.dumps({"pipeline": "document-intake", "deep": deep, "n": int("9" * 999)})

    reply = api.send(raw_event("create-job", body))

    # read, then refused by the request model: the body itself was fine
    assert (reply.status, reply.code) == (400, "invalid_request")
    assert reply.message == "body.deep: is not a known field; body.n: is not a known field"


@pytest.mark.parametrize("job_id", ["job-1\n", "job-1\r", "job-1\t", "job\n-1"])
def test_a_job_id_with_a_control_character_in_the_body_is_400(api: Api, job_id: str) -> None:
    reply = api.send(raw_event("create-job", create_body(jobId=job_id)))

    assert (reply.status, reply.code) == (400, "invalid_request")
    assert reply.message.startswith("body.jobId: Invalid job id")
    assert api.item_count() == 0


@pytest.mark.parametrize("name", JOB_ROUTES)
@pytest.mark.parametrize("suffix", ["\n", "%0A", "%0a", "\r\n", "%00"])
def test_a_job_id_with_a_trailing_newline_in_the_path_is_400_and_never_reaches_the_job(
    settled: Api, name: str, suffix: str
) -> None:
    before = snapshot(settled)

    reply = settled.send(for_job(load_event(f"api/{name}"), JOB + suffix))

    assert (reply.status, reply.code) == (400, "invalid_request"), reply.body
    assert "control character" in reply.message or "Invalid job id" in reply.message
    assert_nothing_changed(settled, before)


def test_a_megabyte_pipeline_name_gets_a_short_400(api: Api) -> None:
    reply = api.send(raw_event("create-job", json.dumps({"pipeline": "x" * 1_000_000})))

    assert (reply.status, reply.code) == (400, "invalid_request")
    assert reply.message == "body.pipeline: String should have at most 64 characters"
    assert api.item_count() == 0


@pytest.mark.parametrize("pipeline", ["document-intake\n", "", "-dash", "has space", "émoji"])
def test_a_pipeline_name_outside_the_rule_is_400(api: Api, pipeline: str) -> None:
    reply = api.send(raw_event("create-job", create_body(pipeline=pipeline)))

    assert (reply.status, reply.code) == (400, "invalid_request")
    assert reply.message.startswith("body.pipeline: String should")
    assert api.item_count() == 0


def test_an_unknown_pipeline_is_named_but_never_quoted_whole() -> None:
    with pytest.raises(Exception, match="Unknown pipeline") as refused:
        PIPELINES.get("y" * 1000 + "\n")

    message = str(refused.value)
    assert len(message) < 250
    assert "\n" not in message
    assert message.startswith('Unknown pipeline "' + "y" * 100 + "…")


def test_unknown_fields_are_named_short_and_only_the_first_ten(api: Api) -> None:
    body = {"pipeline": "document-intake", "k" * 100_000: 1, **{f"extra{i}": i for i in range(5000)}}

    reply = api.send(raw_event("create-job", json.dumps(body)))

    assert (reply.status, reply.code) == (400, "invalid_request")
    assert len(reply.message) <= 1000
    assert reply.message.startswith("body." + "k" * 100 + "…: is not a known field; body.extra0")
    assert reply.message.endswith("and 4991 more")


def test_an_unknown_route_is_named_short_and_escaped(api: Api) -> None:
    event = load_event("api/get-job")
    event["rawPath"] = event["requestContext"]["http"]["path"] = "/nothing/" + "z" * 10_000

    reply = api.send(event)

    assert (reply.status, reply.code) == (404, "not_found")
    assert len(reply.message) < 150


def send_body(api: Api, name: str, body: str, **kwargs: Any) -> Reply:
    return api.send(raw_event(name, body, **kwargs))


def small_api(api: Api, name: str, **kwargs: Any) -> str:
    """Deploy another API function on the same stack, built with ``kwargs``; returns its name."""
    api.stack.register(name, api_handler(PIPELINES, **kwargs))
    return name


def call(api: Api, function: str, event: dict[str, Any]) -> Reply:
    response = api.stack.call(function, event)
    return Reply(response["statusCode"], json.loads(response["body"]), response["headers"])


@pytest.mark.parametrize("base64_encoded", [False, True])
def test_a_body_over_the_configured_maximum_is_413_before_anything_is_written(
    settled: Api, base64_encoded: bool
) -> None:
    function = small_api(settled, "cairn-api-small", runtime=settled.stack.runtime, max_body_bytes=2000)
    body = create_body(state={"document": "x" * 3000})
    event = raw_event("create-job", b64(body.encode()) if base64_encoded else body, base64_encoded=base64_encoded)
    before = snapshot(settled)

    reply = call(settled, function, event)

    assert (reply.status, reply.body["error"]["code"]) == (413, "request_too_large")
    assert reply.body["error"]["message"] == "The request body is over the limit of 2000 bytes"
    assert_nothing_changed(settled, before)
    assert settled.job("new-1") is None


def test_a_body_over_the_default_maximum_is_413(settled: Api) -> None:
    before = snapshot(settled)
    body = create_body(state={"document": "x" * MAX_BODY_BYTES})

    reply = send_body(settled, "create-job", body)

    assert (reply.status, reply.code) == (413, "request_too_large")
    assert str(MAX_BODY_BYTES) in reply.message
    assert_nothing_changed(settled, before)


@pytest.mark.parametrize("name", ["create-job", "retry-job-full"])
def test_a_state_over_the_input_limit_is_413_before_anything_is_written(settled: Api, name: str) -> None:
    before = snapshot(settled)
    body: dict[str, Any] = {"pipeline": "document-intake"} if name == "create-job" else {"mode": "full"}
    body["state"] = {"document": "x" * MAX_INPUT_BYTES}

    reply = send_body(settled, name, json.dumps(body))

    assert (reply.status, reply.code) == (413, "state_too_large")
    assert (
        reply.message == f"The state is {MAX_INPUT_BYTES + 15} bytes as JSON, over the limit of {MAX_INPUT_BYTES} bytes"
    )
    assert_nothing_changed(settled, before)


def test_a_state_the_store_cannot_hold_is_413_before_anything_is_written(api: Api) -> None:
    settings = dataclasses.replace(api.stack.runtime.settings, state_bucket=None, inline_state_limit=2000)
    runtime: Runtime = dataclasses.replace(api.stack.runtime, settings=settings)
    function = small_api(api, "cairn-api-inline", runtime=runtime)
    incompressible = base64.b64encode(random.Random(7).randbytes(12_000)).decode()

    reply = call(api, function, raw_event("create-job", create_body(state={"document": incompressible})))

    assert (reply.status, reply.body["error"]["code"]) == (413, "state_too_large")
    assert api.item_count() == 0
    assert api.stack.invoker.pending() == 0


def test_a_refused_request_leaves_a_running_job_running(api: Api) -> None:
    api.create()
    before = snapshot(api)

    for name in ("retry-job-full", "pause-job", "cancel-job"):
        event = for_job(load_event(f"api/{name}"), JOB + "\n")
        assert api.send(event).status == 400
    assert api.send(raw_event("retry-job-full", "[" * 50000)).status == 400

    job, items = before
    assert api.stored() == job
    assert api.stored().status == JobStatus.RUNNING
    assert api.item_count() == items
