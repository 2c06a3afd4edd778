"""The map suite in its quick form: it measures both stores and finds the records read per item flat."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import common, map_scaling


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "latest"
    monkeypatch.setattr(common, "RESULTS", folder)
    return folder


def test_the_map_suite_reports_flat_records_read_per_item_on_both_stores(results: Path) -> None:
    assert map_scaling.main(["--quick", "--repeats", "1"]) == 0

    result = json.loads((results / "map_scaling.json").read_text())
    assert result["unmeasured"] == []
    [table] = result["tables"]
    assert [row[:3] for row in table["rows"]] == [
        ["memory", "10", "1"],
        ["memory", "100", "1"],
        ["DynamoDB (moto)", "10", "1"],
        ["DynamoDB (moto)", "100", "1"],
    ]
    assert all(float(row[3]) <= 4.1 for row in table["rows"])  # item records read per item
    assert [target["met"] for target in result["targets"]] == [True, True]
    for run in result["data"]["runs"]:
        assert run["seconds"] > 0
        if run["store"] != "memory":
            assert run["requests"]["TransactWriteItems"] == run["size"]  # one per item's finish
            assert 0 < run["moto_seconds"] < run["seconds"]
