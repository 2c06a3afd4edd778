"""Suite "peers": what one step costs on cairn and on its peers, for jobs of 10, 100 and 1,000 no-op steps.

Six systems run the same job, one workflow of N steps that do nothing, one at a time:

- cairn on ``MemoryStorage`` and on its durable local store ``FileStorage`` (a JSON file per job, fsynced):
  N phases, each returning ``Next`` to the following one, the last ``Done``;
- DBOS on its SQLite system database, with SQLite's default ``synchronous=FULL`` (an fsync at every commit)
  and with ``synchronous=OFF``: a workflow calling a no-op ``@DBOS.step()`` N times;
- the AWS durable execution SDK's local test runner (in memory): a durable function of N ``context.step``;
- Temporal's dev server (``temporal server start-dev``, SQLite file): a workflow of N regular activities.

Each system runs in a process of its own (the peers in their own virtualenvs under ``.bench/venvs``, made by
``benchmarks/peer_runners/setup.py``; cairn in this interpreter), started once and warmed up with a short workflow
before anything is timed; a measurement is one workflow, from its start to its result
(``benchmarks/peer_runners/run_*.py``). The systems take turns (A B C D A B C D ...) at each length.

Run: ``python -m benchmarks.peers`` (``--quick``: cairn alone, 10 steps, once). Writes
``benchmarks/results/latest/peers.json``; exits non-zero when a system could not be measured (after writing).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from benchmarks import common
from benchmarks.common import Result, Summary, Table, Target

PEERS_DIR = common.ROOT / "benchmarks" / "peer_runners"
LENGTHS = (10, 100, 1000)
REPEATS = {10: 7, 100: 5, 1000: 5}
"""Runs per system at each length (at most: see BUDGET_SECONDS)."""
BUDGET_SECONDS = 45.0
"""A system gets another run at a length only while its runs there add up to no more than this..."""
MIN_RUNS = {"cairn-file": 2, "dbos-fsync": 2}
"""... except the two the target compares, which get at least these many."""
READY_SECONDS = 120.0
"""How long a runner may take to start and warm up."""
RUN_SECONDS = 240.0
"""How long one measured workflow may take before its system is given up on."""
WARMUP_STEPS = 10
"""The length of the workflow each runner warms up with (``benchmarks/peer_runners/_harness.py``)."""
GROWTH_LIMIT = 1.25
"""The most cairn's file store's time per step at 1,000 steps may be, as a multiple of its time at 10."""


@dataclass(frozen=True)
class System:
    """One system measured: its key, how the report names it, its runner and the virtualenv that runs it."""

    key: str
    label: str
    script: str
    arguments: tuple[str, ...]
    venv: str | None
    """The peer's virtualenv under .bench/venvs, or None for this interpreter (cairn)."""
    step: str
    store: str


SYSTEMS = (
    System(
        "cairn-memory", "cairn, MemoryStorage", "run_cairn.py", ("--store", "memory"), None,
        "a phase transition (Next)", "in memory",
    ),
    System(
        "cairn-file", "cairn, FileStorage", "run_cairn.py", ("--store", "file"), None,
        "a phase transition (Next)", "a JSON file per job, replaced and flushed at each write; history appended",
    ),
    System(
        "dbos-fsync", "DBOS, SQLite synchronous=FULL", "run_dbos.py", ("--sync", "full"), "dbos",
        "a @DBOS.step() call", "SQLite file, rollback journal, synchronous=FULL (fsync per commit; the default)",
    ),
    System(
        "dbos-nofsync", "DBOS, SQLite synchronous=OFF", "run_dbos.py", ("--sync", "off"), "dbos",
        "a @DBOS.step() call", "SQLite file, synchronous=OFF (no fsync)",
    ),
    System(
        "aws-local", "AWS durable execution SDK, local runner", "run_aws.py", (), "aws",
        "a context.step() checkpoint", "the test runner's in-memory execution store",
    ),
    System(
        "temporal", "Temporal dev server, activities", "run_temporal.py", (), "temporal",
        "a regular activity (not a local activity)", "temporal server start-dev with --db-filename (SQLite file)",
    ),
)  # fmt: skip


class RunnerError(Exception):
    """A runner that could not start, answer or finish in time."""


