"""Benchmark suite "state_size": how a transition's time, bytes written and CPU grow with the state.

A middle transition (claim, run, history item, commit) of a one-phase loop through ``advance_phase``
with :class:`~cairn.aws.dynamodb.DynamoDBStorage` on in-process moto, at 1 KB, 10 KB, 100 KB, 1 MB
and 10 MB of state, two ways: inline (the state in the job item: ``offload_state_from`` raised to the
inline limit, so it stays in the item while it fits the room the item has left) and through S3
(``inline_limit=1``, so every state goes to the bucket). cairn's own choice (the default settings:
S3 above 8 KB compressed) is marked. Per transition: wall time, CPU time (``time.process_time``; moto
runs in-process, so its CPU is split off with the stubber's clock of :mod:`benchmarks.overhead`) and
the bytes written (the DynamoDB items as billed, the larger of before and after, plus the S3 bodies).

Run: ``python -m benchmarks.state_size [--quick] [--repeats N]`` (``make bench`` runs every suite).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.common import Result, Summary, Table, git_commit, machine, versions, write_result
from benchmarks.cost import KB, MB, Backend, document_state, loop_pipeline, moto_backend, progress
from benchmarks.dynamodb_meter import DynamoDBMeter
from benchmarks.overhead import CairnLoop, MotoClock
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.core.settings import DEFAULT_INLINE_STATE_LIMIT, Settings

SUITE = "state_size"
SIZES: dict[str, int] = {"1 KB": KB, "10 KB": 10 * KB, "100 KB": 100 * KB, "1 MB": MB, "10 MB": 10 * MB}
QUICK_SIZES = ("1 KB", "10 KB")
MODES = ("inline", "S3")
#: Transitions per measured run (a run's figure is their mean).
BATCH = {"1 KB": 10, "10 KB": 10, "100 KB": 5, "1 MB": 3, "10 MB": 1}
QUICK_BATCH = 4
#: Sizes from which the time per byte is expected to be roughly constant (the fit uses them).
LINEAR_FROM = 100 * KB
VERSIONED = ("boto3", "botocore", "moto", "pydantic")


def storage_for(backend: Backend, mode: str | None) -> DynamoDBStorage:
    """The store of one mode: ``inline``, ``S3``, or None for cairn's default settings."""
    common: dict[str, Any] = {"client": backend.dynamodb, "bucket": backend.bucket, "s3_client": backend.s3}
    if mode == "S3":
        return DynamoDBStorage(backend.table, inline_limit=1, settings=Settings(), **common)
    if mode == "inline":
        inline = Settings(offload_state_from=DEFAULT_INLINE_STATE_LIMIT)
        return DynamoDBStorage(backend.table, settings=inline, **common)
    return DynamoDBStorage(backend.table, settings=Settings(), **common)


@dataclass
class Written:
    """What one metered transition wrote."""

    dynamodb_bytes: int
    s3_bytes: int
    s3_puts: int
    write_units: int

    @property
    def total(self) -> int:
        """DynamoDB item bytes and S3 bytes together."""
        return self.dynamodb_bytes + self.s3_bytes


def metered(loop: CairnLoop, backend: Backend, count: int = 1) -> list[Written]:
    """``count`` transitions with the meter on: the items' billed sizes, and the bodies of the S3 PUTs, each."""
    meter = DynamoDBMeter(backend.dynamodb, s3=backend.s3)
    bodies: list[int] = []

    def count_body(params: dict[str, Any], **_: Any) -> None:
        body = params.get("Body", b"")
        bodies.append(len(body) if isinstance(body, bytes | bytearray | str) else 0)

    backend.s3.meta.events.register("before-parameter-build.s3.PutObject", count_body, unique_id="state-size-bodies")
    written = []
    try:
        for _ in range(count):
            meter.take()
            bodies.clear()
            loop.transition()
            figures = meter.take()
            dynamodb_bytes = sum(max(record.size_before, record.size_after) for record in figures.records)
            written.append(Written(dynamodb_bytes, sum(bodies), len(bodies), figures.write_units))
    finally:
        backend.s3.meta.events.unregister("before-parameter-build.s3.PutObject", unique_id="state-size-bodies")
        meter.detach()
    return written


