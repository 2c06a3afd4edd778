"""The API's OpenAPI document as one deployment serves it: every rule the handler applies to a request.

The request models (:mod:`cairn.aws.api_models`) declare the rules the handler
checks with them; this module adds what only the deployment knows (the names of
its pipelines and their phases, as enums taken from the registry the handler looks
them up in) and, in words, the few rules JSON Schema cannot state: how deeply a
body may nest (:data:`~cairn.aws.api_request.MAX_JSON_DEPTH`), a state the
pipeline's model refuses, a cursor the listing did not return. Each of those is a
documented 400.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, content_types

from ..core.pipeline import Pipeline
from .api_models import CreateJobRequest, RetryRequest
from .api_request import MAX_JSON_DEPTH

#: An extension naming the nesting limit of a body, for tools that read one (JSON Schema has no keyword for it).
MAX_DEPTH_KEY = "x-max-depth"
DEPTH_RULE = (
    f"Arrays and objects in the body nest at most {MAX_JSON_DEPTH} deep (``{MAX_DEPTH_KEY}``); a deeper body is "
    "refused with 400, a rule JSON Schema cannot state."
)
INVALID_REQUEST = "The request does not fit this document"
#: What else a 400 of a route may mean, beyond not fitting the document: rules no schema can state.
FURTHER_REFUSALS = {
    ("post", "/jobs"): "or its state does not fit the pipeline's state model (GET /pipelines gives its schema)",
    ("post", "/jobs/{jobId}/retry"): "or its state does not fit the job's pipeline's state model",
    ("get", "/jobs"): "or its cursor is not one this listing returned",
}


def openapi_document(resolver: APIGatewayHttpResolver) -> dict[str, Any]:
    """The API's OpenAPI document, with the errors as the API returns them.

    An invalid request is a 400 (not Powertools' 422), a 500 has the one error body, and a
    route that reads a body may refuse it as too large (413) or not JSON (415), or nested too deep (400).
    """
    document: dict[str, Any] = json.loads(resolver.get_openapi_json_schema())
    content = {content_types.APPLICATION_JSON: {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    body_errors = (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, HTTPStatus.UNSUPPORTED_MEDIA_TYPE)
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            body = operation.get("requestBody")
            statuses = (HTTPStatus.INTERNAL_SERVER_ERROR, *(body_errors if body is not None else ()))
            for status in statuses:
                responses[str(status.value)] = {"description": status.phrase, "content": content}
            if body is not None:
                body["description"] = " ".join(filter(None, (body.get("description"), DEPTH_RULE)))
                for media in body.get("content", {}).values():
                    media.setdefault("schema", {})[MAX_DEPTH_KEY] = MAX_JSON_DEPTH
            if str(HTTPStatus.BAD_REQUEST.value) in responses:
                further = FURTHER_REFUSALS.get((method, path))
                responses[str(HTTPStatus.BAD_REQUEST.value)]["description"] = (
                    f"{INVALID_REQUEST}, {further}" if further else INVALID_REQUEST
                )
    schemas = document.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        schemas.pop(name, None)
    return document


def with_deployment(document: dict[str, Any], pipelines: Iterable[Pipeline[Any]]) -> dict[str, Any]:
    """``document`` with the deployment's pipeline names and phase names as the enums a request must use.

    The handler looks each up in the same registry: an unknown pipeline or phase is a 400.
    """
    chosen = list(pipelines)
    served = copy.deepcopy(document)
    schemas = served.get("components", {}).get("schemas", {})
    _enum(schemas, CreateJobRequest, "pipeline", sorted(pipeline.name for pipeline in chosen))
    _enum(schemas, RetryRequest, "phase", sorted({phase for pipeline in chosen for phase in pipeline.phase_names}))
    return served


def _enum(schemas: dict[str, Any], model: type[Any], field: str, values: list[str]) -> None:
    """Restrict the string form of ``model``'s ``field`` in the document to ``values``."""
    alias = model.model_fields[field].alias or field
    declared = schemas[model.__name__]["properties"][alias]
    for choice in (declared, *declared.get("anyOf", ())):
        if choice.get("type") == "string":
            choice["enum"] = values
