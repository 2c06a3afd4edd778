"""When ``cairn dev``'s functions print EMF metrics: only when asked (``--metrics``, ``CAIRN_DEV_METRICS=1``).

On AWS each invocation's metrics are one JSON blob on stdout that CloudWatch turns into metrics. Locally
nothing reads them, and a blob per request buries the lines a developer reads, so the workers run with
Powertools' metrics switched off unless the developer asks to see them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

METRICS_VARIABLE = "CAIRN_DEV_METRICS"
"""Set to 1 to show the functions' EMF metrics, as ``--metrics`` does."""
POWERTOOLS_SWITCH = "POWERTOOLS_METRICS_DISABLED"


def metrics_wanted(flag: bool, environ: Mapping[str, str]) -> bool:
    """True when the developer asked for the metrics: ``--metrics``, or ``CAIRN_DEV_METRICS=1``."""
    return flag or environ.get(METRICS_VARIABLE, "").strip().lower() in ("1", "true", "yes")


@contextmanager
def worker_metrics(shown: bool) -> Iterator[None]:
    """Inside the block, workers started from this process print EMF metrics only if ``shown``."""
    before = os.environ.get(POWERTOOLS_SWITCH)
    os.environ[POWERTOOLS_SWITCH] = "false" if shown else "true"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(POWERTOOLS_SWITCH, None)
        else:
            os.environ[POWERTOOLS_SWITCH] = before
