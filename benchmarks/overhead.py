"""Benchmark suite "overhead": a cairn transition against the floor, raw boto3 writing the same checkpoint.

cairn: a middle transition of a one-phase loop (the phase hands its state on to itself) through
``advance_phase`` with :class:`~cairn.aws.dynamodb.DynamoDBStorage` on in-process moto (S3 on moto
for large states): claim, the read of the state it refers to, run, history item (with the new state),
commit. The scheduler only keeps the next advance.

The floor: what any crash-safe checkpoint of the phase's output needs at least, with raw boto3 on
the same table and bucket in the same run. The state is serialised (compact JSON); while it fits in
the item (up to 350,000 bytes, cairn's inline limit) it is written inline by one conditional
``UpdateItem`` of the job item (``SET checkpoint, nextPhase, sequence = sequence + 1`` if
``sequence`` is the one read); above, one ``PutObject`` of the JSON (to one of two keys, in turn, so
the object the item points to is never overwritten) and that ``UpdateItem`` with the object's key.
Nothing is read, compressed or hashed. A second floor, "read + write", also reads the state the
phase needs (a consistent ``GetItem``, and above the limit a ``GetObject``) and parses it. A third,
"claim + commit", is the least a fenced transition needs: a conditional ``UpdateItem`` that claims the
job (a lease, the sequence advanced) and returns the item with the state, then the commit conditioned
on that claim. A fourth, "own requests", sends cairn's own requests in bare boto3: the calls a cairn
middle transition of the same state made (recorded from a cairn job of its own, see
:mod:`benchmarks.own_requests`), with the same parameters, replayed for a copy of that job, so the
difference is cairn's own client-side work (building the requests, admitting, encoding, hashing and
reading the state, its models). The four floors are named in the report: write-only, read + write,
claim + commit, own requests.

Time inside moto is measured by timing moto's ``BotocoreStubber.__call__`` (the ``before-send``
handler that answers every request in place of the network: URL matching, request parsing, the
backend, the response body); the rest of the wall time is client-side (cairn, botocore's
serialisation, signing and parsing), what exists on AWS too. Variants and sizes are interleaved;
each run is the mean per transition of a batch; medians of the runs with min and max.

Run: ``python -m benchmarks.overhead [--quick] [--repeats N] [--sizes "1 KB" ...]`` (``make bench`` runs
every suite).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from moto.core.botocore_stubber import BotocoreStubber

from benchmarks.common import Result, Summary, Table, Target, git_commit, machine, versions, write_result
from benchmarks.cost import (
    KB,
    MB,
    Backend,
    CapturingScheduler,
    document_state,
    loop_pipeline,
    moto_backend,
    progress,
)
from benchmarks.own_requests import OwnRequests
from benchmarks.own_work import own_work
from cairn import Pipeline, advance_phase, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.core.settings import DEFAULT_INLINE_STATE_LIMIT, Settings

SUITE = "overhead"
SIZES: dict[str, int] = {"1 KB": KB, "1 MB": MB, "10 MB": 10 * MB}
QUICK_SIZES = ("1 KB",)
#: Transitions per measured run (a run's figure is their mean).
BATCH = {"1 KB": 20, "1 MB": 4, "10 MB": 2}
QUICK_BATCH = 5
TARGETS = {"1 KB": 1.2, "1 MB": 1.5, "10 MB": 1.5}
#: Client-side CPU per transition against the read + write floor's, at 1 MB and 10 MB (worst run counted).
CLIENT_TARGET = 1.5
#: Client-side CPU per transition against the own requests floor's, at 1 KB (worst run counted).
OWN_REQUESTS_TARGET = 1.15
VARIANTS = ("cairn", "floor", "read + write floor", "claim + commit floor", "own requests floor")
#: The client-side CPU target of each size: the floor it is measured against, and the most cairn may be.
CLIENT_TARGETS = {
    "1 KB": (VARIANTS[4], OWN_REQUESTS_TARGET),
    "1 MB": (VARIANTS[2], CLIENT_TARGET),
    "10 MB": (VARIANTS[2], CLIENT_TARGET),
}
VERSIONED = ("boto3", "botocore", "moto", "pydantic")


# -- time inside moto ------------------------------------------------------------------------


class MotoClock:
    """Wall and CPU seconds spent inside moto's request handler, summed since the clock was installed."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0
        self.requests = 0

    @contextmanager
    def installed(self) -> Iterator[MotoClock]:
        """Time every request moto answers while inside (the stubber's class method is wrapped)."""
        original = BotocoreStubber.__call__
        clock = self

        def timed_call(stubber: BotocoreStubber, event_name: str, request: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return original(stubber, event_name, request, **kwargs)
            finally:
                clock.cpu += time.process_time() - cpu
                clock.wall += time.perf_counter() - wall
                clock.requests += 1

        BotocoreStubber.__call__ = timed_call  # type: ignore[method-assign, assignment]
        try:
            yield self
        finally:
            BotocoreStubber.__call__ = original  # type: ignore[method-assign]


# -- the variants ----------------------------------------------------------------------------


class CairnLoop:
    """A cairn job looping one phase: each ``transition()`` is one middle transition."""

    def __init__(self, storage: DynamoDBStorage, pipeline: Pipeline[Any], job_id: str, state: Any) -> None:
        self.storage = storage
        self.pipeline = pipeline
        self.scheduler = CapturingScheduler()
        run_pipeline(job_id, pipeline, storage=storage, scheduler=self.scheduler, initial_state=state)

    def transition(self) -> None:
        """Advance the job once (claim, run, history item, commit)."""
        job_id, phase, sequence = self.scheduler.take()
        job = advance_phase(
            job_id, self.pipeline, storage=self.storage, scheduler=self.scheduler, phase=phase, sequence=sequence
        )
        if job is None:
            raise RuntimeError(f"{job_id}: the advance did nothing")


def _started(storage: DynamoDBStorage, pipeline: Pipeline[Any], job_id: str, state: Any) -> Callable[[], None]:
    """Start a cairn job looping one phase; the call that runs its next middle transition."""
    return CairnLoop(storage, pipeline, job_id, state).transition


class Floor:
    """Raw boto3: the fewest requests that durably record a phase's output state (see the module's doc)."""

    def __init__(self, backend: Backend, name: str, state: Any, *, read: bool, claim: bool = False) -> None:
        self.backend = backend
        self.state = state
        self.read = read
        self.claim = claim
        self.key = {"pk": {"S": f"bench-floor#{name}"}, "sk": {"S": "job"}}
        self.sequence = 0
        self.inline = len(json.dumps(state, separators=(",", ":")).encode()) <= DEFAULT_INLINE_STATE_LIMIT
        self.object_key = f"bench-floor/{name}"
        self._write(self.state)

    def transition(self) -> None:
        """Read the state (by a claim, for the claim + commit floor), then write the next checkpoint."""
        self._write(self._state())

    def _state(self) -> Any:
        if self.claim:
            return self._claim()
        return self._read() if self.read else self.state

    def _claim(self) -> Any:
        """The claim: one conditional UpdateItem taking a lease and returning the item with the state."""
        item = self.backend.dynamodb.update_item(
            TableName=self.backend.table,
            Key=self.key,
            UpdateExpression="SET #lease = :worker, #sequence = #sequence + :one",
            ConditionExpression="#sequence = :expected AND attribute_not_exists(#lease)",
            ExpressionAttributeNames={"#lease": "lease", "#sequence": "sequence"},
            ExpressionAttributeValues={
                ":worker": {"S": "floor-worker"},
                ":one": {"N": "1"},
                ":expected": {"N": str(self.sequence)},
            },
            ReturnValues="ALL_NEW",
        )["Attributes"]
        self.sequence += 1
        return self._state_of(item)

    def _state_of(self, item: dict[str, Any]) -> Any:
        checkpoint = item["checkpoint"]["S"]
        if self.inline:
            return json.loads(checkpoint)
        return json.loads(self.backend.s3.get_object(Bucket=self.backend.bucket, Key=checkpoint)["Body"].read())

    def _read(self) -> Any:
        item = self.backend.dynamodb.get_item(TableName=self.backend.table, Key=self.key, ConsistentRead=True)["Item"]
        return self._state_of(item)

    def _write(self, state: Any) -> None:
        body = json.dumps(state, separators=(",", ":"))
        if self.inline:
            checkpoint = body
        else:
            checkpoint = f"{self.object_key}/{self.sequence % 2}.json"
            self.backend.s3.put_object(Bucket=self.backend.bucket, Key=checkpoint, Body=body.encode())
        if self.sequence == 0:
            self.backend.dynamodb.put_item(
                TableName=self.backend.table,
                Item={**self.key, "checkpoint": {"S": checkpoint}, "nextPhase": {"S": "step"}, "sequence": {"N": "1"}},
            )
            self.sequence = 1
            return
        names = {"#checkpoint": "checkpoint", "#nextPhase": "nextPhase", "#sequence": "sequence"}
        values = {
            ":checkpoint": {"S": checkpoint},
            ":phase": {"S": "step"},
            ":one": {"N": "1"},
            ":expected": {"N": str(self.sequence)},
        }
        update = "SET #checkpoint = :checkpoint, #nextPhase = :phase, #sequence = #sequence + :one"
        condition = "#sequence = :expected"
        if self.claim:  # the commit holds the claim it made, and gives it back
            update += " REMOVE #lease"
            condition += " AND #lease = :worker"
            names["#lease"] = "lease"
            values[":worker"] = {"S": "floor-worker"}
        self.backend.dynamodb.update_item(
            TableName=self.backend.table,
            Key=self.key,
            UpdateExpression=update,
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
        self.sequence += 1


# -- measuring -------------------------------------------------------------------------------

_PARTS = ("wall", "cpu", "client", "moto")


@dataclass
class Runs:
    """Milliseconds per transition of each run: wall clock, CPU, client-side CPU and CPU inside moto."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    client: list[float] = field(default_factory=list)
    moto: list[float] = field(default_factory=list)
    requests: list[float] = field(default_factory=list)

    def part(self, name: str) -> list[float]:
        """The runs' figures of one part (``wall``, ``cpu``, ``client`` or ``moto``)."""
        found: list[float] = getattr(self, name)
        return found


def run_batch(transition: Callable[[], None], count: int, clock: MotoClock, runs: Runs | None = None) -> None:
    """Run ``count`` transitions; add their mean per transition to ``runs`` (when given)."""
    gc.collect()
    moto_cpu, requests = clock.cpu, clock.requests
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        transition()
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - wall
    if runs is not None:
        inside = clock.cpu - moto_cpu
        runs.wall.append(wall / count * 1000)
        runs.cpu.append(cpu / count * 1000)
        runs.moto.append(inside / count * 1000)
        runs.client.append((cpu - inside) / count * 1000)
        runs.requests.append((clock.requests - requests) / count)


#: Own time in the profile by kind: (kind, where the function lives, words in its name).
_KINDS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("moto", "/moto/", ()),
    ("werkzeug (moto's requests)", "/werkzeug/", ()),
    ("botocore", "/botocore/", ()),
    ("JSON encode/decode", "/json/", ()),
    ("gzip", "~", ("zlib", "compress", "crc32")),
    ("sha256", "~", ("sha256", "hexdigest", "openssl")),
    ("pydantic", "/pydantic", ()),
    ("cairn", "/cairn/", ()),
    ("C builtins", "~", ("",)),
)
#: cairn functions whose cumulative time names a cost: (label, file, function).
_HOTSPOTS = (
    ("inside moto", "moto/core/botocore_stubber.py", "__call__"),
    ("admitting the phase's output (its walk and json dumps)", "cairn/core/admission.py", "admit"),
    ("encoding the state (json dumps, gzip, sha256, S3 PUT)", "cairn/aws/payloads.py", "encode"),
    ("reading the state back (S3 GET, sha256, gunzip, json loads)", "cairn/aws/payloads.py", "_fetch"),
    ("the claim (UpdateItem, ALL_NEW decoded)", "cairn/aws/dynamodb/jobs.py", "claim"),
    ("the commit (history PutItem + UpdateItem)", "cairn/aws/dynamodb/jobs.py", "commit"),
)


def _kind(filename: str, function: str) -> str:
    for kind, where, words in _KINDS:
        if where == "~":
            if filename == "~" and any(word in function.lower() for word in words):
                return kind
        elif where in filename:
            return kind
    return "Python stdlib and other"


def profile(transition: Callable[[], None], count: int) -> dict[str, Any]:
    """Where a cairn transition's time goes (cProfile): own time by kind, hot spots and the top functions."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(count):
        transition()
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in stats.values()) or 1.0
    whole = max((entry[3] for (_, _, function), entry in stats.items() if function == "transition"), default=total)
    by_kind: dict[str, float] = {}
    rows = []
    hotspots = {label: 0.0 for label, _, _ in _HOTSPOTS}
    for (filename, line, function), (_, _, own, cumulative, _) in stats.items():
        kind = _kind(filename, function)
        by_kind[kind] = by_kind.get(kind, 0.0) + own
        for label, where, name in _HOTSPOTS:
            if filename.endswith(where) and function == name:
                hotspots[label] += cumulative
        short = re.sub(r".*/(site-packages|layers/cairn|lib/python3\.\d+)/", "", filename)
        if "/benchmarks/" not in filename:  # the loop's own frames (and the collections landing in them)
            rows.append((own, f"{function}" if filename == "~" else f"{short}:{line}({function})"))
    rows.sort(reverse=True)
    return {
        "own_time_by_kind": {kind: round(own / total, 3) for kind, own in sorted(by_kind.items(), key=lambda x: -x[1])},
        "hotspots": {label: round(seconds / whole, 3) for label, seconds in hotspots.items()},
        "top_functions": [
            {"function": where, "own_ms_per_transition": round(own / count * 1000, 3), "share": round(own / total, 3)}
            for own, where in rows[:10]
        ],
    }


def measure(labels: Sequence[str], repeats: int, batch: dict[str, int]) -> dict[str, Any]:
    """Every size and variant, interleaved: ``repeats`` runs of a batch each, after one warm-up batch."""
    for label in labels:
        progress(f"overhead: making the {label} state")
        document_state(SIZES[label])
    runs: dict[str, dict[str, Runs]] = {label: {variant: Runs() for variant in VARIANTS} for label in labels}
    profiles: dict[str, Any] = {}
    own_works: dict[str, Any] = {}
    clock = MotoClock()
    with moto_backend() as backend, clock.installed():
        storage = DynamoDBStorage(
            backend.table, client=backend.dynamodb, bucket=backend.bucket, s3_client=backend.s3, settings=Settings()
        )
        pipeline = loop_pipeline()
        variants: dict[str, dict[str, Callable[[], None]]] = {}
        for label in labels:
            state = document_state(SIZES[label])
            cairn = CairnLoop(storage, pipeline, f"overhead-{SIZES[label]}", state)
            floor = Floor(backend, f"{SIZES[label]}-w", state, read=False)
            read_write = Floor(backend, f"{SIZES[label]}-rw", state, read=True)
            claim_commit = Floor(backend, f"{SIZES[label]}-cc", state, read=True, claim=True)
            progress(f"overhead: recording cairn's requests at {label}")
            own = OwnRequests(
                (backend.dynamodb, backend.s3),
                partial(_started, storage, pipeline, f"own-{SIZES[label]}-rec", state),
                recorded_job=f"own-{SIZES[label]}-rec",
                replayed_job=f"own-{SIZES[label]}-rep",
                transitions=1 + repeats * batch[label],  # the warm-up, then every measured run
            )
            variants[label] = {
                "cairn": cairn.transition,
                "floor": floor.transition,
                VARIANTS[2]: read_write.transition,
                VARIANTS[3]: claim_commit.transition,
                VARIANTS[4]: own.transition,
            }
            for transition in variants[label].values():
                run_batch(transition, 1, clock)  # warm-up: the first request of a kind builds botocore's models
        for repeat in range(repeats):
            for label in labels:
                for variant, transition in variants[label].items():
                    run_batch(transition, batch[label], clock, runs[label][variant])
                cairn_ms, floor_ms = runs[label]["cairn"].cpu[-1], runs[label]["floor"].cpu[-1]
                progress(
                    f"overhead: {label} run {repeat + 1}/{repeats}: CPU per transition cairn {cairn_ms:.1f} ms, "
                    f"floor {floor_ms:.1f} ms"
                )
        for label in labels:
            progress(f"overhead: profiling a cairn transition at {label} (cProfile)")
            profiles[label] = profile(variants[label]["cairn"], max(1, batch[label]))
            own_works[label] = own_work(variants[label]["cairn"], max(1, batch[label]))
    figures: dict[str, Any] = {}
    for label in labels:
        entry: dict[str, Any] = {
            "state_bytes": SIZES[label],
            "batch": batch[label],
            "profile": profiles[label],
            "own_work": own_works[label],
        }
        for variant in VARIANTS:
            measured = runs[label][variant]
            entry[variant] = {f"{part}_ms": _as_dict(Summary.of(measured.part(part))) for part in _PARTS}
            entry[variant]["requests"] = Summary.of(measured.requests).median
            entry[variant]["raw_ms"] = {part: [round(value, 3) for value in measured.part(part)] for part in _PARTS}
        ours, bare, reading, fenced, replayed = (runs[label][variant] for variant in VARIANTS)
        entry["ratio"] = {part: _as_dict(_ratios(ours.part(part), bare.part(part))) for part in _PARTS}
        entry["ratio_read_write"] = {part: _as_dict(_ratios(ours.part(part), reading.part(part))) for part in _PARTS}
        entry["ratio_claim_commit"] = {part: _as_dict(_ratios(ours.part(part), fenced.part(part))) for part in _PARTS}
        entry["ratio_own_requests"] = {part: _as_dict(_ratios(ours.part(part), replayed.part(part))) for part in _PARTS}
        figures[label] = entry
    return figures


def _ratios(numerators: Sequence[float], denominators: Sequence[float]) -> Summary:
    """The summary of run-by-run ratios (each run of one variant against the run of the other beside it)."""
    return Summary.of([top / bottom for top, bottom in zip(numerators, denominators, strict=True)])


def _as_dict(summary: Summary) -> dict[str, float]:
    return {"median": summary.median, "min": summary.min, "max": summary.max, "runs": summary.runs}


def _cell(entry: dict[str, float], digits: int = 1) -> str:
    return Summary(entry["median"], entry["min"], entry["max"], int(entry["runs"])).cell(digits)


# -- the report ------------------------------------------------------------------------------


_CLIENT_SIDE = _HOTSPOTS[1:4]
"""The hot spots of the Lambda's own process (the state's JSON, gzip and hashing)."""


def _client_reason(entry: dict[str, Any], floor: str) -> str:
    """Why cairn's own process works more than ``floor``'s, from the split and the profile."""
    if floor == VARIANTS[4]:
        extra = entry["cairn"]["client_ms"]["median"] - entry[floor]["client_ms"]["median"]
        work = entry["own_work"]
        areas = ", ".join(f"{area} {share:.0%}" for area, share in work["by_area"].items() if share >= 0.03)
        top = "; ".join(f"{function['function']} {function['share']:.0%}" for function in work["top_functions"][:5])
        return (
            f"{extra:+.2f} ms per transition of client-side CPU that is cairn's own, over the same "
            f"{entry[floor]['requests']:.0f} requests, spread thin: decoding the items the claim and the commit "
            f"return into jobs, sizing items, building the update and condition expressions, its models, the "
            f"state's admission, gzip and read back (cairn's own work, its requests left out: {areas}; costliest "
            f"functions: {top})"
        )
    requests = entry["cairn"]["requests"] - entry[floor]["requests"]
    named = ", ".join(f"{name} {entry['profile']['hotspots'][name]:.0%}" for name, _, _ in _CLIENT_SIDE)
    areas = ", ".join(f"{area} {share:.0%}" for area, share in entry["own_work"]["by_area"].items() if share >= 0.05)
    return (
        f"{requests:.0f} more requests through botocore (the claim, the history item and the commit against "
        f"one write) and the state's gzip and SHA-256 both ways, which the floor does not do (shares of a cairn "
        f"transition: {named}; cairn's own work, its requests left out: {areas})"
    )


def _reason(label: str, entry: dict[str, Any]) -> str:
    """The main reasons a transition costs more than the floor, from the split and the profile."""
    cairn, floor = entry["cairn"], entry["floor"]
    extra_moto = cairn["moto_ms"]["median"] - floor["moto_ms"]["median"]
    extra_client = cairn["client_ms"]["median"] - floor["client_ms"]["median"]
    hotspots = entry["profile"]["hotspots"]
    per_request = [entry[variant]["moto_ms"]["median"] / max(entry[variant]["requests"], 1) for variant in VARIANTS]
    requests = (
        f"{cairn['requests']:.0f} requests to the floor's {floor['requests']:.0f}, {per_request[0]:.1f} ms "
        f"each against {per_request[1]:.1f} ms"
    )
    if extra_moto >= extra_client:
        inside = hotspots["inside moto"]
        more = cairn["requests"] - floor["requests"]
        return (
            f"mostly moto: {extra_moto:+.1f} ms of CPU inside moto ({requests}: the claim, the read of the state, "
            "the history item and the commit, whose long condition and update expressions moto parses slowly; "
            f"{inside:.0%} of a cairn transition is inside moto) and {extra_client:+.1f} ms client-side "
            f"({more:.0f} more requests through botocore)"
        )
    named = ", ".join(f"{name} {hotspots[name]:.0%}" for name, _, _ in _CLIENT_SIDE)
    return (
        f"mostly client-side: {extra_client:+.1f} ms of CPU in the Lambda's own process, where the floor "
        f"serialises the state once and cairn serialises it once too but also copies, gzips and hashes it (shares of "
        f"a cairn transition: {named}), and "
        f"{extra_moto:+.1f} ms inside moto ({requests})"
    )


def _client_target(label: str, entry: dict[str, Any]) -> Target:
    """The size's client-side CPU target: against the floor :data:`CLIENT_TARGETS` names, worst run counted."""
    floor, most = CLIENT_TARGETS[label]
    client = _ratios(entry["cairn"]["raw_ms"]["client"], entry[floor]["raw_ms"]["client"])
    met = client.max <= most
    digits = 2 if floor == VARIANTS[4] else 1
    return Target(
        f"Client-side CPU against the {floor}, {label}",
        f"at most {most}x (issue 43)",
        f"{client.cell(2)}x ({entry['cairn']['client_ms']['median']:.{digits}f} ms against "
        f"{entry[floor]['client_ms']['median']:.{digits}f} ms; worst run counted)",
        met,
        "" if met else f"{client.max - most:.2f}x over in the worst run: {_client_reason(entry, floor)}",
    )


