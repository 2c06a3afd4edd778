"""Every error the API returns, in one place: ``{"error": {"code", "message"}}`` with the right status.

cairn's errors are mapped by type (never by message); request validation
failures are 400 with the offending fields named; anything unexpected is a
500 that reveals nothing of the internals (the details go to the log).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
    ResponseValidationError,
)

from ..core.errors import (
    AlreadyCancelledError,
    CairnError,
    ClaimLostError,
    CorruptJobError,
    InvalidInputError,
    JobExistsError,
    JobNotFoundError,
    PipelineError,
    SchedulingError,
    StateTooLargeError,
    StorageError,
    TransitionRefusedError,
)
from ..core.models import Job
from ..core.text import cut, shown
from .api_auth import Unauthenticated
from .api_job_view import JobView
from .api_models import ErrorBody, ErrorDetail
from .observability import logger

INTERNAL_MESSAGE = "The request failed because of an internal error; it has been logged"
UNAVAILABLE_MESSAGE = "The job store or the scheduler is unavailable; try again shortly"
#: The longest message an error response carries, and how many invalid fields it names.
MAX_MESSAGE_CHARS = 1000
MAX_PROBLEMS = 10


class ApiError(Exception):
    """An error the API reports as is: its status, code and message are meant for the caller."""

    def __init__(
        self, status: HTTPStatus, code: str, message: str, *, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})


#: cairn's errors by type, most specific first: (type, status, code). The message is the error's own,
#: except for 5xx, which say nothing of the internals.
CAIRN_ERRORS: tuple[tuple[type[CairnError], HTTPStatus, str], ...] = (
    (JobNotFoundError, HTTPStatus.NOT_FOUND, "not_found"),
    (AlreadyCancelledError, HTTPStatus.CONFLICT, "already_cancelled"),
    (JobExistsError, HTTPStatus.CONFLICT, "job_exists"),
    (ClaimLostError, HTTPStatus.CONFLICT, "conflict"),
    (StateTooLargeError, HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "state_too_large"),
    (CorruptJobError, HTTPStatus.INTERNAL_SERVER_ERROR, "internal"),
    (StorageError, HTTPStatus.SERVICE_UNAVAILABLE, "unavailable"),
    (SchedulingError, HTTPStatus.SERVICE_UNAVAILABLE, "unavailable"),
    (TransitionRefusedError, HTTPStatus.CONFLICT, "conflict"),
    (InvalidInputError, HTTPStatus.BAD_REQUEST, "invalid_request"),
    (PipelineError, HTTPStatus.BAD_REQUEST, "invalid_request"),
)


def error_response(
    status: HTTPStatus, code: str, message: str, *, job: Job | None = None, headers: Mapping[str, str] | None = None
) -> Response[dict[str, Any]]:
    """The JSON error response every failure uses; a message is cut at :data:`MAX_MESSAGE_CHARS`."""
    body = ErrorBody(
        error=ErrorDetail(code=code, message=cut(message, MAX_MESSAGE_CHARS)), job=JobView.of(job) if job else None
    )
    return Response(
        status_code=status.value,
        content_type=content_types.APPLICATION_JSON,
        body=body.to_wire(),
        headers=dict(headers or {}),
    )


def cairn_error_response(exc: CairnError) -> Response[dict[str, Any]]:
    """The response for one of cairn's errors, by its type."""
    status, code = next(
        ((status, code) for error_type, status, code in CAIRN_ERRORS if isinstance(exc, error_type)),
        (HTTPStatus.INTERNAL_SERVER_ERROR, "internal"),
    )
    if status == HTTPStatus.SERVICE_UNAVAILABLE and not exc.retryable:
        status, code = HTTPStatus.INTERNAL_SERVER_ERROR, "internal"
    if status >= HTTPStatus.INTERNAL_SERVER_ERROR:
        logger.exception("Request failed", exc_info=exc)
        message = UNAVAILABLE_MESSAGE if status == HTTPStatus.SERVICE_UNAVAILABLE else INTERNAL_MESSAGE
        headers = {"Retry-After": "1"} if status == HTTPStatus.SERVICE_UNAVAILABLE else None
        return error_response(status, code, message, headers=headers)
    job = exc.job if isinstance(exc, JobExistsError | AlreadyCancelledError) and isinstance(exc.job, Job) else None
    return error_response(status, code, exc.message, job=job)


