"""The cairn dev scale suite in its quick form: two seeded stacks side by side, a map job run to its end on each (the
sweep once a day), every request timed on each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import common, dev_scale


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "latest"
    monkeypatch.setattr(common, "RESULTS", folder)
    return folder


def test_kinds_of_jobs_carry_real_histories_over_both_pipelines() -> None:
    made = dev_scale.templates()

    assert {len(history) for _, history in made} == set(range(2, 17))
    assert {job.pipeline for job, _ in made} == set(dev_scale.PIPELINES)
    assert {job.status.value for job, _ in made} == {"complete", "error"}


def test_a_small_and_a_large_stack_are_measured_side_by_side(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert dev_scale.main(["--quick"]) == 0

    result = json.loads((results / "dev_scale.json").read_text())
    table, maps = result["tables"]
    assert table["columns"] == ["Request", "30 jobs", "100 jobs"]
    assert [row[0] for row in table["rows"]] == [*dev_scale.PAGES, "map job view", "map lanes", "job view"]
    runs = result["data"]["runs"]
    assert all(len(seconds) == 2 and min(seconds) > 0 for stack in runs.values() for seconds in stack.values())
    assert maps["columns"] == ["Job", "30 jobs", "100 jobs"]
    assert result["data"]["mapItems"] == 12
    assert all(seconds > 0 for seconds in result["data"]["maps"].values())  # each map job completed
    answers, moved_on = result["targets"]
    assert answers["goal"] == "under 2 s"
    assert moved_on["met"] is True
    printed = capsys.readouterr().out
    assert table["title"] in printed
    assert maps["title"] in printed
    assert "first page |" in printed
