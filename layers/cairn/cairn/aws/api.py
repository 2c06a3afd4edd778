"""The API function: start, watch, retry, pause and cancel jobs over an HTTP API (payload format 2.0).

Routes (errors are ``{"error": {"code", "message"}}``; see :mod:`cairn.aws.api_errors`):

- ``GET /jobs`` and the other reads of the caller's jobs (:mod:`.api_jobs`); ``POST /jobs`` and the actions on a
  job, retry, pause, cancel and signal (:mod:`.api_actions`); ``POST /jobs/{jobId}/nudge`` revives a stalled
  job now (:mod:`.api_nudge`).
- ``POST /bulk`` retries, restarts or cancels many jobs in the scheduler function, ``GET /bulk/{bulkId}`` follows
  it (:mod:`.api_bulk`).
- ``GET /jobs/{jobId}/states/{phase}`` and ``GET /jobs/{jobId}/diff`` show what it saw (:mod:`.api_states`);
  ``GET /jobs/{jobId}/maps`` and ``.../maps/{mapId}/items/{index}`` what its maps did (:mod:`.api_maps`).
- ``GET /failures`` groups the caller's failed jobs by exception type, phase and pipeline (:mod:`.api_failures`).
- ``GET /pipelines`` lists the deployment's pipelines: phases, state schema and a sample state (for a form).
- Every reply stays under :data:`~cairn.aws.api_limits.MAX_REPLY_BYTES` (Lambda returns at most 6 MB); one
  that would not is a 500 ``reply_too_large`` saying so (:func:`~.api_limits.within_limit`).
- ``GET /health`` reads nothing (public); ``GET /health/deep`` reads the table once (signed callers);
  ``GET /openapi.json`` is this API's OpenAPI document.
- ``GET /dashboard`` is the dashboard's page, ``GET /assets/{file}`` its files: public (they hold no secret),
  left out of the OpenAPI document; the page calls the routes above with the user's token.

The owner of the jobs a request sees comes only from the authorizer context
(:mod:`cairn.aws.api_auth`); another owner's job is reported as absent (404).

The routes are module-level functions of one resolver, :data:`app`, and of the routers it includes; each acts
through the front door (:class:`cairn.Cairn`) onto the caller's jobs, which
:class:`~cairn.aws.api_services.ApiServices` builds per request.
"""

from __future__ import annotations

import functools
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from ..core.errors import (
    StorageError,
)
from ..core.pipeline import Pipeline
from ..core.registry import PipelineRegistry
from ..dashboard.assets import INDEX, asset, reply
from .api_actions import router as actions_router
from .api_auth import Unauthenticated, is_public, owner_of
from .api_bulk import router as bulk_router
from .api_document import openapi_document, with_deployment
from .api_errors import ApiError, install_error_handlers, refusal
from .api_failures import router as failures_router
from .api_jobs import MAX_PAGE_SIZE as MAX_PAGE_SIZE  # the page size's bound, by its old path
from .api_jobs import router as jobs_router
from .api_limits import within_limit
from .api_maps import router as maps_router
from .api_models import (
    Health,
    PipelineList,
    PipelineView,
)
from .api_nudge import router as nudge_router
from .api_redaction import deployment_redaction, redacted_response
from .api_request import MAX_BODY_BYTES, admit
from .api_routes import caller, responses
from .api_services import ApiServices, current_services
from .api_states import router as states_router
from .entry import Handler, entry_point
from .observability import logger, metrics
from .runtime import Runtime

API_TITLE = "cairn"
API_VERSION = "1.0.0"
API_DESCRIPTION = (
    "Start, watch, retry, pause and cancel crash-safe pipeline jobs. The caller (IAM or JWT, from API Gateway's "
    "authorizer) owns the jobs it starts and sees no one else's."
)
HEALTH_OWNER = "cairn-health"

app = APIGatewayHttpResolver(
    enable_validation=True, response_validation_error_http_code=HTTPStatus.INTERNAL_SERVER_ERROR
)
"""The API's resolver: every route below and the error handlers of :mod:`cairn.aws.api_errors`."""
app.configure_openapi(title=API_TITLE, version=API_VERSION, description=API_DESCRIPTION)
install_error_handlers(app)
app.include_router(states_router)
app.include_router(maps_router)
app.include_router(jobs_router)
app.include_router(actions_router)
app.include_router(nudge_router)
app.include_router(failures_router)
app.include_router(bulk_router)


@app.get(
    "/pipelines",
    summary="The pipelines this deployment runs",
    description="Each pipeline's phases in order, the JSON schema of its state ({} for plain JSON) and a sample "
    "initial state (the schema's first example; null when it has none): what a form to start a job needs.",
    tags=["pipelines"],
    responses=responses(HTTPStatus.OK, "Every pipeline, by name"),
)
def list_pipelines() -> PipelineList:
    caller(app)  # names the caller in the log, as every other route does
    pipelines = sorted(current_services().pipelines, key=lambda pipeline: pipeline.name)
    return PipelineList(pipelines=[PipelineView.of(pipeline) for pipeline in pipelines])


