"""Where cairn's own client-side work goes: a profile of transitions with their requests left out.

The profiler is paused for each botocore call (``BaseClient._make_api_call``: serialising, signing,
moto's answer, parsing), so what it counts is the work cairn does around its requests: building
them, admitting, encoding and decoding the state and the items, its models. A function on the stack
across a call loses the own time it spends after the call returns, so the figures are a little low;
cProfile slows every Python call, so read the shares, not the milliseconds.
"""

from __future__ import annotations

import cProfile
import pstats
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from botocore.client import BaseClient

#: Own time by where it is spent: (area, where the function lives, words in a builtin's name).
_AREAS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("cairn's DynamoDB items, expressions and sizes", "/cairn/aws/dynamodb/", ()),
    ("cairn's payloads (gzip, S3 references)", "/cairn/aws/", ()),
    ("cairn's engine, models and admission", "/cairn/core/", ()),
    ("cairn's run features (metering, guards)", "/cairn/features/", ()),
    ("pydantic", "/pydantic", ("pydantic",)),
    ("JSON encode/decode", "/json/", ("json",)),
    ("gzip", "~", ("zlib", "compress", "crc32")),
    ("sha256", "~", ("sha256", "hexdigest", "openssl")),
)
#: How many of the costliest functions are listed.
TOP = 8


@contextmanager
def _requests_left_out(profiler: cProfile.Profile) -> Iterator[None]:
    """Pause ``profiler`` during every botocore call made inside (the class's method is wrapped)."""
    original = BaseClient._make_api_call  # type: ignore[attr-defined]

    def unprofiled(client: BaseClient, operation_name: str, api_params: dict[str, Any]) -> Any:
        profiler.disable()
        try:
            return original(client, operation_name, api_params)
        finally:
            profiler.enable()

    BaseClient._make_api_call = unprofiled  # type: ignore[attr-defined]
    try:
        yield
    finally:
        BaseClient._make_api_call = original  # type: ignore[attr-defined]


def _area(filename: str, function: str) -> str:
    for area, where, words in _AREAS:
        if where == "~":
            if filename == "~" and any(word in function.lower() for word in words):
                return area
        elif where in filename or (filename == "~" and any(word in function.lower() for word in words)):
            return area
    return "Python builtins, stdlib and other"


def own_work(transition: Callable[[], None], count: int) -> dict[str, Any]:
    """cairn's own work in ``count`` transitions: its profiled milliseconds, own time by area, the top functions."""
    profiler = cProfile.Profile()
    with _requests_left_out(profiler):
        profiler.enable()
        for _ in range(count):
            transition()
        profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    rows = [
        (own, filename, line, function)
        for (filename, line, function), (_, _, own, _, _) in stats.items()
        if "/benchmarks/" not in filename  # the loop's own frames
    ]
    total = sum(row[0] for row in rows) or 1.0
    by_area: dict[str, float] = {}
    for own, filename, _, function in rows:
        area = _area(filename, function)
        by_area[area] = by_area.get(area, 0.0) + own
    rows.sort(reverse=True)
    return {
        "profiled_ms_per_transition": round(total / count * 1000, 3),
        "by_area": {area: round(own / total, 3) for area, own in sorted(by_area.items(), key=lambda x: -x[1])},
        "top_functions": [
            {"function": _where(filename, line, function), "share": round(own / total, 3)}
            for own, filename, line, function in rows[:TOP]
        ],
    }


def _where(filename: str, line: int, function: str) -> str:
    if filename == "~":
        return function
    short = re.sub(r".*/(site-packages|layers/cairn|lib/python3\.\d+)/", "", filename)
    return f"{short}:{line}({function})"
