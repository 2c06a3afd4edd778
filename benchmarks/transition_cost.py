"""Benchmark: what one phase transition costs in DynamoDB (and S3), in requests and write units.

A four-phase no-op pipeline hands on a realistic JSON state of 200 B, 1 KB, 100 KB and 1 MB. Each
job runs on moto (in-process) with :class:`benchmarks.dynamodb_meter.DynamoDBMeter` attached, which
counts the requests and computes write units from item sizes as DynamoDB bills them on demand
(index writes included). Reported per size: the start, a middle transition (claim, run and commit
of a phase that returns ``Next``) and the finish (``Done``), and what a million middle transitions
cost at us-east-1 on-demand prices next to Step Functions Standard.

BEFORE comes from ``benchmarks/results/before.json`` (the code at f845740); AFTER is measured now.
Run: ``make bench``, or ``PYTHONPATH=layers/cairn:functions:. .venv/bin/python benchmarks/transition_cost.py``
(``--json PATH`` writes the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from moto import mock_aws

from benchmarks.dynamodb_meter import DynamoDBMeter, Figures
from cairn import Done, InlineScheduler, JobStatus, Next, PhaseContext, Pipeline, advance_phase, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.dynamodb_schema import create_table

if TYPE_CHECKING:
    from cairn.storage.base import Storage

REGION = "us-east-1"
TABLE = "cairn-bench"
BUCKET = "cairn-bench-states"
SIZES: dict[str, int] = {"200 B": 200, "1 KB": 1024, "100 KB": 100 * 1024, "1 MB": 1024 * 1024}
PHASES = ("receive", "classify", "extract", "publish")
DEFAULT_BEFORE = Path(__file__).resolve().parent / "results" / "before.json"

#: us-east-1 on-demand prices, dollars per million requests or units.
PRICES = {
    "dynamodb_write_unit": 0.625,
    "dynamodb_read_unit": 0.125,
    "s3_put_request": 5.0,
    "s3_get_request": 0.4,
    "stepfunctions_standard_transition": 25.0,
}

_WORDS = (
    "invoice contract payment delivery customer supplier total amount due signed received pending "
    "approved shipment order account balance tax net gross quarter report summary clause term renewal "
    "notice period warehouse pallet freight insurance claim reference page table figure address contact "
    "number date the of for and with from under per within after before on by"
)
_VOCABULARY = _WORDS.split()
_VENDORS = ("Acme Freight", "Northwind Traders", "Globex", "Initech", "Umbrella Logistics", "Stark Supplies")


# -- the workload ----------------------------------------------------------------------------


def _json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode("utf-8"))


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(_VOCABULARY) for _ in range(rng.randint(6, 14))).capitalize() + "."


def _record(rng: random.Random, number: int) -> dict[str, Any]:
    return {
        "id": f"doc-{number:06d}",
        "date": (date(2024, 1, 1) + timedelta(days=rng.randrange(366))).isoformat(),
        "vendor": rng.choice(_VENDORS),
        "amount": round(rng.uniform(10, 25_000), 2),
        "currency": rng.choice(("EUR", "USD", "GBP")),
        "pages": rng.randint(1, 40),
        "status": rng.choice(("received", "classified", "extracted", "reviewed")),
        "summary": _sentence(rng),
    }


def document_state(target: int, *, seed: int = 20240601) -> dict[str, Any]:
    """A document job's state of exactly ``target`` bytes as compact JSON: records, then notes as padding."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    state: dict[str, Any] = {"batch": "intake-2024-06-01", "source": "s3://inbox/2024-06-01/", "records": records}
    state["notes"] = ""
    size = _json_size(state)
    while True:
        record = _record(rng, len(records) + 1)
        grown = size + _json_size(record) + (1 if records else 0)
        if grown > target:
            break
        records.append(record)
        size = grown
    notes = ""
    while len(notes) < target - size:
        notes += _sentence(rng) + " "
    state["notes"] = notes[: target - size]  # ASCII without escapes: one character is one byte
    if _json_size(state) != target:
        raise ValueError(f"cannot make a state of {target} bytes")
    return state


def _pass_along(following: str | None) -> Callable[[PhaseContext[Any]], Next | Done]:
    def phase(ctx: PhaseContext[Any]) -> Next | Done:
        return Next(following, ctx.state) if following else Done(ctx.state)

    return phase


