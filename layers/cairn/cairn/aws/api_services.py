"""What the API's routes use: pipelines by name, and the runtime's storage and schedulers.

The runtime is built on first use. A deployment error (a missing table name,
a driver without its state machine) is the server's fault, not the caller's:
it is reported as a 500, never as the 400 an ``InvalidInputError`` would give.
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any, TypeVar

from ..errors import ConfigurationError, InvalidInputError
from ..models import Job
from ..pipeline import Pipeline
from ..registry import PipelineRegistry
from ..scheduling.base import Scheduler
from .api_errors import ApiError
from .dynamodb import DynamoDBStorage
from .observability import logger
from .runtime import Runtime

T = TypeVar("T")


def _configured(build: Callable[[], T]) -> T:
    """``build()``; a configuration error becomes a 500 that names nothing of the deployment."""
    try:
        return build()
    except ConfigurationError as exc:
        logger.error("The API function is misconfigured", extra={"detail": exc.message})
        raise ApiError(
            HTTPStatus.INTERNAL_SERVER_ERROR, "misconfigured", "The API function is misconfigured; see its log"
        ) from exc


class ApiServices:
    """The deployment's pipelines and runtime, as the API's routes need them."""

    def __init__(self, pipelines: PipelineRegistry, runtime: Runtime | None = None) -> None:
        self.pipelines = pipelines
        self._runtime = runtime

    @property
    def runtime(self) -> Runtime:
        """The runtime: the injected one, else one built from the environment on first use."""
        if self._runtime is None:
            self._runtime = _configured(Runtime)
        return self._runtime

    def pipeline(self, name: str) -> Pipeline[Any]:
        """The pipeline called ``name``; an unknown name is the caller's error (400)."""
        return self.pipelines.get(name)

    def pipeline_of(self, job: Job) -> Pipeline[Any]:
        """The pipeline a stored job belongs to; 409 when this deployment no longer runs it."""
        try:
            return self.pipelines.get(job.pipeline)
        except InvalidInputError as exc:
            raise ApiError(HTTPStatus.CONFLICT, "conflict", f'Job "{job.job_id}": {exc.message}') from exc

    def storage(self, owner: str) -> DynamoDBStorage:
        """The job store as ``owner`` sees it (``owner`` is already validated)."""
        runtime = self.runtime
        return _configured(lambda: runtime.storage(owner))

    def scheduler(self, owner: str, pipeline: Pipeline[Any]) -> Scheduler:
        """What starts or retries ``owner``'s jobs of ``pipeline`` under the configured driver."""
        runtime = self.runtime
        return _configured(lambda: runtime.start_scheduler(owner, pipeline))
