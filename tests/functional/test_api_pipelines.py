"""``GET /pipelines``: what a form needs to start a job of each pipeline (phases, state schema, a sample state)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from cairn import Pipeline
from cairn.aws.api import api_handler
from cairn.core.registry import PipelineRegistry
from cairn.testing.api import ApiClient
from document_intake.state import IntakeState
from pipelines import PIPELINES
from research_brief.state import BriefState
from tests.events import load_event
from tests.functional.api_client import ALICE, Api


class Greeting(BaseModel):
    """A state model without examples."""

    name: str


class Opaque:
    """A Python type no JSON schema describes."""


class Undescribed(BaseModel):
    """A state model JSON schema cannot describe."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    thing: Opaque | None = None


def noop(ctx: Any) -> Any:
    return None


def pipeline(name: str, state: type[Any] | None = None) -> Pipeline[Any]:
    made: Pipeline[Any] = Pipeline(name, state=state)
    made.phase(name="first")(noop)
    made.phase(name="second")(noop)
    return made


def test_each_pipeline_with_its_phases_in_order_its_state_schema_and_a_sample(api: Api) -> None:
    items = api.item_count()

    reply = api.call("list-pipelines")

    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/json"
    listed = reply.body["pipelines"]
    assert [pipeline["name"] for pipeline in listed] == sorted(PIPELINES.names)  # every one, by name
    (intake,) = [pipeline for pipeline in listed if pipeline["name"] == "document-intake"]
    (brief,) = [pipeline for pipeline in listed if pipeline["name"] == "research-brief"]
    assert set(intake) == {"name", "phases", "stateSchema", "sample", "signals"}
    assert intake["signals"] == {}  # it waits for no signal
    assert intake["name"] == "document-intake"
    assert intake["phases"] == ["fetch", "split", "extract", "extract_page", "publish"]  # as registered
    assert intake["phases"] == PIPELINES.get("document-intake").phase_names
    assert intake["stateSchema"] == IntakeState.model_json_schema()
    assert intake["stateSchema"]["additionalProperties"] is False
    assert intake["sample"] == {"document": "invoice.txt"}
    IntakeState.model_validate(intake["sample"])  # the sample is a valid initial state
    assert brief["name"] == "research-brief"
    assert brief["phases"] == ["plan", "gather", "write", "review", "publish"]
    BriefState.model_validate(brief["sample"])
    assert api.item_count() == items  # nothing read or written for it but the registry


def test_plain_or_undescribable_state_has_an_empty_schema_and_a_model_without_examples_no_sample(api: Api) -> None:
    registry = PipelineRegistry(
        [pipeline("zeta-plain"), pipeline("alpha-greeting", Greeting), pipeline("mid-opaque", Undescribed)]
    )
    api.stack.register("cairn-api-other", api_handler(registry, runtime=api.stack.runtime))

    reply = ApiClient(api.stack, owner=ALICE, function="cairn-api-other").send(load_event("api/list-pipelines"))

    assert reply.status == 200
    assert reply.body == {
        "pipelines": [
            {
                "name": "alpha-greeting",
                "phases": ["first", "second"],
                "stateSchema": Greeting.model_json_schema(),
                "sample": None,
                "signals": {},
            },
            {"name": "mid-opaque", "phases": ["first", "second"], "stateSchema": {}, "sample": None, "signals": {}},
            {"name": "zeta-plain", "phases": ["first", "second"], "stateSchema": {}, "sample": None, "signals": {}},
        ]
    }


def test_the_listing_needs_a_caller(api: Api) -> None:
    event = load_event("api/list-pipelines")
    event["requestContext"].pop("authorizer")

    reply = api.send(event)

    assert reply.status == 401
    assert reply.code == "unauthenticated"


def test_the_openapi_document_declares_the_listing(api: Api) -> None:
    document = api.call("openapi").body

    operation = document["paths"]["/pipelines"]["get"]
    assert set(operation["responses"]) == {"200", "400", "401", "500"}
    schemas = document["components"]["schemas"]
    assert set(schemas["PipelineView"]["properties"]) == {"name", "phases", "stateSchema", "sample", "signals"}
    assert schemas["PipelineList"]["properties"]["pipelines"]["items"] == {"$ref": "#/components/schemas/PipelineView"}