@app.get(
    "/health",
    summary="Whether the API answers",
    description="Public, for load balancers and uptime checks: reads nothing (GET /health/deep reads the table).",
    tags=["operations"],
    responses={HTTPStatus.OK.value: {"description": "The API's function answered"}},
)
def health() -> Health:
    return Health(status="ok", driver=current_services().runtime.settings.driver, checked="api")


@app.get(
    "/health/deep",
    summary="Whether the job table answers",
    description="For signed callers: one read of the job table.",
    tags=["operations"],
    responses=responses(HTTPStatus.OK, "The table answered a read", HTTPStatus.SERVICE_UNAVAILABLE),
)
def deep_health() -> Health:
    caller(app)
    services = current_services()
    storage = services.storage(HEALTH_OWNER)
    try:
        storage.list_page(limit=1)
    except StorageError as exc:
        logger.exception("Health check: the job table cannot be read", exc_info=exc)
        raise ApiError(HTTPStatus.SERVICE_UNAVAILABLE, "unavailable", "The job table cannot be read") from exc
    return Health(status="ok", driver=services.runtime.settings.driver, checked="table")


@app.get("/openapi.json", summary="This API's OpenAPI document", tags=["operations"])
def openapi() -> dict[str, Any]:
    pipelines = tuple(sorted(current_services().pipelines, key=lambda pipeline: pipeline.name))
    return _deployment_document(pipelines)


@functools.cache
def _routes_document() -> dict[str, Any]:
    """The routes' document, built on first request, then reused (the routes are fixed at import)."""
    return openapi_document(app)


@functools.lru_cache(maxsize=8)
def _deployment_document(pipelines: tuple[Pipeline[Any], ...]) -> dict[str, Any]:
    """The document with a deployment's pipeline and phase names (a function serves one deployment)."""
    return with_deployment(_routes_document(), pipelines)


# Registered without a return annotation: the response validation would decode a gzipped body as UTF-8 text.
app.get("/dashboard", include_in_schema=False)(lambda: _asset_response(INDEX))
app.get("/assets/<file>", include_in_schema=False)(lambda file: _asset_response(file))


def _asset_response(name: str) -> Response[bytes]:
    """One of the dashboard's files as :func:`~cairn.dashboard.assets.reply` answers it (a 304, or gzipped, by
    the request's headers; base64 in the event, as any bytes body); 404 for a name that is not one of them."""
    found = asset(name)
    if found is None:
        raise ApiError(HTTPStatus.NOT_FOUND, "not_found", "The dashboard has no such file")
    answer = reply(found, app.current_event.headers or {})
    headers = {key: value for key, value in answer.headers.items() if key != "Content-Type"}
    return Response(answer.status, answer.headers["Content-Type"], answer.body, headers=headers)


def _record_response(response: dict[str, Any]) -> None:
    metrics.add_metric(name="ApiRequests", unit=MetricUnit.Count, value=1)
    status = int(response.get("statusCode", 500))
    if status >= 500:
        metrics.add_metric(name="ApiServerErrors", unit=MetricUnit.Count, value=1)
    elif status >= 400:
        metrics.add_metric(name="ApiClientErrors", unit=MetricUnit.Count, value=1)


def api_handler(
    pipelines: PipelineRegistry, *, runtime: Runtime | None = None, max_body_bytes: int = MAX_BODY_BYTES
) -> Handler:
    """The API function's handler for the pipelines of a deployment.

    A request without a caller identity is refused (401) before its route or
    body is looked at, except for the public routes (health, OpenAPI); then a
    request the API cannot read (:func:`~cairn.aws.api_request.admit`: a body
    over ``max_body_bytes``, not JSON, not UTF-8) is refused with a 4xx.
    """
    services = ApiServices(pipelines, runtime)
    redaction = deployment_redaction(pipelines)

    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        try:
            if not is_public(event):
                owner_of(event)
            admitted = admit(event, max_body_bytes=max_body_bytes)
            with services.serving():
                response = within_limit(app.resolve(admitted, context))
        except Unauthenticated as exc:
            logger.info("Refused an unauthenticated request", extra={"reason": exc.message})
            response = refusal(HTTPStatus.UNAUTHORIZED, "unauthenticated", exc.message)
        except ApiError as exc:
            logger.info("Refused a request it cannot read", extra={"reason": exc.message})
            response = refusal(exc.status, exc.code, exc.message)
        _record_response(response)
        return redacted_response(response, redaction)

    return entry_point(handler, correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
