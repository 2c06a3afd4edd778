"""What the API's routes use: pipelines by name, and the front door onto the caller's jobs.

The API's routes are module-level functions of one resolver; the services of
the function being invoked are set around each invocation (:meth:`ApiServices.serving`)
and read by the routes with :func:`current_services`.

The runtime is built on first use. A deployment error (a missing table name,
a driver without its state machine) is the server's fault, not the caller's:
it is reported as a 500, never as the 400 an ``InvalidInputError`` would give.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from http import HTTPStatus
from typing import Any, TypeVar

from ..app import Cairn
from ..core.errors import ConfigurationError, InvalidInputError
from ..core.pipeline import Pipeline
from ..core.registry import PipelineRegistry
from .api_errors import ApiError
from .dynamodb import DynamoDBStorage
from .entry import LazyRuntime
from .observability import logger
from .payloads import MAX_INPUT_BYTES
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


def checked_input(state: Any) -> Any:
    """``state`` when it is at most ``MAX_INPUT_BYTES`` as compact JSON (what the store keeps); else a 413.

    Checked before anything is written; a smaller state that still does not fit
    its item (no state bucket) is refused by the store, also before any write.
    """
    size = len(json.dumps(state, separators=(",", ":"), allow_nan=False))
    if size > MAX_INPUT_BYTES:
        raise ApiError(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            "state_too_large",
            f"The state is {size} bytes as JSON, over the limit of {MAX_INPUT_BYTES} bytes",
        )
    return state


class ApiServices:
    """The deployment's pipelines and runtime, as the API's routes need them."""

    def __init__(self, pipelines: PipelineRegistry, runtime: Runtime | None = None) -> None:
        self.pipelines = pipelines
        self._runtime = LazyRuntime(runtime)

    @property
    def runtime(self) -> Runtime:
        """The runtime: the injected one, else one built from the environment on first use."""
        return _configured(self._runtime.get)

    def pipeline(self, name: str) -> Pipeline[Any]:
        """The pipeline called ``name``; an unknown name is the caller's error (400)."""
        return self.pipelines.get(name)

    def pipeline_of(self, job_id: str, pipeline: str) -> Pipeline[Any]:
        """The pipeline named ``pipeline`` of stored job ``job_id``; 409 when this deployment no longer runs it."""
        try:
            return self.pipelines.get(pipeline)
        except InvalidInputError as exc:
            raise ApiError(HTTPStatus.CONFLICT, "conflict", f'Job "{job_id}": {exc.message}') from exc

    def storage(self, owner: str) -> DynamoDBStorage:
        """The job store as ``owner`` sees it (``owner`` is already validated): for listing and the health check."""
        runtime = self.runtime
        return _configured(lambda: runtime.storage(owner))

    @contextmanager
    def counted_start(self, owner: str) -> Iterator[None]:
        """Count the start the block makes against ``owner``'s start rate (past it, 429 with ``Retry-After``, and
        the block does not run); given back when the block raises, having started nothing."""
        limit = self.runtime.settings.owner_starts_per_minute
        if not limit:
            yield
            return
        storage = self.storage(owner)
        counted = storage.count_start(limit)
        if counted.retry_after is not None:
            logger.warning(
                "Refused a start past the owner's start rate",
                extra={"limit": limit, "retry_after": counted.retry_after},
            )
            raise ApiError(
                HTTPStatus.TOO_MANY_REQUESTS,
                "rate_limited",
                f"This caller has started {limit} jobs this minute, the most the stack allows "
                f"(OwnerStartsPerMinute); try again in {counted.retry_after} s",
                headers={"Retry-After": str(counted.retry_after)},
            )
        try:
            yield
        except BaseException:
            storage.uncount_start(counted)
            raise

    def cairn(self, owner: str, pipeline: Pipeline[Any] | None = None) -> Cairn:
        """The front door onto ``owner``'s jobs; with ``pipeline``, the one that starts or retries jobs of it.

        With a pipeline its scheduler is built now: a misconfigured driver is a
        500 before anything is written.
        """
        runtime = self.runtime
        return _configured(lambda: runtime.cairn(owner, pipeline if pipeline is not None else self.pipelines))

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Make these the services :func:`current_services` returns, for the invocation inside the block."""
        token = _CURRENT.set(self)
        try:
            yield
        finally:
            _CURRENT.reset(token)


_CURRENT: ContextVar[ApiServices] = ContextVar("cairn_api_services")


def current_services() -> ApiServices:
    """The services of the API function being invoked (set by its handler around the invocation)."""
    try:
        return _CURRENT.get()
    except LookupError:
        raise RuntimeError("The API's routes run only inside api_handler's handler") from None
