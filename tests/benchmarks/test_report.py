"""``docs/BENCHMARKS.md`` is written from the suites' results: every target listed, a miss with by how much and why."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from benchmarks import common, report


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "latest"
    monkeypatch.setattr(common, "RESULTS", folder)
    return folder


def _write(suite: str, *, met: bool, unmeasured: list[str] | None = None, seconds: float = 300) -> None:
    result = common.Result(
        suite=suite,
        title=suite.title(),
        summary=f"What {suite} measures.",
        tables=[common.Table("Per size", ["Size", "Seconds"], [["1 KB", "0.10 (0.09-0.12)"]], note="Interleaved.")],
        targets=[common.Target("Speed", "at most 1.2x", "1.5x", met, "" if met else "0.3x over: serialisation")],
        notes=["A note."],
        unmeasured=unmeasured or [],
        versions={"boto3": "1.0"},
    )
    common.write_result(result, time.perf_counter() - seconds)


def test_the_report_lists_every_target_and_says_why_one_was_missed(results: Path, tmp_path: Path) -> None:
    _write("overhead", met=False)
    _write("cost", met=True, unmeasured=["10 MB: moto refused the item"])
    out = tmp_path / "BENCHMARKS.md"

    assert report.main(["--out", str(out), "--total-seconds", "600"]) == 0

    text = out.read_text()
    assert text.index("## Cost") < text.index("## Overhead")  # the order
    assert "| Cost | Speed | at most 1.2x | 1.5x | yes |" in text
    assert "| Overhead | Speed | at most 1.2x | 1.5x | **no**: 0.3x over: serialisation |" in text
    assert "- Cost: 10 MB: moto refused the item" in text
    assert "| 1 KB | 0.10 (0.09-0.12) |" in text
    assert "2 suites in 10.0 minutes" in text
    assert "the last `make bench`" not in text


def test_the_header_gives_the_whole_runs_time_when_the_last_run_measured_only_some_suites(
    results: Path, tmp_path: Path
) -> None:
    _write("overhead", met=True, seconds=1500)
    _write("cost", met=True, seconds=90)
    out = tmp_path / "BENCHMARKS.md"

    assert report.main(["--out", str(out), "--total-seconds", "96"]) == 0

    header = out.read_text().splitlines()[2]
    assert "2 suites in 26.5 minutes" in header
    assert "the last `make bench` ran 1.6 minutes; the other suites' results are older" in header


def test_without_results_there_is_nothing_to_report(results: Path, tmp_path: Path) -> None:
    assert report.main(["--out", str(tmp_path / "BENCHMARKS.md")]) == 1


def test_a_summary_gives_median_min_and_max() -> None:
    summary = common.Summary.of([3.0, 1.0, 2.0, 10.0])
    assert (summary.median, summary.min, summary.max, summary.runs) == (2.5, 1.0, 10.0, 4)
    assert summary.scaled(1000).cell(0) == "2500 (1000-10000)"


def test_variants_run_interleaved() -> None:
    order: list[str] = []

    def variant(name: str) -> float:
        order.append(name)
        return 1.0

    common.interleaved({"a": lambda: variant("a"), "b": lambda: variant("b")}, repeats=3)
    assert order == ["a", "b", "a", "b", "a", "b"]