def build_result(figures: dict[str, Any], repeats: int, load: dict[str, Any]) -> Result:
    """Tables, targets and notes from the figures."""
    labels = list(figures)
    times = Table(
        "Milliseconds per middle transition on moto",
        ["State", "Variant", "Requests", "Wall ms", "CPU ms", "Client-side CPU ms", "CPU inside moto ms"],
        [],
        note=(
            "Median (min-max) of the runs; a run is the mean of a batch of transitions. Everything runs in one "
            "process (moto in-process), so CPU time is the work done and is not inflated by other load on the "
            "machine; wall time is shown beside it. Client-side is the CPU time less moto's: cairn, botocore's "
            "serialisation, signing and parsing, json, gzip and hashing, what a Lambda function spends on AWS "
            "too. Inside moto is the emulator's own work (on AWS: the network and the service instead)."
        ),
    )
    ratios = Table(
        "cairn as a multiple of the floor (run by run)",
        [
            "State",
            "CPU vs write-only floor (target)",
            "Wall",
            "Client-side CPU",
            "CPU inside moto",
            "CPU vs read + write floor",
            "CPU vs claim + commit floor",
            "Client-side CPU vs own requests floor",
        ],
        [],
        note=(
            "Each ratio is taken run by run (a cairn run against the floor run beside it), then summarised. "
            "The floor: one conditional UpdateItem with the state inline (compact JSON) up to 350,000 bytes, "
            "above that a PutObject of the JSON and the UpdateItem with its key; the read + write floor first "
            "reads the state back (GetItem, and GetObject above the limit) and parses it, as a phase must; the "
            "claim + commit floor claims the job by a conditional UpdateItem that returns the state, then commits "
            "on that claim, the least a fenced transition takes; the own requests floor sends the requests a cairn "
            "transition of the same state made, with the same parameters, in bare boto3 (recorded from a cairn "
            "job, replayed for a copy of it), so its client-side CPU is botocore's alone."
        ),
    )
    for label in labels:
        entry = figures[label]
        for variant in VARIANTS:
            measured = entry[variant]
            times.rows.append(
                [label, variant, f"{measured['requests']:.0f}"] + [_cell(measured[f"{part}_ms"]) for part in _PARTS]
            )
        ratio = entry["ratio"]
        ratios.rows.append(
            [
                label,
                f"{_cell(ratio['cpu'], 2)} (at most {TARGETS[label]}x)",
                _cell(ratio["wall"], 2),
                _cell(ratio["client"], 2),
                _cell(ratio["moto"], 2),
                _cell(entry["ratio_read_write"]["cpu"], 2),
                _cell(entry["ratio_claim_commit"]["cpu"], 2),
                _cell(entry["ratio_own_requests"]["client"], 2),
            ]
        )
    result = Result(
        suite=SUITE,
        title="Overhead over the floor",
        summary=(
            "A middle transition of cairn (DynamoDBStorage on in-process moto, S3 on moto for large states) as "
            "a multiple of raw boto3 writing the same checkpoint on the same backend in the same run, at 1 KB, "
            f"1 MB and 10 MB, split into client-side time and time inside moto; {repeats} interleaved runs."
        ),
        tables=[times, ratios],
        versions={**versions(*VERSIONED), "git": git_commit()},
    )
    for label in labels:
        entry = figures[label]
        ratio = entry["ratio"]["cpu"]["median"]
        met = ratio <= TARGETS[label]
        result.targets.append(
            Target(
                f"Overhead over the floor, {label}",
                f"at most {TARGETS[label]}x the floor",
                f"{ratio:.2f}x CPU ({entry['cairn']['cpu_ms']['median']:.1f} ms against "
                f"{entry['floor']['cpu_ms']['median']:.1f} ms; wall {entry['ratio']['wall']['median']:.2f}x, "
                f"client-side {entry['ratio']['client']['median']:.2f}x)",
                met,
                "" if met else f"{ratio - TARGETS[label]:.2f}x over: {_reason(label, entry)}",
            )
        )
    for label in labels:
        result.targets.append(_client_target(label, figures[label]))
    for label in labels:
        profiled = figures[label]["profile"]
        kinds = ", ".join(
            f"{kind} {share:.0%}" for kind, share in profiled["own_time_by_kind"].items() if share >= 0.01
        )
        hotspots = ", ".join(f"{name} {share:.0%}" for name, share in profiled["hotspots"].items() if share >= 0.01)
        top = "; ".join(f"{function['function']} {function['share']:.0%}" for function in profiled["top_functions"][:5])
        result.notes.append(
            f"Profile of a cairn transition at {label} (cProfile). Own time by kind: {kinds}. Cumulative share of "
            f"the transition: {hotspots}. Top functions by own time: {top}."
        )
        work = figures[label]["own_work"]
        areas = ", ".join(f"{area} {share:.0%}" for area, share in work["by_area"].items() if share >= 0.01)
        costliest = "; ".join(f"{function['function']} {function['share']:.0%}" for function in work["top_functions"])
        result.notes.append(
            f"cairn's own work at {label} (cProfile with the profiler paused in every botocore call, so its requests "
            f"and moto's answers are left out; {work['profiled_ms_per_transition']:.2f} ms per transition profiled): "
            f"{areas}. Costliest functions by own time: {costliest}."
        )
    if "10 MB" in figures:
        result.notes.append(
            "Above 8 KB compressed cairn puts the state in S3, gzipped (level 1), so at 10 MB moto handles "
            "about a fifth of the floor's bytes: its time inside moto is below the floor's."
        )
    if "10 MB" in figures or "1 MB" in figures:
        big = figures.get("10 MB") or figures["1 MB"]
        share = big["profile"]["hotspots"][_HOTSPOTS[1][0]]
        result.notes.append(
            "Where a large state's time goes: admission (cairn/core/admission.py) walks the phase's output a "
            "level at a time (its depth, and whether it is plain JSON data already; a whole level of plain data "
            "in C) and serialises it once "
            "(json.dumps); the store writes that text (gzip above 256 bytes; SHA-256 and S3 above the offload "
            "size, 8 KB compressed), and the next claim reads it back (S3 GET, SHA-256, gunzip, json.loads). "
            "The floor does one json.dumps and, for the read + write floor, one json.loads. "
            f"Admission is {share:.0%} of a cairn transition at {_size_label(big['state_bytes'])}."
        )
    result.notes += [
        "Moto's share is measured by wrapping moto.core.botocore_stubber.BotocoreStubber.__call__, the "
        "before-send handler that answers each request in place of the network (URL matching, request parsing, "
        "the backend, the response body), with perf_counter and process_time; botocore's work before and after "
        "it (serialising, signing, parsing the response) counts as client-side. cProfile slows every Python "
        "call, so read its shares, not its milliseconds.",
        "Not measured here: on AWS each request is a network round trip to DynamoDB or S3 instead of moto's "
        "work, and cairn's requests are sequential, so for a small state the ratio should approach the "
        "ratio of requests (4 to 1 against the floor, 4 to 2 against the read + write floor and the claim + "
        "commit floor).",
        f"Machine load while measuring (1-minute load average, {load['cpus']} CPUs): {load['before']:.1f} before, "
        f"{load['after']:.1f} after.",
    ]
    result.data = {
        "sizes": figures,
        "repeats": repeats,
        "machine": machine(),
        "load_average": load,
        "git": git_commit(),
        "plots": {
            "split": {
                "title": "CPU milliseconds per middle transition (median)",
                "x": "state (bytes)",
                "y": "ms",
                "log": True,
                "series": {
                    f"{variant}: {part}": {
                        "x": [figures[label]["state_bytes"] for label in labels],
                        "y": [figures[label][variant][f"{part}_ms"]["median"] for label in labels],
                    }
                    for variant in ("cairn", "floor")
                    for part in ("cpu", "client")
                },
            }
        },
    }
    return result