@dataclass
class Runs:
    """Milliseconds per transition of each run: wall, CPU, and CPU outside moto."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    client: list[float] = field(default_factory=list)


def run_batch(transition: Callable[[], None], count: int, clock: MotoClock, runs: Runs) -> None:
    """Run ``count`` transitions; add their mean per transition to ``runs``."""
    moto = clock.cpu
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        transition()
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - wall
    runs.wall.append(wall / count * 1000)
    runs.cpu.append(cpu / count * 1000)
    runs.client.append((cpu - (clock.cpu - moto)) / count * 1000)


def measure(labels: Sequence[str], repeats: int, batch: dict[str, int]) -> dict[str, Any]:
    """Every size and mode: one metered transition, then ``repeats`` interleaved runs of a batch each."""
    for label in labels:
        progress(f"state_size: making the {label} state")
        document_state(SIZES[label])
    clock = MotoClock()
    found: dict[str, Any] = {}
    with moto_backend() as backend, clock.installed():
        pipeline = loop_pipeline()
        loops: dict[tuple[str, str], CairnLoop] = {}
        runs: dict[tuple[str, str], Runs] = {}
        for label in labels:
            size = SIZES[label]
            state = document_state(size)
            progress(f"state_size: {label}: metering a transition of each kind")
            (chosen,) = metered(CairnLoop(storage_for(backend, None), pipeline, f"default-{size}", state), backend)
            entry: dict[str, Any] = {"state_bytes": size, "default": "S3" if chosen.s3_puts else "inline"}
            for mode in MODES:
                loop = CairnLoop(storage_for(backend, mode), pipeline, f"{mode.lower()}-{size}", state)
                loop.transition()  # warm-up, and the stored item reaches its steady size
                steady = metered(loop, backend, count=2)  # two in a row: a state may fit only every other time
                went = {"S3" if written.s3_puts else "inline" for written in steady}
                written = steady[-1]
                entry[mode] = {
                    "possible": went == {mode},
                    "went": sorted(went),
                    "written": {
                        "dynamodb_bytes": written.dynamodb_bytes,
                        "s3_bytes": written.s3_bytes,
                        "total_bytes": written.total,
                        "write_units": written.write_units,
                    },
                }
                if went == {mode}:
                    loops[(label, mode)] = loop
                    runs[(label, mode)] = Runs()
            found[label] = entry
        for repeat in range(repeats):
            for label in labels:
                shown = []
                for mode in MODES:
                    if (label, mode) in loops:
                        run_batch(loops[(label, mode)].transition, batch[label], clock, runs[(label, mode)])
                        shown.append(f"{mode} {runs[(label, mode)].cpu[-1]:.1f} ms")
                progress(f"state_size: {label} run {repeat + 1}/{repeats}: CPU per transition {', '.join(shown)}")
    for (label, mode), measured in runs.items():
        found[label][mode].update(
            {
                "wall_ms": _as_dict(Summary.of(measured.wall)),
                "cpu_ms": _as_dict(Summary.of(measured.cpu)),
                "client_cpu_ms": _as_dict(Summary.of(measured.client)),
                "raw_wall_ms": [round(value, 3) for value in measured.wall],
                "raw_cpu_ms": [round(value, 3) for value in measured.cpu],
            }
        )
    return found


def _as_dict(summary: Summary) -> dict[str, float]:
    return {"median": summary.median, "min": summary.min, "max": summary.max, "runs": summary.runs}


def _cell(entry: dict[str, float], digits: int = 1) -> str:
    return Summary(entry["median"], entry["min"], entry["max"], int(entry["runs"])).cell(digits)


def _bytes(count: float) -> str:
    for unit, size, digits in (("MB", MB, 2), ("KB", KB, 1)):
        if count >= size:
            shown = f"{count / size:.{digits}f}"
            return f"{shown.rstrip('0').rstrip('.') if '.' in shown else shown} {unit}"
    return f"{count:.0f} B"


def fit(points: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """Least-squares line ``y = slope * x + intercept`` through ``points`` (None for fewer than two)."""
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if spread == 0:
        return None
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    return slope, mean_y - slope * mean_x


def linearity(found: dict[str, Any], mode: str, part: str) -> dict[str, Any]:
    """Per-MB cost at each size, the fitted slope above :data:`LINEAR_FROM`, and the 10 MB / 1 MB ratio."""
    series = [
        (entry["state_bytes"], entry[mode][f"{part}_ms"]["median"])
        for entry in found.values()
        if f"{part}_ms" in entry[mode]
    ]
    per_mb = {str(size): ms / (size / MB) for size, ms in series}
    fixed = min(series)[1] if series else 0.0  # the smallest state's transition: the cost that does not grow
    beyond = {str(size): (ms - fixed) / (size / MB) for size, ms in series if size > min(series)[0]}
    line = fit([(size / MB, ms) for size, ms in series if size >= LINEAR_FROM])

    def ratio(figures: dict[str, float]) -> float | None:
        return figures[str(10 * MB)] / figures[str(MB)] if str(10 * MB) in figures and str(MB) in figures else None

    return {
        "per_mb_ms": per_mb,
        "fixed_ms": fixed,
        "per_mb_beyond_fixed_ms": beyond,
        "slope_ms_per_mb": line[0] if line else None,
        "intercept_ms": line[1] if line else None,
        "ratio_10mb_to_1mb_per_byte": ratio(per_mb),
        "ratio_10mb_to_1mb_per_byte_beyond_fixed": ratio(beyond),
    }


def build_result(found: dict[str, Any], repeats: int) -> Result:
    """Tables, notes and plots from the figures."""
    labels = list(found)
    table = Table(
        "Per middle transition, by state size and where the state is kept",
        [
            "State",
            "Kept",
            "Wall ms",
            "CPU ms",
            "CPU outside moto ms",
            "CPU ms per MB of state",
            "DynamoDB bytes",
            "S3 bytes",
            "Write units",
        ],
        [],
        note=(
            "Median (min-max) of the runs; a run is the mean of a batch of transitions. DynamoDB bytes: the size "
            "of every item written (history item and job item, twice for the claim and the commit of the job "
            "item), the larger of before and after, as DynamoDB bills it; S3 bytes: the gzipped state's body. "
            "'(default)' marks what cairn chooses with its default settings (S3 above 8 KB compressed). Inline "
            "is not possible where the compressed state does not fit the room the job item has left: the value "
            "replaced counts too, so a state that fits only while the one before it is in S3 alternates."
        ),
    )
    for label in labels:
        entry = found[label]
        for mode in MODES:
            measured = entry[mode]
            kept = mode + (" (default)" if entry["default"] == mode else "")
            if not measured["possible"]:
                why = "not possible" if measured["went"] == ["S3"] else "alternates inline / S3"
                table.rows.append([label, kept, why, "-", "-", "-", "-", "-", "-"])
                continue
            written = measured["written"]
            table.rows.append(
                [
                    label,
                    kept,
                    _cell(measured["wall_ms"]),
                    _cell(measured["cpu_ms"]),
                    _cell(measured["client_cpu_ms"]),
                    f"{measured['cpu_ms']['median'] / (entry['state_bytes'] / MB):,.1f}",
                    _bytes(written["dynamodb_bytes"]),
                    _bytes(written["s3_bytes"]),
                    str(written["write_units"]),
                ]
            )
    lines = {f"{mode} {part}": linearity(found, mode, part) for mode in MODES for part in ("cpu", "wall", "client_cpu")}
    result = Result(
        suite=SUITE,
        title="State size scaling",
        summary=(
            "A middle transition (DynamoDBStorage on in-process moto) with 1 KB to 10 MB of state, kept inline in "
            "the job item or in S3: time, CPU and bytes written per transition, and whether the time per byte "
            f"settles; {repeats} interleaved runs per size."
        ),
        tables=[table],
        versions={**versions(*VERSIONED), "git": git_commit()},
    )
    for key, what in (("S3 cpu", "CPU time"), ("S3 client_cpu", "CPU time outside moto")):
        line = lines[key]
        if line["slope_ms_per_mb"] is None:
            continue
        text = (
            f"Linearity through S3, {what}: above {_bytes(LINEAR_FROM)} it fits {line['slope_ms_per_mb']:.1f} ms per "
            f"MB of state plus {line['intercept_ms']:.1f} ms (least squares over the medians)."
        )
        raw, beyond = line["ratio_10mb_to_1mb_per_byte"], line["ratio_10mb_to_1mb_per_byte_beyond_fixed"]
        if raw is not None and beyond is not None:
            text += (
                f" The time per byte at 10 MB is {raw:.2f}x that at 1 MB; less the fixed cost of a transition "
                f"(the 1 KB one, {line['fixed_ms']:.1f} ms) it is {beyond:.2f}x"
                + (", so the cost per byte is roughly constant: linear." if 0.8 <= beyond <= 1.25 else ": not linear.")
            )
        result.notes.append(text)
    result.notes += [
        "Below about 100 KB the time is the fixed cost of three DynamoDB requests (and two S3 requests through "
        "S3); above it the state's bytes dominate: JSON encoding and decoding, gzip, SHA-256 and moving the "
        "bytes through botocore and moto.",
        "CPU outside moto is the work a Lambda function would do on AWS; moto's share stands in for the network "
        "and the services.",
    ]
    result.data = {
        "sizes": found,
        "linearity": lines,
        "repeats": repeats,
        "machine": machine(),
        "git": git_commit(),
        "plots": {
            "time": {
                "title": "CPU milliseconds per middle transition",
                "x": "state (bytes)",
                "y": "ms",
                "log": True,
                "series": {
                    f"{mode}{' outside moto' if part == 'client_cpu' else ''}": _series(found, mode, f"{part}_ms")
                    for mode in MODES
                    for part in ("cpu", "client_cpu")
                },
            },
            "bytes": {
                "title": "Bytes written per middle transition",
                "x": "state (bytes)",
                "y": "bytes",
                "log": True,
                "series": {mode: _written_series(found, mode) for mode in MODES},
            },
        },
    }
    return result


def _series(found: dict[str, Any], mode: str, key: str) -> dict[str, list[float]]:
    entries = [entry for entry in found.values() if key in entry[mode]]
    return {"x": [entry["state_bytes"] for entry in entries], "y": [entry[mode][key]["median"] for entry in entries]}


def _written_series(found: dict[str, Any], mode: str) -> dict[str, list[float]]:
    entries = [entry for entry in found.values() if entry[mode]["possible"]]
    return {
        "x": [entry["state_bytes"] for entry in entries],
        "y": [entry[mode]["written"]["total_bytes"] for entry in entries],
    }


def main(argv: list[str] | None = None) -> int:
    """Measure, write ``benchmarks/results/latest/state_size.json``; 0 when everything was measured."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 KB and 10 KB only, three short runs")
    parser.add_argument("--repeats", type=int, default=None, help="runs per size and mode (default 5, quick 3)")
    arguments = parser.parse_args(argv)
    started = time.perf_counter()
    repeats = max(1, arguments.repeats or (3 if arguments.quick else 5))
    labels = list(QUICK_SIZES if arguments.quick else SIZES)
    batch = dict.fromkeys(labels, QUICK_BATCH) if arguments.quick else BATCH
    try:
        found = measure(labels, repeats, batch)
    except Exception as exc:
        progress(f"state_size: could not measure: {type(exc).__name__}: {exc}")
        failed = Result(SUITE, "State size scaling", "A transition's time and bytes by state size.")
        failed.unmeasured.append(f"{type(exc).__name__}: {exc}")
        failed.versions = {**versions(*VERSIONED), "git": git_commit()}
        write_result(failed, started)
        return 1
    write_result(build_result(found, repeats), started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