def noop_pipeline() -> Pipeline[Any]:
    """Four phases that hand the state on unchanged; the last returns it as the result."""
    pipeline: Pipeline[Any] = Pipeline("transition-cost")
    for index, name in enumerate(PHASES):
        pipeline.phase(name=name)(_pass_along(PHASES[index + 1] if index + 1 < len(PHASES) else None))
    return pipeline


# -- measuring -------------------------------------------------------------------------------


@dataclass
class JobCost:
    """What one job cost: its start, each middle transition, its finish, and the advances' durations."""

    start: Figures
    middle: list[Figures]
    finish: Figures
    middle_seconds: list[float]


def measure_job(storage: Storage, pipeline: Pipeline[Any], meter: DynamoDBMeter, job_id: str, state: Any) -> JobCost:
    """Run one job to the end through an InlineScheduler, taking the meter's figures after every step."""
    scheduler = InlineScheduler()
    advances: list[Figures] = []
    seconds: list[float] = []

    def measured_advance(job_id: str, **advance: Any) -> None:
        started = time.perf_counter()
        advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, **advance)
        seconds.append(time.perf_counter() - started)
        advances.append(meter.take())

    scheduler.bind(lambda job_id, **advance: measured_advance(job_id, **advance))
    meter.take()
    run_pipeline(job_id, pipeline, storage=storage, scheduler=scheduler, initial_state=state)
    start = meter.take()
    scheduler.drain()
    with meter.paused():
        job = storage.get_job(job_id)
    if job is None or job.status != JobStatus.COMPLETE or job.result != state:
        raise RuntimeError(f"{job_id} did not complete with its state: {job and job.status}")
    if len(advances) != len(PHASES):
        raise RuntimeError(f"{job_id}: expected {len(PHASES)} advances, saw {len(advances)}")
    return JobCost(start, advances[:-1], advances[-1], seconds[:-1])


def dollars_per_million(figures: Figures) -> float:
    """What a million repetitions of ``figures`` cost at on-demand prices (DynamoDB and S3 requests)."""
    return (
        figures.write_units * PRICES["dynamodb_write_unit"]
        + figures.read_units * PRICES["dynamodb_read_unit"]
        + figures.s3_put_tier * PRICES["s3_put_request"]
        + figures.s3_get_tier * PRICES["s3_get_request"]
    )


def summary(figures: Figures) -> dict[str, Any]:
    """The figures as plain numbers."""
    return {
        "write_requests": figures.write_requests,
        "read_requests": figures.read_requests,
        "table_units": figures.table_units,
        "index_units": figures.index_units,
        "write_units": figures.write_units,
        "read_units": figures.read_units,
        "s3_put_tier": figures.s3_put_tier,
        "s3_get_tier": figures.s3_get_tier,
        "s3_calls": figures.s3_calls,
        "dollars_per_million": dollars_per_million(figures),
        "calls": {
            f"{service}.{operation}": count
            for service, operations in sorted(figures.calls.items())
            for operation, count in sorted(operations.items())
        },
    }


def mean_summary(all_figures: Sequence[Figures]) -> dict[str, Any]:
    """The mean of several summaries (calls averaged per operation)."""
    summaries = [summary(figures) for figures in all_figures]
    mean: dict[str, Any] = {
        name: statistics.fmean(entry[name] for entry in summaries) for name in summaries[0] if name != "calls"
    }
    operations = sorted({name for entry in summaries for name in entry["calls"]})
    mean["calls"] = {name: statistics.fmean(entry["calls"].get(name, 0) for entry in summaries) for name in operations}
    mean["max_write_units"] = max(entry["write_units"] for entry in summaries)
    return mean


def measure(timing_runs: int) -> dict[str, Any]:
    """Every state size: one metered job, then ``timing_runs`` unmetered jobs for the durations."""
    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": REGION})
    os.environ.pop("AWS_PROFILE", None)
    results: dict[str, Any] = {}
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        s3 = boto3.client("s3", region_name=REGION)
        create_table(client, TABLE)
        s3.create_bucket(Bucket=BUCKET)
        storage = DynamoDBStorage(TABLE, client=client, bucket=BUCKET, s3_client=s3)
        meter = DynamoDBMeter(client, s3=s3)
        pipeline = noop_pipeline()
        for label, size in SIZES.items():
            state = document_state(size)
            cost = measure_job(storage, pipeline, meter, f"job-{size}", state)
            seconds: list[float] = []
            with meter.paused():
                for run in range(timing_runs):
                    seconds += measure_job(storage, pipeline, meter, f"job-{size}-t{run}", state).middle_seconds
            results[label] = {
                "state_bytes": size,
                "start": summary(cost.start),
                "middle": mean_summary(cost.middle),
                "finish": summary(cost.finish),
                "middle_median_ms": statistics.median(seconds) * 1000 if seconds else None,
            }
        meter.detach()
    return results


