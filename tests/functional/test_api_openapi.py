"""The OpenAPI document declares every constraint the handler enforces: a generated client sends nothing refused."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from cairn import InvalidInputError, JobStatus
from cairn.aws.api import MAX_PAGE_SIZE
from cairn.aws.api_models import CURSOR_PATTERN, JOB_ID_MAX_LENGTH, MAX_CURSOR_CHARS, PIPELINE_MAX_LENGTH
from cairn.aws.api_reads import MAX_HISTORY_PAGE, MAX_LOG_PAGE
from cairn.aws.api_request import MAX_JSON_DEPTH
from cairn.core.engine import SIGNAL_NAME_PATTERN
from cairn.core.ids import JOB_ID_PATTERN, validate_job_id
from cairn.core.pipeline import NAME_PATTERN
from pipelines import PIPELINES
from tests.events import load_event
from tests.functional.api_client import Api

Operation = tuple[str, str, dict[str, Any]]


@pytest.fixture
def document(api: Api) -> dict[str, Any]:
    reply = api.call("openapi")
    assert reply.status == 200
    return dict(reply.body)


def operations(document: dict[str, Any]) -> Iterator[Operation]:
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield method.upper(), path, operation


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with a ``$ref`` (or an ``anyOf`` of one type and null) followed to what it names."""
    if "anyOf" in schema:
        (schema,) = [option for option in schema["anyOf"] if option.get("type") != "null"]
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/components/schemas/")
        return dict(document["components"]["schemas"][name])
    return schema


