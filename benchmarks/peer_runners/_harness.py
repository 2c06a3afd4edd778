"""What every peer runner shares (standard library only: each runner runs in its own peer's virtualenv).

A runner opens a *session* (its engine set up: a store, a server, a worker) that yields ``measure(steps)``:
the seconds one workflow of ``steps`` no-op steps took, from its start to its result. Startup is never timed,
and one short workflow warms the session up before anything is. Two ways to run one:

- ``python run_<peer>.py --steps N --repeats R`` prints ``{"steps": N, "seconds": [...]}`` (one line of JSON);
- ``python run_<peer>.py --serve`` prints ``{"ready": true, "info": {...}, "versions": {...}}`` once the
  session is warm (``versions``: the installed versions of the runner's ``packages``), then
  answers each line ``N R`` of its standard input with the same JSON as above, until its input closes.
  ``benchmarks/peers.py`` uses this to interleave the systems (A B C D A B C D ...) without restarting them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from importlib import metadata
from typing import Any

WARMUP_STEPS = 10

Measure = Callable[[int], float]
Session = Callable[[argparse.Namespace], AbstractContextManager[tuple[Measure, dict[str, Any]]]]


def _lines() -> Iterator[str]:
    for line in sys.stdin:
        if line.strip():
            yield line


def _emit(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def versions(packages: tuple[str, ...]) -> dict[str, str]:
    """The installed versions of ``packages`` ("not installed" for a missing one)."""
    found = {}
    for package in packages:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def main(
    description: str,
    session: Session,
    *,
    packages: tuple[str, ...] = (),
    options: Callable[[argparse.ArgumentParser], None] | None = None,
    argv: list[str] | None = None,
) -> int:
    """Parse the arguments, open the session, warm it up, and measure as asked; the exit code."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--steps", type=int, default=10, help="no-op steps per workflow")
    parser.add_argument("--repeats", type=int, default=3, help="workflows to time")
    parser.add_argument("--serve", action="store_true", help="answer 'N R' lines of standard input")
    if options is not None:
        options(parser)
    arguments = parser.parse_args(argv)
    with session(arguments) as (measure, info):
        measure(WARMUP_STEPS)
        if not arguments.serve:
            _emit({"steps": arguments.steps, "seconds": [measure(arguments.steps) for _ in range(arguments.repeats)]})
            return 0
        _emit({"ready": True, "info": info, "versions": versions(packages)})
        for line in _lines():
            steps, repeats = (int(word) for word in line.split())
            _emit({"steps": steps, "seconds": [measure(steps) for _ in range(repeats)]})
    return 0
