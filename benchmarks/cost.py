"""Benchmark suite "cost": a phase transition's requests and write units, and what a million cost in dollars.

A four-phase no-op pipeline hands on a realistic JSON state (:func:`document_state`) of 200 B to
10 MB. Each job runs on the in-process deployment (:class:`cairn.testing.stack.LocalStack`: the
phase functions' own handler, the direct driver, DynamoDB, S3 and SQS on moto) with
:class:`benchmarks.dynamodb_meter.DynamoDBMeter` attached to its clients. The meter counts every
DynamoDB, S3 and SQS request from botocore's events and computes write units from item sizes as
DynamoDB bills them on demand (index writes included). The local Lambda is not a botocore client:
the direct driver's ``invoke`` of the next phase is counted where the scheduler calls it, one Lambda
``Invoke`` request each. Figures are taken for the start, each middle transition (claim, run and
commit of a phase that returns ``Next``, and the invoke of the next phase) and the finish (``Done``).

A million middle transitions are priced at us-east-1 on-demand prices beside Step Functions
Standard, Lambda durable functions and Powertools idempotency (whose two DynamoDB writes per call
are metered on moto, running the real ``idempotent_function`` with the state as its response).

Run: ``python -m benchmarks.cost [--quick] [--repeats N]`` (``make bench`` runs every suite).
"""

from __future__ import annotations

import argparse
import base64
import functools
import json
import os
import random
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from moto import mock_aws

from benchmarks.common import Result, Table, Target, git_commit, machine, versions, write_result
from benchmarks.dynamodb_meter import DynamoDBMeter, Figures
from benchmarks.stepfunctions_loop import lambda_tasks, loop_states
from cairn import Done, InlineScheduler, JobStatus, Next, PhaseContext, Pipeline, advance_phase, run_pipeline
from cairn.aws.dynamodb.schema import create_table
from cairn.core.registry import PipelineRegistry
from cairn.features.prices import load_prices
from cairn.testing.stack import LocalStack

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

    from cairn.core.storage_port import Storage

SUITE = "cost"
REGION = "us-east-1"
OWNER = "bench-owner"
TABLE = "cairn-bench"
BUCKET = "cairn-bench-states"
KB = 1024
MB = 1024 * KB
#: State sizes by label; a label ending in ``INCOMPRESSIBLE`` is random base64 text, the others a document job's JSON.
INCOMPRESSIBLE = " incompressible"
SIZES: dict[str, int] = {
    "200 B": 200,
    "200 B incompressible": 200,
    "1 KB": KB,
    "1 KB incompressible": KB,
    "4 KB incompressible": 4 * KB,
    "10 KB incompressible": 10 * KB,
    "100 KB": 100 * KB,
    "1 MB": MB,
    "10 MB": 10 * MB,
}
QUICK_SIZES = ("200 B", "1 KB", "1 KB incompressible")
PHASES = ("receive", "classify", "extract", "publish")
BEFORE = Path(__file__).resolve().parent / "results" / "before.json"
VERSIONED = ("boto3", "botocore", "moto", "pydantic", "aws-lambda-powertools")

#: The shipped price table's us-east-1 on-demand prices (cairn/features/prices.json, whatever CAIRN_PRICES says: the
#: one home of cairn's prices), here in dollars per million requests, units or transitions.
SHIPPED_PRICES = load_prices(region=REGION, environ={})
PRICES = {
    name: round(SHIPPED_PRICES.prices[meter] * 1_000_000, 9)
    for name, meter in {
        "dynamodb_write_unit": "dynamodb_write_units",
        "dynamodb_read_unit": "dynamodb_read_units",
        "s3_put_request": "s3_put_requests",
        "s3_get_request": "s3_get_requests",
        "lambda_request": "lambda_requests",
        "stepfunctions_standard_transition": "stepfunctions_transitions",
        "durable_functions_operation": "lambda_durable_operations",
    }.items()
}
#: The largest payload a Step Functions state or a durable function's checkpoint carries.
PAYLOAD_LIMIT = 256 * KB
#: The most a middle transition may cost in write units, index writes included: 2 + the state's 1 KB units
#: (the claim, the commit and the state written once), 4 for a state kept in S3. A state inline up to the offload
#: break-even (8 KB compressed: benchmarks/offload.py) is written in its history item: 10 KB of random text gzips
#: to about 7.6 KB and stays there, as tests/functional/test_write_units.py pins it.
MAX_WRITE_UNITS = {
    "200 B": 3,
    "200 B incompressible": 3,
    "1 KB": 4,
    "1 KB incompressible": 4,
    "4 KB incompressible": 7,
    "10 KB incompressible": 11,
    "100 KB": 4,
    "1 MB": 4,
    "10 MB": 4,
}
#: The most a middle transition may read: the state, once, after the claim: one read unit up to 4 KB stored
#: (issue 43), a unit per 4 KB of the stored state above (an inline state up to the break-even).
MAX_READ_UNITS = 1.0
MAX_READ_UNITS_INLINE = {"10 KB incompressible": 2.0}
#: The finish may cost this many write units more: its status change rewrites the Listing and PipelineListing
#: entries, moves the StatusListing and CostListing entries (a delete and a put each) and leaves Stalled. (2
#: before the filter indexes, which make a listing filtered by status or pipeline read only its matches; 5 before
#: the cost order's index.)
FINISH_ABOVE_MIDDLE = 7