def _size_label(size: int) -> str:
    return next((label for label, bytes_ in SIZES.items() if bytes_ == size), f"{size} B")


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def main(argv: list[str] | None = None) -> int:
    """Measure, write ``benchmarks/results/latest/overhead.json``; 0 when everything was measured."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 KB only, three short runs")
    parser.add_argument("--repeats", type=int, default=None, help="runs per size and variant (default 7, quick 3)")
    parser.add_argument(
        "--sizes", nargs="+", choices=list(SIZES), default=None, help="the sizes to measure (default: every one)"
    )
    arguments = parser.parse_args(argv)
    started = time.perf_counter()
    repeats = max(1, arguments.repeats or (3 if arguments.quick else 7))
    labels = list(arguments.sizes or (QUICK_SIZES if arguments.quick else SIZES))
    batch = dict.fromkeys(labels, QUICK_BATCH) if arguments.quick else BATCH
    load = {"before": _load(), "cpus": os.cpu_count()}
    try:
        figures = measure(labels, repeats, batch)
    except Exception as exc:
        progress(f"overhead: could not measure: {type(exc).__name__}: {exc}")
        failed = Result(SUITE, "Overhead over the floor", "A cairn transition against raw boto3.")
        failed.unmeasured.append(f"{type(exc).__name__}: {exc}")
        failed.versions = {**versions(*VERSIONED), "git": git_commit()}
        write_result(failed, started)
        return 1
    load["after"] = _load()
    write_result(build_result(figures, repeats, load), started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
