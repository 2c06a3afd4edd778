"""Write ``docs/BENCHMARKS.md`` from the suites' results (``benchmarks/results/latest/*.json``), with plots.

Run by ``make bench`` after the suites, with a Python that has matplotlib (the plots' own virtualenv);
without matplotlib the report is written without plots, and says so. Every target is listed at the top,
met or missed, with by how much and why: a miss is reported, never hidden.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import PLOTS, ROOT, Result, Table, machine, read_results

REPORT = ROOT / "docs" / "BENCHMARKS.md"
ORDER = [
    "cost",
    "read_units",
    "offload",
    "overhead",
    "peers",
    "state_size",
    "concurrency",
    "cold_start",
    "map_scaling",
    "fair_share",
    "dev_scale",
]
"""The suites in the order of the issue's list."""


def _table(table: Table) -> list[str]:
    lines = [f"**{table.title}**", "", "| " + " | ".join(table.columns) + " |"]
    lines.append("| " + " | ".join("---" for _ in table.columns) + " |")
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in table.rows]
    if table.note:
        lines += ["", table.note]
    return [*lines, ""]


def _targets(results: list[Result]) -> list[str]:
    lines = ["| Suite | Target | Goal | Measured | Met |", "| --- | --- | --- | --- | --- |"]
    for result in results:
        for target in result.targets:
            met = "yes" if target.met else f"**no**: {target.note}" if target.note else "**no**"
            lines.append(f"| {result.title} | {target.name} | {target.goal} | {target.measured} | {met} |")
    return [*lines, ""]


def _plot_series(
    path: Path, title: str, xlabel: str, ylabel: str, series: dict[str, tuple[list[float], list[float]]], *, log: bool
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4), dpi=100)
    for name, (xs, ys) in series.items():
        axes.plot(xs, ys, marker="o", label=name)
    if log:
        axes.set_xscale("log")
        axes.set_yscale("log")
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small", framealpha=0.8, loc="best")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)


def _series(data: Any, key: str) -> dict[str, tuple[list[float], list[float]]]:
    """``data[key]`` as plot series: ``{name: {"x": [...], "y": [...]}}`` (what the suites write for a curve)."""
    found = data.get(key) if isinstance(data, dict) else None
    if not isinstance(found, dict):
        return {}
    return {
        name: (list(points["x"]), list(points["y"]))
        for name, points in found.items()
        if isinstance(points, dict) and "x" in points and "y" in points
    }


#: Curves the suites may provide in ``data["plots"]``: ``{plot name: {"title", "x", "y", "log", "series"}}``.
def draw_plots(result: Result) -> list[str]:
    """Draw the curves a result asks for (``data["plots"]``); the paths drawn, relative to docs/."""
    plots = result.data.get("plots") if isinstance(result.data, dict) else None
    drawn: list[str] = []
    if not isinstance(plots, dict):
        return drawn
    for name, spec in plots.items():
        series = _series(spec, "series")
        if not series:
            continue
        path = PLOTS / f"{result.suite}-{name}.png"
        _plot_series(
            path, spec.get("title", name), spec.get("x", ""), spec.get("y", ""), series, log=bool(spec.get("log"))
        )
        drawn.append(str(path.relative_to(ROOT / "docs")))
    return drawn


def render(results: list[Result], *, plots: bool, total_seconds: float | None) -> str:
    """The report's Markdown."""
    by_suite = {result.suite: result for result in results}
    ordered = [by_suite[name] for name in ORDER if name in by_suite] + [
        result for result in results if result.suite not in ORDER
    ]
    host = machine()
    lines = [
        "# Benchmarks",
        "",
        f"Measured {_when(ordered)} by `make bench` on {host['platform']}, {host['cpus']} CPUs, "
        f"Python {host['python']}{_how_long(ordered, total_seconds)}. Figures are medians of interleaved runs, "
        "with (min-max); every run is kept, none picked.",
        "",
        "## Targets",
        "",
        *_targets(ordered),
    ]
    unmeasured = [f"- {result.title}: {item}" for result in ordered for item in result.unmeasured]
    if unmeasured:
        lines += ["**Not measured:**", "", *unmeasured, ""]
    if not plots:
        lines += ["_Plots were not drawn: matplotlib was not available to the report._", ""]
    for result in ordered:
        lines += [f"## {result.title}", "", result.summary, ""]
        for table in result.tables:
            lines += _table(table)
        drawn = draw_plots(result) if plots else []
        lines += [f"![{Path(path).stem}]({path})" for path in [*drawn, *result.plots]]
        if drawn or result.plots:
            lines.append("")
        lines += [f"- {note}" for note in result.notes]
        if result.notes:
            lines.append("")
        versions = ", ".join(f"{name} {version}" for name, version in sorted(result.versions.items()))
        lines += [
            f"_Measured {result.measured_at} in {result.seconds:.0f} s" + (f"; {versions}" if versions else "") + "._",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def _when(results: list[Result]) -> str:
    """When the results were measured: one date, or the span of their dates."""
    dates = sorted({result.measured_at for result in results if result.measured_at})
    if not dates:
        return "never"
    return dates[0] if len(dates) == 1 else f"between {dates[0]} and {dates[-1]}"


def _how_long(results: list[Result], total_seconds: float | None) -> str:
    """The whole run's time: the suites' own times added up, and the last ``make bench`` when it ran fewer."""
    suites = sum(result.seconds for result in results)
    text = f", {len(results)} suites in {suites / 60:.1f} minutes"
    if total_seconds is not None and suites - total_seconds > 60:
        text += f" (the last `make bench` ran {total_seconds / 60:.1f} minutes; the other suites' results are older)"
    return text


def _matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Write the report; exit 1 when there is no result to report."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=REPORT)
    parser.add_argument("--total-seconds", type=float, default=None, help="how long make bench took")
    arguments = parser.parse_args(argv)
    results = read_results()
    if not results:
        print("no results in benchmarks/results/latest: run the suites first", file=sys.stderr)
        return 1
    text = render(results, plots=_matplotlib(), total_seconds=arguments.total_seconds)
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(text)
    print(f"wrote {arguments.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