_WORDS = (
    "invoice contract payment delivery customer supplier total amount due signed received pending "
    "approved shipment order account balance tax net gross quarter report summary clause term renewal "
    "notice period warehouse pallet freight insurance claim reference page table figure address contact "
    "number date the of for and with from under per within after before on by"
)
_VOCABULARY = _WORDS.split()
_VENDORS = ("Acme Freight", "Northwind Traders", "Globex", "Initech", "Umbrella Logistics", "Stark Supplies")


def progress(message: str) -> None:
    """A line of progress on stderr."""
    print(message, file=sys.stderr, flush=True)


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


@functools.cache
def document_state(target: int, *, seed: int = 20240601) -> dict[str, Any]:
    """A document job's state of exactly ``target`` bytes as compact JSON: records, then notes as padding.

    Made once per size and process (10 MB takes about two seconds); the phases hand it on unchanged.
    """
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
    sentences: list[str] = []
    length = 0
    while length < target - size:
        sentence = _sentence(rng) + " "
        sentences.append(sentence)
        length += len(sentence)
    state["notes"] = "".join(sentences)[: target - size]  # ASCII without escapes: one character is one byte
    if _json_size(state) != target:
        raise ValueError(f"cannot make a state of {target} bytes")
    return state


@functools.cache
def incompressible_state(target: int, *, seed: int = 20240601) -> dict[str, str]:
    """A state of exactly ``target`` bytes as compact JSON that gzip shrinks little: random base64 text.

    Base64 carries 6 bits per character, so gzip keeps about 76% of it: the worst case a state of
    text meets (truly random bytes cannot be JSON text).
    """
    overhead = _json_size({"blob": ""})
    if target < overhead:
        raise ValueError(f"cannot make a state of {target} bytes")
    length = target - overhead
    blob = base64.b64encode(random.Random(seed).randbytes(length * 3 // 4 + 3)).decode()[:length]
    return {"blob": blob}


def state_for(label: str) -> Any:
    """The state the cost suites measure under ``label`` (a key of :data:`SIZES`)."""
    maker = incompressible_state if label.endswith(INCOMPRESSIBLE) else document_state
    return maker(SIZES[label])


def _pass_along(following: str | None) -> Callable[[PhaseContext[Any]], Next | Done]:
    def phase(ctx: PhaseContext[Any]) -> Next | Done:
        return Next(following, ctx.state) if following else Done(ctx.state)

    return phase


def noop_pipeline(name: str = "transition-cost") -> Pipeline[Any]:
    """Four phases that hand the state on unchanged; the last returns it as the result."""
    pipeline: Pipeline[Any] = Pipeline(name)
    for index, name in enumerate(PHASES):
        pipeline.phase(name=name)(_pass_along(PHASES[index + 1] if index + 1 < len(PHASES) else None))
    return pipeline


def loop_pipeline() -> Pipeline[Any]:
    """One phase that hands the state on to itself forever: every advance is a middle transition."""
    pipeline: Pipeline[Any] = Pipeline("bench-loop")
    pipeline.phase(name="step")(_pass_along("step"))
    return pipeline


class CapturingScheduler:
    """A scheduler that keeps the advances asked for, for the caller to run one at a time."""

    def __init__(self) -> None:
        self.scheduled: list[tuple[str, str, int | None]] = []

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        """Keep the advance (delays play no part in these benchmarks)."""
        self.scheduled.append((job_id, phase, sequence))

    def take(self) -> tuple[str, str, int | None]:
        """The one advance asked for since the last take."""
        if len(self.scheduled) != 1:
            raise RuntimeError(f"expected one scheduled advance, found {len(self.scheduled)}")
        return self.scheduled.pop()


# -- AWS on moto -----------------------------------------------------------------------------


def fake_credentials() -> None:
    """Credentials and region for moto (never real ones: an AWS profile is ignored)."""
    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": REGION})
    os.environ.pop("AWS_PROFILE", None)
    os.environ.pop("AWS_SESSION_TOKEN", None)


@dataclass
class Backend:
    """cairn's table and a state bucket on moto, and the clients that reach them."""

    dynamodb: DynamoDBClient
    s3: S3Client
    table: str = TABLE
    bucket: str = BUCKET


@contextmanager
def moto_backend() -> Iterator[Backend]:
    """In-process moto with cairn's table (its indexes too) and a bucket."""
    fake_credentials()
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        s3 = boto3.client("s3", region_name=REGION)
        create_table(dynamodb, TABLE)
        s3.create_bucket(Bucket=BUCKET)
        yield Backend(dynamodb, s3)


@contextmanager
def quiet_stdout() -> Iterator[None]:
    """Send what the phase functions print (Powertools logs and metrics) to /dev/null, at the descriptor."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


# -- measuring cairn -------------------------------------------------------------------------


@dataclass
class JobCost:
    """What one job cost: its start, each middle transition and its finish."""

    start: Figures
    middle: list[Figures]
    finish: Figures


class Deployment:
    """The in-process deployment of the no-op pipeline, metered."""

    def __init__(self) -> None:
        fake_credentials()
        self.pipeline = noop_pipeline()
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        s3 = boto3.client("s3", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        self.stack = LocalStack.create(PipelineRegistry([self.pipeline]), dynamodb=dynamodb, s3=s3, sqs=sqs)
        self.meter = DynamoDBMeter(dynamodb, s3=s3, others=[sqs])
        invoke = self.stack.invoker.invoke

        def counted_invoke(**request: Any) -> Any:
            if self.meter.enabled:  # one Lambda Invoke request, as boto3's client would send it
                self.meter.figures.calls["lambda"]["Invoke"] += 1
            return invoke(**request)

        self.stack.invoker.invoke = counted_invoke  # type: ignore[method-assign]

    def run_job(self, job_id: str, state: Any) -> JobCost:
        """Start a job and run its phase functions one at a time, taking the meter's figures after each."""
        invoker = self.stack.invoker
        self.meter.take()
        with quiet_stdout():
            self.stack.runtime.cairn(OWNER, self.pipeline).start(self.pipeline, job_id, state=state)
            start = self.meter.take()
            steps: list[Figures] = []
            while invoker.pending():
                invoker.drain(max_steps=1)
                steps.append(self.meter.take())
        if invoker.failures:
            raise RuntimeError(f"{job_id}: a phase function failed: {invoker.failures[-1]['responsePayload']}")
        with self.meter.paused():
            job = self.stack.runtime.storage(OWNER).get_job(job_id)
        if job is None or job.status != JobStatus.COMPLETE or job.result != state:
            raise RuntimeError(f"{job_id} did not complete with its state: {job and job.status}")
        if len(steps) != len(PHASES):
            raise RuntimeError(f"{job_id}: expected {len(PHASES)} phase invocations, saw {len(steps)}")
        return JobCost(start, steps[:-1], steps[-1])


def measure_job(storage: Storage, pipeline: Pipeline[Any], meter: DynamoDBMeter, job_id: str, state: Any) -> JobCost:
    """Run one job to the end in-process with an InlineScheduler (no Lambda), taking the meter's figures per step."""
    scheduler = InlineScheduler()
    advances: list[Figures] = []

    def measured_advance(job_id: str, **advance: Any) -> None:
        advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, **advance)
        advances.append(meter.take())

    scheduler.bind(measured_advance)
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
    return JobCost(start, advances[:-1], advances[-1])


def dollars_per_million(figures: Figures) -> float:
    """What a million repetitions of ``figures`` cost at on-demand prices (DynamoDB, S3, Lambda requests)."""
    return (
        figures.write_units * PRICES["dynamodb_write_unit"]
        + figures.read_units * PRICES["dynamodb_read_unit"]
        + figures.s3_put_tier * PRICES["s3_put_request"]
        + figures.s3_get_tier * PRICES["s3_get_request"]
        + figures.calls["lambda"]["Invoke"] * PRICES["lambda_request"]
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
        "lambda_invokes": figures.calls["lambda"]["Invoke"],
        "dollars_per_million": dollars_per_million(figures),
        "calls": {
            f"{service}.{operation}": count
            for service, operations in sorted(figures.calls.items())
            for operation, count in sorted(operations.items())
            if count
        },
    }


_FIGURES = (
    "write_requests",
    "read_requests",
    "write_units",
    "table_units",
    "index_units",
    "read_units",
    "s3_calls",
    "s3_put_tier",
    "s3_get_tier",
    "lambda_invokes",
    "dollars_per_million",
)


def summarise(all_figures: Sequence[Figures]) -> dict[str, Any]:
    """Median, min and max of each figure over several transitions (and every operation seen, by median)."""
    summaries = [summary(figures) for figures in all_figures]
    found: dict[str, Any] = {}
    for name in _FIGURES:
        values = [float(entry[name]) for entry in summaries]
        found[name] = statistics.median(values)
        found[f"{name}_range"] = [min(values), max(values)]
    operations = sorted({name for entry in summaries for name in entry["calls"]})
    found["calls"] = {
        name: statistics.median(entry["calls"].get(name, 0) for entry in summaries) for name in operations
    }
    found["transitions"] = len(summaries)
    return found


# -- peers -----------------------------------------------------------------------------------


def powertools_writes(dynamodb: DynamoDBClient, labels: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Powertools idempotency, metered: one ``idempotent_function`` call per state of :data:`SIZES`, its response.

    A call is a conditional PutItem of the in-progress record and an UpdateItem to COMPLETED
    storing the response (JSON); a record over DynamoDB's 400 KB item limit cannot be stored.
    """
    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
        idempotent_function,
    )

    table = "powertools-idempotency"
    dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    layer = DynamoDBPersistenceLayer(table_name=table, boto3_client=dynamodb)
    meter = DynamoDBMeter(dynamodb)
    found: dict[str, dict[str, Any]] = {}
    try:
        for label in labels:
            state = state_for(label)

            def respond(message: dict[str, Any], state: Any = state) -> Any:
                return state  # the phase's response: the state it hands on

            phase = idempotent_function(
                data_keyword_argument="message", persistence_store=layer, config=IdempotencyConfig()
            )(respond)

            meter.take()
            error = ""
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # no Lambda context to ask for the remaining time
                try:
                    phase(message={"jobId": f"job-{label}", "phase": "classify", "sequence": 3})
                except Exception as exc:
                    error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                    if "size" not in error.lower():  # anything but the item limit is a failure to measure
                        raise
            figures = meter.take()
            found[label] = {
                "write_requests": figures.write_requests,
                "write_units": figures.write_units,
                "record_bytes": max((record.size_after for record in figures.records), default=0),
                "possible": not error,
                "error": error,
                "dollars_per_million": figures.write_units * PRICES["dynamodb_write_unit"] + PRICES["lambda_request"],
            }
    finally:
        meter.detach()
    return found


def stepfunctions_driver_extra() -> float:
    """Dollars per transition the Step Functions driver adds to the direct driver's: its loop's state transitions
    (:mod:`benchmarks.stepfunctions_loop`) and the scheduler's resolve invoke (the phase's own invoke replaces the
    direct driver's)."""
    resolves = lambda_tasks() - 1
    return len(loop_states()) * PRICES["stepfunctions_standard_transition"] + resolves * PRICES["lambda_request"]


def peer_prices(size: int, powertools: dict[str, Any] | None) -> dict[str, Any]:
    """Dollars per million transitions of the alternatives at ``size`` bytes of state (None: not possible)."""
    fits = size <= PAYLOAD_LIMIT
    offload = 0.0 if fits else PRICES["s3_put_request"] + PRICES["s3_get_request"]
    return {
        "stepfunctions_standard": PRICES["stepfunctions_standard_transition"] + PRICES["lambda_request"] + offload,
        "stepfunctions_offloaded": not fits,
        "durable_functions": PRICES["durable_functions_operation"] if fits else None,
        "powertools_idempotency": powertools["dollars_per_million"] if powertools and powertools["possible"] else None,
    }


# -- the suite -------------------------------------------------------------------------------


def measure(labels: Sequence[str], repeats: int) -> dict[str, Any]:
    """Every size: ``repeats`` metered jobs, sizes interleaved (one job of each size, then again)."""
    runs: dict[str, list[JobCost]] = {label: [] for label in labels}
    for label in labels:
        progress(f"cost: making the {label} state")
        state_for(label)  # made before anything is measured
    with mock_aws():
        deployment = Deployment()
        for run in range(repeats):
            for label in labels:
                started = time.perf_counter()
                job_id = f"job-{label.replace(' ', '-')}-{run}"
                runs[label].append(deployment.run_job(job_id, state_for(label)))
                progress(f"cost: {label} job {run + 1}/{repeats} in {time.perf_counter() - started:.2f} s")
        deployment.meter.detach()
        progress("cost: metering Powertools idempotency's writes")
        powertools = powertools_writes(boto3.client("dynamodb", region_name=REGION), labels)
    sizes: dict[str, Any] = {}
    for label in labels:
        jobs = runs[label]
        middle = summarise([figures for job in jobs for figures in job.middle])
        sizes[label] = {
            "state_bytes": SIZES[label],
            "start": summarise([job.start for job in jobs]),
            "middle": middle,
            "finish": summarise([job.finish for job in jobs]),
            "powertools": powertools[label],
            "peers": peer_prices(SIZES[label], powertools[label]),
        }
    return sizes


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _figure(entry: dict[str, Any], name: str) -> str:
    """The median, with the range when the runs differed."""
    low, high = entry[f"{name}_range"]
    shown = _number(entry[name])
    return shown if low == high else f"{shown} ({_number(low)}-{_number(high)})"


def _dollars(value: float | None) -> str:
    return "not possible" if value is None else f"${value:,.2f}"


def _before(label: str) -> dict[str, Any] | None:
    if not BEFORE.exists():
        return None
    found: dict[str, Any] | None = json.loads(BEFORE.read_text()).get("sizes", {}).get(label)
    return found


def build_result(sizes: dict[str, Any], repeats: int) -> Result:
    """Tables, targets and notes from the figures."""
    labels = list(sizes)
    per_step = Table(
        "Requests and write units per step of a job (median over every run; a range where runs differed)",
        [
            "State",
            "Step",
            "DynamoDB writes",
            "DynamoDB reads",
            "Write units (table + index)",
            "Read units",
            "S3 calls (PUT-priced / GET-priced)",
            "Lambda invokes",
        ],
        [],
        note=(
            "A middle transition is one phase function invocation: the claim (UpdateItem), the phase, the "
            "history item (PutItem), the commit (UpdateItem), above the break-even size the S3 GET of the "
            "state the claim returns and the S3 PUT of the state committed, and the direct driver's async "
            "invoke of the next phase. The start also writes the input item (a batch with its history "
            "item) and reads the partition once (Query) to refuse an existing job id; the finish rewrites the "
            "job's Listing entry and removes its Stalled one (its status changes) and invokes nothing."
        ),
    )
    for label in labels:
        for step in ("start", "middle", "finish"):
            entry = sizes[label][step]
            per_step.rows.append(
                [
                    label,
                    "middle transition" if step == "middle" else step,
                    _figure(entry, "write_requests"),
                    _figure(entry, "read_requests"),
                    f"{_figure(entry, 'write_units')} ({_number(entry['table_units'])} + "
                    f"{_number(entry['index_units'])})",
                    _figure(entry, "read_units"),
                    f"{_figure(entry, 's3_calls')} ({_number(entry['s3_put_tier'])} / {_number(entry['s3_get_tier'])})",
                    _figure(entry, "lambda_invokes"),
                ]
            )
    prices = Table(
        "Dollars per million middle transitions (us-east-1 on-demand)",
        [
            "State",
            "cairn (measured)",
            "cairn, Step Functions driver",
            "Step Functions Standard",
            "Lambda durable functions",
            "Powertools idempotency (modelled)",
            "cairn before (f845740)",
        ],
        [],
        note=(
            "cairn: the write and read units, S3 requests and Lambda invokes measured above at "
            "$0.625/M write units, $0.125/M read units, $5/M S3 PUTs, $0.40/M S3 GETs and $0.20/M Lambda "
            "requests. cairn on its Step Functions driver: the same, plus the state transitions its state "
            f"machine bills per phase ({len(loop_states())}: {', '.join(loop_states())}) and the scheduler's "
            f"resolve invoke ({lambda_tasks() - 1} Lambda request). "
            "Step Functions Standard: $25/M state transitions plus the $0.20/M Lambda request "
            "of the task; above its 256 KB payload limit the state must go to S3 by hand (one PUT and "
            "one GET added, marked *). Lambda durable functions: about $8/M durable operations, one "
            "operation (a step's checkpoint) per transition; per-GB charges for data written and kept "
            "are left out; a checkpoint above 256 KB is not possible. Powertools idempotency: modelled as "
            "each phase an idempotent handler whose response is the state it hands on; its two DynamoDB "
            "writes per call (PutItem of the in-progress record, UpdateItem to COMPLETED with the response "
            "stored) are metered on moto with the real library, plus the $0.20/M invoke of the next phase. "
            "It de-duplicates calls, nothing more (no claim, no history, no pause, retry or listing), and a "
            "record above DynamoDB's 400 KB item limit cannot be stored. Storage (GB-month) is left out "
            "everywhere. cairn before: the DynamoDB and S3 figures of benchmarks/results/before.json (the code at "
            "f845740, measured up to 1 MB) plus the same $0.20/M invoke."
        ),
    )
    for label in labels:
        entry = sizes[label]
        peers = entry["peers"]
        before = _before(label)
        sfn = _dollars(peers["stepfunctions_standard"]) + (" *" if peers["stepfunctions_offloaded"] else "")
        powertools = entry["powertools"]
        shown_powertools = _dollars(peers["powertools_idempotency"])
        if powertools["possible"]:
            shown_powertools += f" ({powertools['write_units']} WCU)"
        else:
            shown_powertools += " (record > 400 KB)"
        prices.rows.append(
            [
                label,
                _dollars(entry["middle"]["dollars_per_million"]),
                _dollars(entry["middle"]["dollars_per_million"] + stepfunctions_driver_extra()),
                sfn,
                _dollars(peers["durable_functions"]),
                shown_powertools,
                "-" if before is None else _dollars(before["middle"]["dollars_per_million"] + PRICES["lambda_request"]),
            ]
        )
    result = Result(
        suite=SUITE,
        title="Cost per transition",
        summary=(
            "Requests, write units and dollars per phase transition of a 4-phase no-op pipeline on the "
            "in-process deployment (phase functions, direct driver, DynamoDB and S3 on moto), state 200 B "
            "to 10 MB of a document job's JSON and, beside it, random base64 text gzip barely shrinks "
            f"('incompressible'); {repeats} job(s) per size, sizes interleaved. Counted from botocore's events; "
            "write units computed from item sizes as DynamoDB bills them on demand, index writes included."
        ),
        tables=[per_step, prices],
        versions={**versions(*VERSIONED), "git": git_commit()},
    )
    for label in labels:
        middle, finish = sizes[label]["middle"], sizes[label]["finish"]
        worst_units, worst_reads = middle["write_units_range"][1], middle["read_units_range"][1]
        ceiling, reads = MAX_WRITE_UNITS[label], MAX_READ_UNITS_INLINE.get(label, MAX_READ_UNITS)
        reasons = []
        if worst_units > ceiling:
            reasons.append(f"{_number(worst_units - ceiling)} write unit(s) over")
        if worst_reads > reads:
            reasons.append(f"{_number(worst_reads - reads)} read unit(s) over: {', '.join(middle['calls'])}")
        result.targets.append(
            Target(
                f"Write units and reads per transition, {label}",
                f"at most {ceiling} write units and {_number(reads)} read unit{'' if reads == 1 else 's'}",
                f"{_number(worst_units)} write units, {_number(worst_reads)} read "
                f"unit{'' if worst_reads == 1 else 's'} (worst of "
                f"{middle['transitions']} transitions)",
                not reasons,
                "; ".join(reasons),
            )
        )
        above = finish["write_units_range"][1] - worst_units
        result.targets.append(
            Target(
                f"The finish against a middle transition, {label}",
                f"at most {FINISH_ABOVE_MIDDLE} write units more",
                f"{_number(above)} more ({_number(finish['index_units'])} of them index writes)",
                above <= FINISH_ABOVE_MIDDLE,
                ""
                if above <= FINISH_ABOVE_MIDDLE
                else f"missed by {_number(above - FINISH_ABOVE_MIDDLE)}: the finish rewrites the job's listing entries "
                "and leaves the sweep's index",
            )
        )
    dearer = [
        label
        for label in labels
        if sizes[label]["middle"]["dollars_per_million"] >= sizes[label]["peers"]["stepfunctions_standard"]
    ]
    shown = ", ".join(
        f"{label} {sizes[label]['middle']['dollars_per_million'] / sizes[label]['peers']['stepfunctions_standard']:.0%}"
        for label in labels
    )
    result.targets.append(
        Target(
            "Cheaper than Step Functions Standard",
            "at every state size",
            f"cairn's price as a share of Step Functions': {shown}",
            not dearer,
            "" if not dearer else f"as dear or dearer at {', '.join(dearer)}",
        )
    )
    result.notes += [
        "Counts are exact and deterministic: the ranges (min-max over every transition of every run) "
        "show any transition that differed. Read units are billed as DynamoDB bills them: a GetItem on the "
        "whole stored item, a Query on every item it evaluates before its filter.",
        "Lambda invokes: the local Lambda of LocalStack stands in for boto3's Lambda client, so the "
        "direct driver's invoke is counted where the scheduler calls it; each is one Invoke request on "
        "AWS. The finish invokes nothing; the start invokes the first phase.",
        "The state is written once per transition, in the commit's history item (the job item names "
        "it): the claim and the commit of the small job item cost one write unit each, the history item "
        "one per KB of state and log, and the claim is followed by one consistent read of the state "
        "(one read unit up to 4 KB). Above the break-even size (CAIRN_OFFLOAD_STATE_FROM, 8 KB "
        "compressed) the state is gzipped (level 1) into S3 and the history item keeps a reference.",
    ]
    documents = [label for label in labels if not label.endswith(INCOMPRESSIBLE)]  # one point per size
    result.data = {
        "prices": PRICES,
        "sizes": sizes,
        "repeats": repeats,
        "machine": machine(),
        "git": git_commit(),
        "plots": {
            "dollars": {
                "title": "Dollars per million middle transitions",
                "x": "state (bytes)",
                "y": "$ per million",
                "log": True,
                "series": {
                    name: {
                        "x": [sizes[label]["state_bytes"] for label in documents if value(label) is not None],
                        "y": [value(label) for label in documents if value(label) is not None],
                    }
                    for name, value in _price_series(sizes).items()
                },
            }
        },
    }
    return result


def _price_series(sizes: dict[str, Any]) -> dict[str, Callable[[str], float | None]]:
    return {
        "cairn": lambda label: sizes[label]["middle"]["dollars_per_million"],
        "Step Functions Standard": lambda label: sizes[label]["peers"]["stepfunctions_standard"],
        "Lambda durable functions": lambda label: sizes[label]["peers"]["durable_functions"],
        "Powertools idempotency": lambda label: sizes[label]["peers"]["powertools_idempotency"],
    }


def main(argv: list[str] | None = None) -> int:
    """Measure, write ``benchmarks/results/latest/cost.json``; 0 when everything was measured."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one job of the small sizes only")
    parser.add_argument("--repeats", type=int, default=None, help="jobs per size (default 3, quick 1)")
    arguments = parser.parse_args(argv)
    started = time.perf_counter()
    repeats = max(1, arguments.repeats or (1 if arguments.quick else 3))
    labels = list(QUICK_SIZES if arguments.quick else SIZES)
    try:
        sizes = measure(labels, repeats)
    except Exception as exc:
        progress(f"cost: could not measure: {type(exc).__name__}: {exc}")
        failed = Result(SUITE, "Cost per transition", "Requests and write units per transition.")
        failed.unmeasured.append(f"{type(exc).__name__}: {exc}")
        failed.versions = {**versions(*VERSIONED), "git": git_commit()}
        write_result(failed, started)
        return 1
    write_result(build_result(sizes, repeats), started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