def parameter(operation: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [param for param in operation.get("parameters", []) if param["name"] == name]
    return dict(found)


def test_every_job_id_path_parameter_declares_the_job_id_rule(document: dict[str, Any]) -> None:
    with_job_id = [(method, path, op) for method, path, op in operations(document) if "{jobId}" in path]
    assert len(with_job_id) == 12

    for method, path, operation in with_job_id:
        job_id = parameter(operation, "jobId")
        assert (job_id["in"], job_id["required"]) == ("path", True), (method, path)
        schema = job_id["schema"]
        assert schema["type"] == "string"
        assert schema["pattern"] == JOB_ID_PATTERN.pattern, (method, path)
        assert (schema["minLength"], schema["maxLength"]) == (1, JOB_ID_MAX_LENGTH), (method, path)


def test_the_declared_job_id_rule_is_the_one_the_handler_applies(api: Api, document: dict[str, Any]) -> None:
    schema = parameter(document["paths"]["/jobs/{jobId}"]["get"], "jobId")["schema"]
    declared = re.compile(schema["pattern"])
    for candidate in ["a", "a" * schema["maxLength"], "a" * (schema["maxLength"] + 1), "-a", "a\n", "a.b_c-d"]:
        fits = bool(declared.fullmatch(candidate)) and len(candidate) <= schema["maxLength"]
        refusal: str | None = None
        try:  # only the rule's own refusal counts as one: any other exception fails the test
            validate_job_id(candidate)
        except InvalidInputError as exc:
            refusal = str(exc)
        assert fits == (refusal is None), (candidate, refusal)
        assert refusal is None or refusal.startswith("Invalid job id "), (candidate, refusal)

        reply = api.call("get-job", job_id=candidate)  # no such job: a 404 if the handler takes the id, else a 400
        if fits:
            assert (reply.status, reply.code) == (404, "not_found"), (candidate, reply.body)
        else:
            assert (reply.status, reply.code) == (400, "invalid_request"), (candidate, reply.body)
            said = "path parameter jobId: Invalid job id " if candidate.isprintable() else "The request path contains"
            assert reply.message.startswith(said), (candidate, reply.message)  # a control character: before the rule


def test_the_listing_declares_its_bounds_and_the_status_enum(document: dict[str, Any]) -> None:
    listing = document["paths"]["/jobs"]["get"]

    limit = parameter(listing, "limit")["schema"]
    assert (limit["type"], limit["minimum"], limit["maximum"]) == ("integer", 1, MAX_PAGE_SIZE)
    status = resolve(document, parameter(listing, "status")["schema"])
    assert status["enum"] == [status.value for status in JobStatus]
    cursor = resolve(document, parameter(listing, "cursor")["schema"])
    assert (cursor["type"], cursor["pattern"]) == ("string", CURSOR_PATTERN)
    assert (cursor["minLength"], cursor["maxLength"]) == (1, MAX_CURSOR_CHARS)


def test_the_history_and_log_pages_declare_their_bounds_and_cursor(document: dict[str, Any]) -> None:
    for path, most in (("/jobs/{jobId}/history", MAX_HISTORY_PAGE), ("/jobs/{jobId}/log", MAX_LOG_PAGE)):
        operation = document["paths"][path]["get"]
        limit = resolve(document, parameter(operation, "limit")["schema"])
        assert (limit["type"], limit["minimum"], limit["maximum"]) == ("integer", 1, most), path
        cursor = resolve(document, parameter(operation, "cursor")["schema"])
        assert (cursor["type"], cursor["pattern"], cursor["maxLength"]) == ("string", CURSOR_PATTERN, MAX_CURSOR_CHARS)
    view = document["components"]["schemas"]["JobView"]["properties"]
    assert "GET /jobs/{jobId}/history" in view["historyCursor"]["description"]


def test_a_cursor_outside_the_declared_alphabet_is_refused_by_the_declaration(api: Api) -> None:
    reply = api.call("list-jobs", query={"cursor": "not a cursor!"})

    assert reply.status == 400
    assert reply.message.startswith("query parameter cursor: String should match pattern"), reply.message


def test_the_signal_name_is_declared_whole_as_the_engine_matches_it(document: dict[str, Any]) -> None:
    name = parameter(document["paths"]["/jobs/{jobId}/signals/{name}"]["post"], "name")["schema"]
    declared = re.compile(name["pattern"])
    for candidate in ["ok", "a" * 64, "a" * 65, "ok name", "é", "-a", "a.b_c-d", "x/ok"]:
        fits = bool(declared.search(candidate)) and len(candidate) <= name["maxLength"]
        assert fits == bool(SIGNAL_NAME_PATTERN.fullmatch(candidate)), candidate


def test_the_document_names_the_deployments_pipelines_and_their_phases(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]

    assert schemas["CreateJobRequest"]["properties"]["pipeline"]["enum"] == sorted(PIPELINES.names)
    phase = resolve(document, schemas["RetryRequest"]["properties"]["phase"])
    assert phase["enum"] == sorted({name for pipeline in PIPELINES for name in pipeline.phase_names})


def test_the_retry_body_declares_which_modes_take_a_phase(document: dict[str, Any]) -> None:
    without, with_phase = document["components"]["schemas"]["RetryRequest"]["oneOf"]

    assert without["properties"] == {"mode": {"enum": ["resume", "full"]}, "phase": {"type": "null"}}
    assert with_phase["properties"]["mode"] == {"enum": ["from"]}
    assert with_phase["required"] == ["mode", "phase"]


def test_a_body_declares_how_deeply_it_may_nest(document: dict[str, Any]) -> None:
    for method, path, operation in operations(document):
        body = operation.get("requestBody")
        if body is None:
            continue
        assert f"nest at most {MAX_JSON_DEPTH} deep" in body["description"], (method, path)
        assert all(media["schema"]["x-max-depth"] == MAX_JSON_DEPTH for media in body["content"].values())


def test_a_retry_that_fits_the_document_but_not_the_job_is_409_and_changes_nothing(api: Api) -> None:
    api.create()
    before = api.stored()
    assert before.checkpoint is not None
    own = PIPELINES.get(before.pipeline)
    other_phase = next(name for pipeline in PIPELINES for name in pipeline.phase_names if not own.has_phase(name))

    state = json.loads(load_event("api/create-job")["body"])["state"]  # a state the pipeline's model accepts
    for body, words in (
        ({"mode": "resume", "state": state}, "ignore the state"),
        ({"mode": "from", "phase": other_phase}, f'no phase "{other_phase}"'),
    ):
        reply = api.call("retry-job-from", body=body)
        assert (reply.status, reply.code) == (409, "conflict"), (body, reply.body)
        assert words in reply.message, (body, reply.message)
    assert api.stored() == before


def test_the_create_body_declares_the_pipeline_and_job_id_rules(document: dict[str, Any]) -> None:
    create = document["components"]["schemas"]["CreateJobRequest"]

    assert create["additionalProperties"] is False
    assert create["required"] == ["pipeline"]
    pipeline = create["properties"]["pipeline"]
    assert pipeline["pattern"] == NAME_PATTERN.pattern
    assert (pipeline["minLength"], pipeline["maxLength"]) == (1, PIPELINE_MAX_LENGTH)
    job_id = resolve(document, create["properties"]["jobId"])
    assert (job_id["pattern"], job_id["maxLength"]) == (JOB_ID_PATTERN.pattern, JOB_ID_MAX_LENGTH)


def test_the_retry_body_declares_its_modes(document: dict[str, Any]) -> None:
    retry = document["components"]["schemas"]["RetryRequest"]

    assert retry["additionalProperties"] is False
    assert resolve(document, retry["properties"]["mode"])["enum"] == ["resume", "full", "from"]


def test_a_route_that_reads_a_body_declares_json_only_and_its_body_refusals(document: dict[str, Any]) -> None:
    with_body = [(method, path, op) for method, path, op in operations(document) if "requestBody" in op]
    assert {(method, path) for method, path, _ in with_body} == {
        ("POST", "/bulk"),
        ("POST", "/jobs"),
        ("POST", "/jobs/{jobId}/retry"),
        ("POST", "/jobs/{jobId}/signals/{name}"),
    }

    for _, _, operation in with_body:
        assert list(operation["requestBody"]["content"]) == ["application/json"]
        assert {"400", "413", "415", "500"} <= set(operation["responses"])
