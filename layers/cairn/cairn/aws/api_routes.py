"""What every route module of the API shares: the job id in a path, the OpenAPI responses, the caller's jobs.

The routes live in :mod:`cairn.aws.api` and in routers it includes (:mod:`.api_jobs`, :mod:`.api_actions`,
:mod:`.api_states`, :mod:`.api_maps`).
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import content_types
from aws_lambda_powertools.event_handler.api_gateway import BaseRouter
from aws_lambda_powertools.event_handler.openapi.params import Path

from ..app import Cairn
from ..core.ids import validate_job_id
from .api_auth import owner_of
from .api_models import ErrorBody, JobId
from .api_services import current_services
from .observability import logger

JobIdPath = Annotated[JobId, Path(alias="jobId", description="The job's id")]
"""A route's ``{jobId}``, by the job-id rule."""


def errors(*statuses: HTTPStatus) -> dict[int, Any]:
    """OpenAPI entries for the error responses of a route (all share one body)."""
    content = {content_types.APPLICATION_JSON: {"model": ErrorBody}}
    return {status.value: {"description": status.phrase, "content": content} for status in statuses}


def responses(success: HTTPStatus, description: str, *failures: HTTPStatus) -> dict[int, Any]:
    """OpenAPI responses of a route: its success (the return type's schema) and its errors."""
    common = (HTTPStatus.BAD_REQUEST, HTTPStatus.UNAUTHORIZED, HTTPStatus.INTERNAL_SERVER_ERROR)
    return {success.value: {"description": description}, **errors(*common, *failures)}


def caller(router: BaseRouter) -> str:
    """The owner the request acts as, named in the log (the handler has already refused a request without one)."""
    owner = owner_of(router.current_event.raw_event)
    logger.append_keys(owner=owner)
    return owner


def callers_jobs(router: BaseRouter, job_id: str) -> Cairn:
    """The front door onto the jobs of the request's caller, the caller and ``job_id`` named in the log."""
    owner = caller(router)
    logger.append_keys(job_id=validate_job_id(job_id))
    return current_services().cairn(owner)
