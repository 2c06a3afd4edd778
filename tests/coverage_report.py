"""``make coverage``'s report: the library's line and branch coverage by package, and the floor it must not drop below.

Reads the combined ``.coverage`` data file; prints one row per package of ``cairn`` (``core``, ``aws``, ``dev``...)
and the total, then exits 1 when the total's line coverage is below ``--floor``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from coverage import Coverage

LIBRARY = Path(__file__).resolve().parents[1] / "layers" / "cairn" / "cairn"


def package_of(filename: str) -> str:
    """``core`` for ``.../cairn/core/engine/x.py``, ``(top)`` for a module beside ``__init__.py``."""
    parts = Path(filename).resolve().relative_to(LIBRARY).parts
    return parts[0] if len(parts) > 1 else "(top)"


def main(argv: list[str] | None = None) -> int:
    """Print the table; 1 when the total is below the floor."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--floor", type=float, default=0.0, help="the lowest total line coverage allowed, in percent")
    arguments = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "coverage.json"
        coverage = Coverage()
        coverage.load()
        coverage.json_report(outfile=str(report), include=[f"{LIBRARY}/*"])
        files = json.loads(report.read_text())["files"]
    # per package: statements, missed, branches, branches not taken
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for filename, figures in files.items():
        summary = figures["summary"]
        row = totals[package_of(filename)]
        row[0] += summary["num_statements"]
        row[1] += summary["missing_lines"]
        row[2] += summary["num_branches"]
        row[3] += summary["num_branches"] - summary["covered_branches"]
    if not totals:
        print("no coverage data: run `make coverage`", file=sys.stderr)
        return 1
    everything = [sum(row[index] for row in totals.values()) for index in range(4)]
    print(f"{'package':<12} {'lines':>8} {'covered':>8} {'branches':>9} {'covered':>8}")
    for name, (statements, missed, branches, partial) in [*sorted(totals.items()), ("total", everything)]:
        lines = 100.0 * (statements - missed) / statements if statements else 100.0
        taken = 100.0 * (branches - partial) / branches if branches else 100.0
        print(f"{name:<12} {statements:>8} {lines:>7.1f}% {branches:>9} {taken:>7.1f}%")
    total = 100.0 * (everything[0] - everything[1]) / everything[0]
    if total < arguments.floor:
        print(
            f"line coverage {total:.1f}% is below the floor of {arguments.floor:.1f}% (COVERAGE_FLOOR)", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