@dataclass
class Runner:
    """A system's runner process (``--serve``): asked for ``N 1`` lines, it answers with JSON lines."""

    system: System
    python: str
    process: subprocess.Popen[str] | None = None
    lines: queue.Queue[str | None] = field(default_factory=queue.Queue)
    log: IO[str] | None = None
    ready: dict[str, Any] = field(default_factory=dict)

    def start(self, logs: Path) -> None:
        """Start the process (its standard error to a log file); :meth:`wait_ready` waits for it."""
        self.log = (logs / f"{self.system.key}.log").open("w+")
        command = [self.python, str(PEERS_DIR / self.system.script), *self.system.arguments, "--serve"]
        self.process = subprocess.Popen(
            command, cwd=common.ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process is not None
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _answer(self, timeout: float, waiting_for: str) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise RunnerError(f"no answer within {timeout:.0f} s ({waiting_for})") from None
        if line is None:
            raise RunnerError(f"the runner exited ({waiting_for}): {self.stderr_tail()}")
        try:
            answer: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError:
            raise RunnerError(f"the runner printed {line.strip()[:200]!r} ({waiting_for})") from None
        return answer

    def wait_ready(self) -> None:
        """Wait for the runner's ``ready`` line (its session up and warm)."""
        self.ready = self._answer(READY_SECONDS, "starting")

    def measure(self, steps: int) -> float:
        """Seconds one workflow of ``steps`` steps took."""
        assert self.process is not None
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(f"{steps} 1\n")
            self.process.stdin.flush()
        except OSError as error:
            raise RunnerError(f"the runner is gone: {error}; {self.stderr_tail()}") from error
        answer = self._answer(RUN_SECONDS, f"{steps} steps")
        return float(answer["seconds"][0])

    def stderr_tail(self) -> str:
        """The end of the runner's standard error, on one line."""
        if self.log is None:
            return ""
        self.log.flush()
        self.log.seek(0)
        lines = [line.strip() for line in self.log.read().splitlines() if line.strip()]
        return " / ".join(lines[-3:])[-600:] or "(nothing on standard error)"

    def stop(self) -> None:
        """Close its input (it exits), killing it if it does not."""
        if self.process is None:
            return
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        if self.log is not None:
            self.log.close()


def setup_peers(peers: list[str]) -> tuple[dict[str, dict[str, Any]], float]:
    """Make the peers' virtualenvs (``benchmarks/peer_runners/setup.py``, progress on stderr); and its time."""
    started = time.perf_counter()
    print(f"peers: setting up the virtualenvs of {', '.join(peers)} under .bench/venvs", file=sys.stderr)
    completed = subprocess.run(
        [sys.executable, str(PEERS_DIR / "setup.py"), "--only", ",".join(peers)],
        cwd=common.ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    seconds = time.perf_counter() - started
    try:
        outcome: dict[str, dict[str, Any]] = json.loads(completed.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        reason = f"benchmarks/peer_runners/setup.py failed (exit {completed.returncode}) without a report"
        outcome = {peer: {"ok": False, "reason": reason} for peer in peers}
    return outcome, seconds


def measure_all(
    runners: list[Runner], lengths: tuple[int, ...], repeats: dict[int, int], unmeasured: dict[str, str]
) -> dict[str, dict[int, list[float]]]:
    """Each runner's seconds per length, the systems taking turns; a runner that fails is dropped (and said why)."""
    seconds: dict[str, dict[int, list[float]]] = {runner.system.key: {} for runner in runners}
    for steps in lengths:
        print(f"peers: {steps} steps, up to {repeats[steps]} runs each, interleaved", file=sys.stderr)
        for _ in range(repeats[steps]):
            for runner in runners:
                key = runner.system.key
                runs = seconds[key].setdefault(steps, [])
                over_budget = bool(runs) and sum(runs) + runs[-1] > BUDGET_SECONDS
                if key in unmeasured or (over_budget and len(runs) >= MIN_RUNS.get(key, 1)):
                    continue
                try:
                    runs.append(runner.measure(steps))
                except RunnerError as error:
                    unmeasured[key] = f"failed at {steps} steps: {error}"
                    runner.stop()
        for runner in runners:
            runs = seconds[runner.system.key].get(steps, [])
            if runs:
                per_step = Summary.of(runs).scaled(1000 / steps)
                print(f"peers:   {runner.system.label}: {per_step.cell(3)} ms per step", file=sys.stderr)
    return seconds


def _ms(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _cell(summary: Summary) -> str:
    return f"{_ms(summary.median)} ({_ms(summary.min)}-{_ms(summary.max)})"


def _targets(
    per_step: dict[str, dict[int, Summary]],
    lengths: tuple[int, ...],
    ready: dict[str, dict[str, Any]],
    *,
    compare: bool,
) -> tuple[list[Target], list[str]]:
    """The issue's target, in two parts: ahead of DBOS with fsync at every length, and a flat cost per step.

    The first only when DBOS with fsync was to be measured (``compare``; not with ``--quick``), and then missed
    if it could not be.
    """
    targets: list[Target] = []
    notes: list[str] = []
    fsyncs = ready.get("cairn-file", {}).get("info", {}).get("fsync_calls_per_step")
    why = (
        f"; cairn's file store flushes to disk {fsyncs} times per step (fdatasync of the claim's new file, of the "
        "history append and of the commit's new file, then an fsync of the folder for the commit's rename), DBOS "
        "commits one SQLite transaction per step"
        if fsyncs is not None
        else ""
    )
    cairn, dbos = per_step.get("cairn-file", {}), per_step.get("dbos-fsync", {})
    compared = [steps for steps in lengths if steps in cairn and steps in dbos]
    if compare:
        parts, missed = [], []
        for steps in compared:
            ours, theirs = cairn[steps], dbos[steps]
            ratio = theirs.median / ours.median
            if is_level(ours, theirs):
                parts.append(
                    f"{steps:,} steps: level, {_ms(ours.median)} ({_ms(ours.min)}-{_ms(ours.max)}) vs "
                    f"{_ms(theirs.median)} ({_ms(theirs.min)}-{_ms(theirs.max)}) ms over {ours.runs} runs each"
                )
                missed.append(f"at {steps:,} steps the two are level (their run-to-run spreads overlap)")
                continue
            parts.append(f"{steps:,} steps: {_ms(ours.median)} vs {_ms(theirs.median)} ms ({ratio:.2f}x)")
            if ratio <= 1:
                missed.append(f"at {steps:,} steps cairn is {1 / ratio:.2f}x DBOS's time per step")
        absent = [f"{steps:,}" for steps in lengths if steps not in compared]
        targets.append(
            Target(
                "ahead of DBOS with fsync",
                "cairn's durable local store (FileStorage) takes less time per step than DBOS on SQLite with fsync "
                "(synchronous=FULL) at every length",
                "per step, median, cairn FileStorage vs DBOS (DBOS's time / cairn's): " + "; ".join(parts)
                if parts
                else "not measured",
                not missed and not absent,
                "; ".join(missed + ([f"not measured at {', '.join(absent)} steps"] if absent else []))
                + (why if missed else ""),
            )
        )
    first, last = lengths[0], lengths[-1]
    if first != last and first in cairn and last in cairn:
        growth = cairn[last].median / cairn[first].median
        flat = growth <= GROWTH_LIMIT
        targets.append(
            Target(
                "cost per step flat with length",
                f"cairn FileStorage's time per step does not grow with the job's length (at {last:,} steps at most "
                f"{GROWTH_LIMIT:.2f}x its time at {first:,})",
                ", ".join(f"{_ms(cairn[steps].median)} ms at {steps:,}" for steps in lengths if steps in cairn)
                + f" steps: {growth:.2f}x from {first:,} to {last:,}",
                flat,
                "" if flat else f"the time per step grows {growth:.2f}x from {first:,} to {last:,} steps",
            )
        )
    return targets, notes


def is_level(ours: Summary, theirs: Summary) -> bool:
    """Whether two systems are within each other's run-to-run spread (their min-max ranges overlap)."""
    return ours.min <= theirs.max and theirs.min <= ours.max


def build_result(
    systems: list[System],
    seconds: dict[str, dict[int, list[float]]],
    ready: dict[str, dict[str, Any]],
    lengths: tuple[int, ...],
    unmeasured: dict[str, str],
    extra: dict[str, Any],
) -> Result:
    """Tables, targets, versions and raw figures from the measurements."""
    labels = {system.key: system.label for system in systems}
    per_step: dict[str, dict[int, Summary]] = {}
    rows, matrix = [], []
    for system in systems:
        runs_by_length = seconds.get(system.key, {})
        per_step[system.key] = {}
        for steps in lengths:
            runs = runs_by_length.get(steps)
            if not runs:
                continue
            total = Summary.of(runs).scaled(1000)
            step = total.scaled(1 / steps)
            per_step[system.key][steps] = step
            rows.append([system.label, f"{steps:,}", str(total.runs), _cell(total), _cell(step)])
        found = per_step[system.key]
        if found:
            growth = (
                f"{found[lengths[-1]].median / found[lengths[0]].median:.2f}x"
                if lengths[0] in found and lengths[-1] in found and len(lengths) > 1
                else "-"
            )
            matrix.append(
                [system.label, *(_ms(found[steps].median) if steps in found else "-" for steps in lengths), growth]
            )
    versions: dict[str, str] = {}
    described = []
    for system in systems:
        info = ready.get(system.key, {})
        versions.update(info.get("versions", {}))
        details = info.get("info", {})
        version = ", ".join(f"{name} {value}" for name, value in info.get("versions", {}).items())
        if system.key.startswith("cairn") and "cairn" in details:
            versions["cairn"] = str(details["cairn"])
            version = f"cairn {details['cairn']}"
        if "server" in details:
            versions["temporal CLI"] = str(details["server"]).removeprefix("temporal version ")
        measured = f" (read back: {json.dumps(details['sqlite'])})" if "sqlite" in details else ""
        if details.get("fsync_calls_per_step"):
            measured = (
                f" ({details['fsync_calls_per_step']} fsync or fdatasync and {details['replace_calls_per_step']} "
                f"os.replace calls per step in a {WARMUP_STEPS}-step job)"
            )
        described.append([system.label, version or "-", system.step, system.store + measured])
    targets, notes = _targets(per_step, lengths, ready, compare=any(s.key == "dbos-fsync" for s in systems))
    plots = {
        "per-step": {
            "title": "Time per no-op step against the job's length",
            "x": "steps in the job",
            "y": "ms per step (median)",
            "log": True,
            "series": {
                labels[key]: {"x": list(found), "y": [summary.median for summary in found.values()]}
                for key, found in per_step.items()
                if found
            },
        }
    }
    data = {
        "unit": "seconds per workflow (one run each), from its start to its result",
        "lengths": list(lengths),
        "systems": {
            system.key: {
                "label": system.label,
                "step": system.step,
                "store": system.store,
                "info": ready.get(system.key, {}).get("info", {}),
                "versions": ready.get(system.key, {}).get("versions", {}),
                "seconds": {str(steps): runs for steps, runs in seconds.get(system.key, {}).items()},
                "ms_per_step": {
                    str(steps): [run * 1000 / steps for run in runs]
                    for steps, runs in seconds.get(system.key, {}).items()
                },
            }
            for system in systems
        },
        "plots": plots,
        "machine": common.machine(),
        **extra,
    }
    notes += [
        "A step does nothing; what is timed is each system's own work per step: cairn commits a phase transition "
        "(claim, run, commit), DBOS checkpoints the step's output, the durable execution SDK's runner a step "
        "checkpoint, Temporal the workflow task, activity task and history events of an activity.",
        "Each system runs in its own process (the peers in their own virtualenvs), started and warmed up with a "
        "10-step workflow before anything is timed; server and process start-up are not in the figures. The "
        "systems take turns at each length (A B C D A B C D ...); a system gets another run only while its runs "
        f"at that length add up to {BUDGET_SECONDS:.0f} s or less (cairn's file store and DBOS with fsync, which the "
        "target compares, at least two), so the slowest have fewer runs at 1,000 steps.",
        "Temporal: regular activities are the per-step equivalent of a checkpointed phase (each goes through the "
        "server's task queues and history); local activities would be cheaper and are not measured.",
        "The durable execution SDK's local runner keeps its executions in memory: compare it with cairn on "
        "MemoryStorage and DBOS without fsync, not with the durable stores.",
        "Load average (1 min) at the start and the end: "
        f"{extra.get('load_average', {}).get('start', '?')} / {extra.get('load_average', {}).get('end', '?')}; "
        "fsync times on this machine's disk vary from run to run, hence the min-max.",
    ]
    return Result(
        suite="peers",
        title="Per-step overhead against peers",
        summary="The same job of 10, 100 and 1,000 no-op steps on cairn (in memory and on its durable file store), "
        "DBOS on SQLite (fsync on and off), the AWS durable execution SDK's local test runner and Temporal's dev "
        "server: the time per step, median of interleaved runs with (min-max).",
        tables=[
            Table(
                "Time per job and per step",
                ["System", "Steps", "Runs", "Job (ms)", "Per step (ms)"],
                rows,
                "Median (min-max) of the runs; a run is one workflow from its start to its result.",
            ),
            Table(
                "Time per step by the job's length (ms, median)",
                ["System", *(f"{steps:,} steps" for steps in lengths), f"{lengths[-1]:,} vs {lengths[0]:,}"],
                matrix,
                "The last column: the time per step at the longest job over that at the shortest (fixed costs, "
                "such as starting a job, weigh more on a short one).",
            ),
            Table("Systems", ["System", "Versions", "A step is", "Where it is kept"], described),
        ],
        targets=targets,
        notes=notes,
        unmeasured=[f"{labels[key]}: {reason}" for key, reason in unmeasured.items()],
        data=data,
        versions=versions,
    )


def main(argv: list[str] | None = None) -> int:
    """Set up, measure, write the result; 1 when a system could not be measured."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="cairn alone, 10 steps, one run (for a test)")
    arguments = parser.parse_args(argv)
    started = time.perf_counter()
    systems = [system for system in SYSTEMS if system.venv is None] if arguments.quick else list(SYSTEMS)
    lengths = (10,) if arguments.quick else LENGTHS
    repeats = {10: 1} if arguments.quick else REPEATS
    extra: dict[str, Any] = {"load_average": {"start": round(os.getloadavg()[0], 2)}, "quick": arguments.quick}
    unmeasured: dict[str, str] = {}
    pythons: dict[str, str] = {}
    peers = sorted({system.venv for system in systems if system.venv is not None})
    if peers:
        outcome, setup_seconds = setup_peers(peers)
        extra["setup"] = {"seconds": round(setup_seconds, 1), "virtualenvs": outcome}
        for system in systems:
            if system.venv is None:
                continue
            found = outcome.get(system.venv, {"ok": False, "reason": "benchmarks/peer_runners/setup.py said nothing"})
            if found["ok"]:
                pythons[system.key] = found["python"]
            else:
                unmeasured[system.key] = f"not installed: {found['reason']}"
    runners = [
        Runner(system, pythons.get(system.key, sys.executable)) for system in systems if system.key not in unmeasured
    ]
    ready: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="peers-logs-") as logs:
        try:
            for runner in runners:
                runner.start(Path(logs))
            for runner in runners:
                try:
                    runner.wait_ready()
                    ready[runner.system.key] = runner.ready
                except RunnerError as error:
                    unmeasured[runner.system.key] = f"could not start: {error}"
                    runner.stop()
            print(f"peers: {len(ready)} systems up: {', '.join(ready)}", file=sys.stderr)
            live = [runner for runner in runners if runner.system.key in ready]
            seconds = measure_all(live, lengths, repeats, unmeasured)
        finally:
            for runner in runners:
                runner.stop()
    extra["load_average"]["end"] = round(os.getloadavg()[0], 2)
    result = build_result(systems, seconds, ready, lengths, unmeasured, extra)
    if arguments.quick:
        result.notes.insert(0, "Quick run (--quick): cairn alone, 10 steps, one run; the peers were not run.")
    common.write_result(result, started)
    for target in result.targets:
        print(f"peers: target {target.name}: {'met' if target.met else 'missed'}: {target.measured}", file=sys.stderr)
    for item in result.unmeasured:
        print(f"peers: not measured: {item}", file=sys.stderr)
    return 1 if result.unmeasured else 0


if __name__ == "__main__":
    raise SystemExit(main())
