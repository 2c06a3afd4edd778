"""What every benchmark of ``make bench`` shares: interleaved repeats, summaries, the machine, and results files.

Each suite (``python -m benchmarks.<suite>``) measures, then writes ``benchmarks/results/latest/<suite>.json``
with :func:`write_result`: its tables (rows of figures, with the unit of each column), any plots it drew,
the targets it checks (met or missed, by how much and why) and notes. ``benchmarks/report.py`` turns every
result into ``docs/BENCHMARKS.md``. A suite that cannot measure something says so in its result
(``unmeasured``) and exits non-zero; a missed target is a figure, never a failure.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "latest"
PLOTS = ROOT / "docs" / "benchmarks"


@dataclass(frozen=True)
class Summary:
    """The median, min and max of repeated measurements, and how many there were."""

    median: float
    min: float
    max: float
    runs: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Summary:
        """The summary of ``values`` (at least one)."""
        if not values:
            raise ValueError("no measurements to summarise")
        return cls(statistics.median(values), min(values), max(values), len(values))

    def scaled(self, factor: float) -> Summary:
        """The same summary in another unit (e.g. seconds to milliseconds)."""
        return Summary(self.median * factor, self.min * factor, self.max * factor, self.runs)

    def cell(self, digits: int = 2) -> str:
        """``median (min-max)`` for a table."""
        return f"{self.median:.{digits}f} ({self.min:.{digits}f}-{self.max:.{digits}f})"


def interleaved(variants: Mapping[str, Callable[[], float]], repeats: int) -> dict[str, Summary]:
    """Run each variant ``repeats`` times, round-robin (A B C A B C ...), so drift hits them all alike.

    Each callable returns one measurement (seconds, say); the result is each variant's summary.
    """
    measured: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, measure in variants.items():
            measured[name].append(measure())
    return {name: Summary.of(values) for name, values in measured.items()}


def timed(action: Callable[[], object]) -> float:
    """Seconds ``action`` took (wall clock, ``perf_counter``)."""
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


@dataclass
class Target:
    """A goal the issue sets: what, the goal, the figure measured, and whether it was met (with why, if not)."""

    name: str
    goal: str
    measured: str
    met: bool
    note: str = ""


@dataclass
class Table:
    """A table of the report: a title, column names, rows of cells (already formatted), and a note under it."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""


@dataclass
class Result:
    """What one suite measured: tables, plots (under docs/benchmarks/), targets, notes, what it could not measure."""

    suite: str
    title: str
    summary: str
    tables: list[Table] = field(default_factory=list)
    plots: list[str] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unmeasured: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    """The raw figures (for plots, later comparisons and the README's headline)."""
    seconds: float = 0.0
    measured_at: str = ""
    versions: dict[str, str] = field(default_factory=dict)


def machine() -> dict[str, Any]:
    """The machine the figures come from."""
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def versions(*packages: str) -> dict[str, str]:
    """Installed versions of ``packages`` in this interpreter ("not installed" for a missing one)."""
    found = {}
    for package in packages:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def git_commit() -> str:
    """The commit measured (with ``+`` when the work tree has changes), or "unknown"."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
        return commit + ("+" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_result(result: Result, started: float) -> Path:
    """Write ``result`` to ``benchmarks/results/latest/<suite>.json`` (its time and date filled in); the path."""
    result.seconds = round(time.perf_counter() - started, 1)
    result.measured_at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{result.suite}.json"
    path.write_text(json.dumps(asdict(result), indent=2, default=str) + "\n")
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    print(f"{result.suite}: wrote {shown} in {result.seconds} s", file=sys.stderr)
    return path


def read_results() -> list[Result]:
    """Every result in ``benchmarks/results/latest/``, by suite name."""
    results = []
    for path in sorted(RESULTS.glob("*.json")):
        raw = json.loads(path.read_text())
        raw["tables"] = [Table(**table) for table in raw.get("tables", [])]
        raw["targets"] = [Target(**target) for target in raw.get("targets", [])]
        results.append(Result(**raw))
    return results
