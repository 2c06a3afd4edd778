"""The fair share suite in its quick form: both queues run side by side, and the figures are written and printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import common, fair_share


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "latest"
    monkeypatch.setattr(common, "RESULTS", folder)
    return folder


def test_the_share_of_one_and_the_plain_queue_are_measured_side_by_side(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert fair_share.main(["--quick"]) == 0

    result = json.loads((results / "fair_share.json").read_text())
    assert result["unmeasured"] == []
    (table,) = result["tables"]
    assert [row[0] for row in table["rows"]] == list(fair_share.VARIANTS)
    plain, shared = table["rows"]
    assert plain[2] == "1.00x"
    assert shared[2].endswith("x")
    runs = result["data"]["runs"]
    assert [len(runs[name]) for name in fair_share.VARIANTS] == [2, 2]
    assert all(run["seconds"] > 0 for name in fair_share.VARIANTS for run in runs[name])
    assert all(run["looks"] == 0 for run in runs["one at a time"])  # no share: nothing waits
    (target,) = result["targets"]
    assert target["goal"] == f"at most {fair_share.TARGET:g}x"
    printed = capsys.readouterr().out
    assert table["title"] in printed
    assert "share of 1 |" in printed