# -- reporting -------------------------------------------------------------------------------


def code_label() -> str:
    """The git revision of the cairn package measured, with ``+changes`` when its tree differs."""
    import cairn

    where = Path(cairn.__file__).resolve().parent
    try:
        revision = subprocess.run(
            ["git", "--no-optional-locks", "-C", str(where), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "--no-optional-locks", "-C", str(where), "diff", "--quiet", "HEAD", "--", "."],
            capture_output=True,
            check=False,
        ).returncode
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return revision + ("+changes" if changed else "")


def _number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _pair(first: Any, second: Any) -> str:
    return f"{_number(first)} / {_number(second)}"


def _rows(entry: dict[str, Any] | None) -> list[tuple[str, str]]:
    if entry is None:
        return []
    middle, start, finish = entry["middle"], entry["start"], entry["finish"]
    ms = entry.get("middle_median_ms")
    return [
        ("middle transition", ""),
        ("  requests: writes / reads", _pair(middle["write_requests"], middle["read_requests"])),
        ("  write units: table / index", _pair(middle["table_units"], middle["index_units"])),
        ("  write units: total", _number(middle["write_units"])),
        ("  read units", _number(middle["read_units"])),
        (
            "  S3 calls (PUT-priced / GET-priced)",
            f"{_number(middle['s3_calls'])} ({_pair(middle['s3_put_tier'], middle['s3_get_tier'])})",
        ),
        ("  $ per 1M transitions", f"${middle['dollars_per_million']:,.3f}"),
        ("  median ms (moto)", "-" if ms is None else f"{ms:.1f}"),
        ("start: requests w / r", _pair(start["write_requests"], start["read_requests"])),
        (
            "start: write units (table / index)",
            f"{start['write_units']} ({_pair(start['table_units'], start['index_units'])})",
        ),
        ("start: S3 calls", _number(start["s3_calls"])),
        ("finish: requests w / r", _pair(finish["write_requests"], finish["read_requests"])),
        (
            "finish: write units (table / index)",
            f"{finish['write_units']} ({_pair(finish['table_units'], finish['index_units'])})",
        ),
        ("finish: S3 calls", _number(finish["s3_calls"])),
    ]


def report(after: dict[str, Any], before: dict[str, Any] | None) -> str:
    """BEFORE and AFTER side by side, per state size."""
    before_sizes = (before or {}).get("sizes", {})
    lines = [
        "DynamoDB cost of a phase transition: 4-phase no-op pipeline on moto; write units from item sizes as",
        "DynamoDB bills them on demand (1 per KB per item, x2 in a transaction, plus every index write).",
        f"BEFORE: {before['code'] if before else '(no benchmarks/results/before.json)'}    AFTER: {after['code']}",
    ]
    for label in after["sizes"]:
        old = _rows(before_sizes.get(label))
        new = _rows(after["sizes"][label])
        lines += ["", f"{'state ' + label:<40}{'BEFORE':>18}{'AFTER':>18}"]
        for index, (name, value) in enumerate(new):
            lines.append(f"{name:<40}{(old[index][1] if old else '-'):>18}{value:>18}")
    transitions = PRICES["stepfunctions_standard_transition"]
    lines += [
        "",
        f"Step Functions Standard: ${transitions:,.2f} per 1M state transitions (the transitions alone).",
        "Prices (us-east-1, per million): DynamoDB $0.625 per write unit, $0.125 per read unit;",
        "S3 $5 per PUT/COPY/POST/LIST, $0.40 per GET; Lambda and storage are left out on both sides.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Measure, print BEFORE and AFTER, and write the figures when asked."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", type=Path, help="write the figures measured to this file")
    parser.add_argument("--before", type=Path, default=DEFAULT_BEFORE, help="the BEFORE figures")
    parser.add_argument("--timing-runs", type=int, default=5, help="unmetered jobs per size for the durations")
    args = parser.parse_args(argv)
    after = {"code": code_label(), "prices": PRICES, "sizes": measure(args.timing_runs)}
    before = json.loads(args.before.read_text()) if args.before.exists() else None
    print(report(after, before))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(after, indent=2) + "\n")


if __name__ == "__main__":
    main()
