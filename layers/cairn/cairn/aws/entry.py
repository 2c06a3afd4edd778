"""What every Lambda entry point of cairn shares: the runtime, built once per cold start, and Powertools around it.

A handler factory (``phase_handler``, ``scheduler_handler``, ``api_handler``)
runs at import time, before the function has its first event: it keeps a
:class:`LazyRuntime` and wraps its handler with :func:`entry_point`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.utilities.typing import LambdaContext

from .observability import logger, metrics, tracer, tracing_enabled
from .runtime import Runtime

Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


class LazyRuntime:
    """The runtime of one function: the injected one (tests, the local stack), else built on first use and kept.

    Built from the environment inside the first invocation, so a deployment
    error is logged with that invocation; a later invocation of the same
    process reuses it (and its AWS clients).
    """

    def __init__(self, runtime: Runtime | None = None, *, build: Callable[[], Runtime] = Runtime) -> None:
        self._runtime = runtime
        self._build = build

    def get(self) -> Runtime:
        """The runtime, built now if this is the first use."""
        if self._runtime is None:
            self._runtime = self._build()
        return self._runtime


def entry_point(handler: Handler, *, correlation_id_path: str | None = None) -> Handler:
    """``handler`` with a fresh log context per invocation (Lambda's context in it), its metrics flushed, traced.

    Each invocation starts with no metrics left over. With metrics switched off
    (``POWERTOOLS_METRICS_DISABLED``) Powertools' flush keeps what was added, and once a
    metric holds 100 values it prints them anyway: a long-lived process (``cairn dev``'s
    workers, a test run) would print a blob every hundred invocations.

    Traced (an X-Ray subsegment per invocation, AWS calls patched) only where tracing is on
    (:func:`tracing_enabled`, decided when the handler is made, at import as before): elsewhere
    the X-Ray SDK is never imported, and a disabled Tracer would have recorded nothing anyway.
    """
    traced = tracer().capture_lambda_handler(handler, capture_response=False) if tracing_enabled() else handler
    measured: Handler = metrics.log_metrics(traced)

    def unflushed_metrics_dropped(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        try:
            return measured(event, context)
        finally:
            if is_metrics_disabled():
                metrics.clear_metrics()

    logged: Handler = logger.inject_lambda_context(
        unflushed_metrics_dropped, correlation_id_path=correlation_id_path, clear_state=True
    )
    return logged