def _location(loc: Sequence[Any]) -> str:
    """``("body", "mode")`` as ``body.mode``; ``("query", "status")`` as ``query parameter status``.

    A part the caller chose (an unknown field's name) is shown short and escaped.
    """
    parts = [shown(part) if isinstance(part, str) else str(part) for part in loc]
    if len(parts) >= 2 and parts[0] in ("query", "path", "header"):
        return f"{parts[0]} parameter {'.'.join(parts[1:])}"
    return ".".join(parts) or "request"


def describe_validation_errors(errors: Sequence[Any]) -> str:
    """One readable line per invalid field, e.g. ``body.mode: Input should be 'resume' or 'full'``.

    At most :data:`MAX_PROBLEMS` fields are named; the rest are counted.
    """
    lines: list[str] = []
    for error in errors:
        if not isinstance(error, Mapping):
            continue
        kind = error.get("type")
        loc = list(error.get("loc", ()))
        if kind == "json_invalid":
            return "The request body is not valid JSON"
        if kind == "missing" and loc == ["body"]:
            return "The request body is required (a JSON object)"
        message = str(error.get("msg", "is invalid")).removeprefix("Value error, ")
        if kind == "extra_forbidden":
            message = "is not a known field"
        lines.append(f"{_location(loc)}: {message}")
    if len(lines) > MAX_PROBLEMS:
        lines[MAX_PROBLEMS:] = [f"and {len(lines) - MAX_PROBLEMS} more"]
    return "; ".join(lines) or "The request is invalid"


def _unauthenticated(exc: Unauthenticated) -> Response[dict[str, Any]]:
    return error_response(HTTPStatus.UNAUTHORIZED, "unauthenticated", exc.message)


def _api_error(exc: ApiError) -> Response[dict[str, Any]]:
    return error_response(exc.status, exc.code, exc.message, headers=exc.headers)


def _unsupported_media_type(exc: RequestUnsupportedContentType) -> Response[dict[str, Any]]:
    return error_response(
        HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", "Send the request body as application/json"
    )


def _invalid_request(exc: RequestValidationError) -> Response[dict[str, Any]]:
    return error_response(HTTPStatus.BAD_REQUEST, "invalid_request", describe_validation_errors(exc.errors()))


def _invalid_response(exc: ResponseValidationError) -> Response[dict[str, Any]]:
    logger.error("A response did not fit its model", extra={"errors": list(exc.errors())})
    return error_response(HTTPStatus.INTERNAL_SERVER_ERROR, "internal", INTERNAL_MESSAGE)


def _unexpected(exc: Exception) -> Response[dict[str, Any]]:
    logger.exception("Unexpected error", exc_info=exc)
    return error_response(HTTPStatus.INTERNAL_SERVER_ERROR, "internal", INTERNAL_MESSAGE)


def install_error_handlers(app: APIGatewayHttpResolver) -> None:
    """Register the exception handlers that turn every failure into the error shape above."""

    def no_route(exc: NotFoundError) -> Response[dict[str, Any]]:
        event = app.current_event
        return error_response(
            HTTPStatus.NOT_FOUND, "not_found", f"No route for {shown(event.http_method.upper())} {shown(event.path)}"
        )

    handlers: dict[type[Exception], Callable[[Any], Response[dict[str, Any]]]] = {
        CairnError: cairn_error_response,
        ApiError: _api_error,
        Unauthenticated: _unauthenticated,
        RequestUnsupportedContentType: _unsupported_media_type,
        RequestValidationError: _invalid_request,
        ResponseValidationError: _invalid_response,
        NotFoundError: no_route,  # no route matches the method and path
        Exception: _unexpected,  # Powertools picks the handler of the closest class
    }
    for exc_type, handler in handlers.items():
        app.exception_handler(exc_type)(handler)


def refusal(status: HTTPStatus, code: str, message: str) -> dict[str, Any]:
    """An error as the API function returns it (a Lambda response), for a request refused before routing."""
    body = error_response(status, code, message).body
    return {
        "statusCode": status.value,
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "body": json.dumps(body, separators=(",", ":")),
        "isBase64Encoded": False,
        "cookies": [],
    }
