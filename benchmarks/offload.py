"""Benchmark "offload": the state size from which S3 is cheaper than the state's own history item.

A middle transition writes its state once, in the commit's history item, and the next claim reads it
back (:mod:`cairn.aws.dynamodb.schema`). Through S3 the item keeps a reference instead, and the state
costs a PUT and a GET. For incompressible states (random base64 text: gzip keeps about 76%), one
middle transition of a one-phase loop is metered both ways on in-process moto, with the meter that
bills as DynamoDB does, and priced at on-demand prices (``cairn.features.prices``): DynamoDB write
and read units, S3 PUT and GET requests. The break-even is the largest stored (compressed) size at
which the item is no dearer; ``CAIRN_OFFLOAD_STATE_FROM`` defaults to it, rounded down to a KB.

Run: ``python -m benchmarks.offload`` (``make bench`` runs every suite).
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.common import Result, Table, Target, git_commit, machine, versions, write_result
from benchmarks.cost import KB, dollars_per_million, incompressible_state, loop_pipeline, moto_backend, progress
from benchmarks.dynamodb_meter import DynamoDBMeter, Figures
from benchmarks.overhead import CairnLoop
from benchmarks.state_size import storage_for
from cairn.aws.payloads import GZIP_LEVEL
from cairn.core.settings import DEFAULT_OFFLOAD_STATE_FROM

#: JSON sizes of the states measured: about 1.5 to 15 KB once compressed.
SIZES = tuple(size * KB for size in (2, 4, 6, 8, 9, 10, 11, 12, 13, 14, 16, 20))
MODES = ("inline", "S3")
SUITE = "offload"
VERSIONED = ("boto3", "botocore", "moto", "pydantic")


@dataclass(frozen=True)
class Point:
    """One state size: its stored bytes and what a middle transition costs each way."""

    json_bytes: int
    stored_bytes: int
    inline: Figures
    s3: Figures

    @property
    def inline_dollars(self) -> float:
        """Dollars per million transitions with the state in its history item."""
        return dollars_per_million(self.inline)

    @property
    def s3_dollars(self) -> float:
        """Dollars per million transitions with the state in S3."""
        return dollars_per_million(self.s3)


def stored_size(state: object) -> int:
    """The bytes the store keeps of ``state``: its compact JSON, compressed as the store compresses it."""
    raw = json.dumps(state, separators=(",", ":")).encode()
    return len(gzip.compress(raw, compresslevel=GZIP_LEVEL, mtime=0))


#: Two sizes either side of the default: what the test suite measures (about 7.6 and 9.2 KB stored).
AROUND_DEFAULT = (10 * KB, 12 * KB)


def measure(sizes: Sequence[int] = SIZES) -> list[Point]:
    """Meter one middle transition per size and mode (after one unmetered, so the claim reads a steady job)."""
    points = []
    with moto_backend() as backend:
        for size in sizes:
            state = incompressible_state(size)
            figures: dict[str, Figures] = {}
            for mode in MODES:
                loop = CairnLoop(storage_for(backend, mode), loop_pipeline(), f"offload-{mode}-{size}", state)
                loop.transition()
                meter = DynamoDBMeter(backend.dynamodb, s3=backend.s3)
                try:
                    loop.transition()
                    figures[mode] = meter.take()
                finally:
                    meter.detach()
            points.append(Point(size, stored_size(state), figures["inline"], figures["S3"]))
            progress(f"offload: {size // KB} KB measured")
    return points


def break_even(points: Sequence[Point]) -> int:
    """The largest stored size at which the history item is no dearer than S3 (every smaller one measured too)."""
    cheaper = 0
    for point in sorted(points, key=lambda point: point.stored_bytes):
        if point.inline_dollars > point.s3_dollars:
            break
        cheaper = point.stored_bytes
    return cheaper


def at_break_even(points: Sequence[Point], threshold: int) -> bool:
    """Whether every state stored within ``threshold`` is no dearer inline, and every one over a KB above it is."""
    return all(point.inline_dollars <= point.s3_dollars for point in points if point.stored_bytes <= threshold) and all(
        point.inline_dollars > point.s3_dollars for point in points if point.stored_bytes > threshold + KB
    )


def build_result(points: Sequence[Point]) -> Result:
    """The suite's result: the table, and the default against the break-even."""
    rows = [
        [
            f"{point.json_bytes / KB:g} KB",
            f"{point.stored_bytes / KB:.1f} KB",
            f"{point.inline.write_units} / {point.inline.read_units:g}",
            f"{point.inline_dollars:.2f}",
            f"{point.s3.write_units} / {point.s3.read_units:g}, "
            f"{point.s3.s3_put_tier} PUT + {point.s3.s3_get_tier} GET",
            f"{point.s3_dollars:.2f}",
        ]
        for point in points
    ]
    found = break_even(points)
    default = DEFAULT_OFFLOAD_STATE_FROM
    return Result(
        suite=SUITE,
        title="Offload threshold: a state in its history item or in S3",
        summary=(
            f"A state's history item is no dearer than S3 up to {found / KB:.1f} KB stored (incompressible "
            f"states, one middle transition each way); CAIRN_OFFLOAD_STATE_FROM defaults to {default // KB} KB."
        ),
        tables=[
            Table(
                "One middle transition, inline and through S3, at on-demand prices",
                ["State (JSON)", "Stored", "Inline: write / read units", "Inline $/M", "S3: units, requests", "S3 $/M"],
                rows,
                "Read units as DynamoDB bills them (the history item read whole by the next claim). $/M: dollars "
                "per million transitions: DynamoDB write and read units, S3 PUT and GET requests.",
            )
        ],
        targets=[
            Target(
                "Offload threshold at the break-even",
                "inline no dearer up to the default; S3 cheaper from a KB above it",
                f"break-even {found / KB:.1f} KB stored; default {default // KB} KB",
                at_break_even(points, default),
            )
        ],
        data={"break_even": found, "default": default, "machine": machine(), "git": git_commit()},
        versions={**versions(*VERSIONED), "git": git_commit()},
    )


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table and write the suite's result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the two sizes either side of the default")
    options = parser.parse_args(argv)
    started = time.perf_counter()
    result = build_result(measure(AROUND_DEFAULT if options.quick else SIZES))
    for row in result.tables[0].rows:
        print(" | ".join(row))
    print(result.summary)
    write_result(result, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
