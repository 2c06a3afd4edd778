"""The cost, overhead and state size suites measure in quick mode and write what the report needs.

These are real checks of cairn's promises too: a transition of a small state makes no read and at most
three write units, costs less than a Step Functions transition, and its time grows with the state.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import common, cost, overhead, state_size


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "latest"
    monkeypatch.setattr(common, "RESULTS", folder)
    return folder


def _read(folder: Path, suite: str) -> dict[str, Any]:
    written: dict[str, Any] = json.loads((folder / f"{suite}.json").read_text())
    assert written["unmeasured"] == []
    assert written["measured_at"]
    assert written["seconds"] > 0
    assert {"boto3", "botocore", "moto", "pydantic", "git"} <= set(written["versions"])
    assert written["data"]["machine"]["cpus"]
    return written


def _table(written: dict[str, Any], title_start: str) -> dict[str, Any]:
    found = [table for table in written["tables"] if table["title"].startswith(title_start)]
    assert len(found) == 1, [table["title"] for table in written["tables"]]
    table: dict[str, Any] = found[0]
    assert table["rows"]
    assert all(len(row) == len(table["columns"]) for row in table["rows"])
    return table


def test_the_cost_suite_writes_the_state_once_and_reads_it_at_most_once_per_small_transition(results: Path) -> None:
    assert cost.main(["--quick"]) == 0

    written = _read(results, "cost")
    _table(written, "Requests and write units per step")
    prices = _table(written, "Dollars per million middle transitions")
    assert [row[0] for row in prices["rows"]] == list(cost.QUICK_SIZES)
    sizes = written["data"]["sizes"]
    assert list(sizes) == list(cost.QUICK_SIZES)
    for label in sizes:
        middle = sizes[label]["middle"]
        # the state, after the claim; one of a few hundred bytes travels in the job item the claim returns
        reads = 0.0 if label == "200 B" else 1.0
        assert middle["read_requests_range"] == [reads, reads], label
        assert middle["read_units_range"] == [reads, reads], label
        assert middle["write_units_range"][1] <= cost.MAX_WRITE_UNITS[label]
        assert middle["lambda_invokes"] == 1  # the direct driver's invoke of the next phase
        assert middle["s3_calls"] == 0  # a small state stays in the item
        assert middle["dollars_per_million"] < sizes[label]["peers"]["stepfunctions_standard"]
        assert sizes[label]["finish"]["lambda_invokes"] == 0
        assert sizes[label]["powertools"]["possible"]
        assert sizes[label]["powertools"]["write_requests"] == 2
    targets = {target["name"]: target for target in written["targets"]}
    for label in cost.QUICK_SIZES:
        assert targets[f"Write units and reads per transition, {label}"]["met"], targets
        finish = targets[f"The finish against a middle transition, {label}"]
        figures = sizes[label]["finish"]
        above = figures["write_units_range"][1] - sizes[label]["middle"]["write_units_range"][1]
        # counts are exact: the finish writes what a middle transition does plus its index entries, within the goal
        assert above == figures["index_units"] <= cost.FINISH_ABOVE_MIDDLE, (above, figures)
        assert finish["measured"] == f"{above:g} more ({figures['index_units']:g} of them index writes)"
        assert (finish["met"], finish["note"]) == (True, ""), finish  # the verdict those figures give
    assert targets["Cheaper than Step Functions Standard"]["met"]
    plot = written["data"]["plots"]["dollars"]["series"]
    assert plot["cairn"]["x"] == [200, 1024]


def test_an_incompressible_state_has_exactly_the_size_asked_for_and_barely_compresses() -> None:
    for size in (200, 1024, 5000):
        state = cost.incompressible_state(size)
        text = json.dumps(state, separators=(",", ":")).encode()
        assert len(text) == size
        assert len(gzip.compress(text)) > 0.7 * size


def test_a_document_state_has_exactly_the_size_asked_for() -> None:
    for size in (200, 1024, 5000):
        assert len(json.dumps(cost.document_state(size), separators=(",", ":")).encode()) == size


def test_the_overhead_suite_compares_a_transition_with_the_floor_and_splits_off_moto(results: Path) -> None:
    assert overhead.main(["--quick"]) == 0

    written = _read(results, "overhead")
    _table(written, "Milliseconds per middle transition")
    _table(written, "cairn as a multiple of the floor")
    entry = written["data"]["sizes"]["1 KB"]
    assert entry["cairn"]["requests"] == 4  # claim, the read of the state, history item, commit
    assert entry["floor"]["requests"] == 1  # one conditional UpdateItem
    assert entry["claim + commit floor"]["requests"] == 2  # the claim returns the state; the commit
    assert entry["own requests floor"]["requests"] == entry["cairn"]["requests"]  # cairn's very requests
    assert entry["ratio_claim_commit"]["cpu"]["median"] > 0
    assert entry["ratio_own_requests"]["client"]["median"] > 0
    for variant in overhead.VARIANTS:
        figures = entry[variant]
        assert figures["cpu_ms"]["runs"] == 3
        assert 0 < figures["moto_ms"]["median"] < figures["cpu_ms"]["median"]
        assert figures["client_ms"]["median"] > 0
    assert entry["ratio"]["cpu"]["median"] > 1
    target, client = written["targets"]
    assert target["name"] == "Overhead over the floor, 1 KB"
    assert target["met"] or "over:" in target["note"]
    assert client["name"] == "Client-side CPU against the own requests floor, 1 KB"
    assert client["goal"] == f"at most {overhead.OWN_REQUESTS_TARGET}x (issue 43)"
    assert client["met"] or "over in the worst run:" in client["note"]
    assert entry["profile"]["top_functions"]
    assert entry["own_work"]["top_functions"]
    assert sum(entry["own_work"]["by_area"].values()) == pytest.approx(1, abs=0.01)


def test_the_state_size_suite_reports_time_bytes_and_where_the_state_went(results: Path) -> None:
    assert state_size.main(["--quick"]) == 0

    written = _read(results, "state_size")
    _table(written, "Per middle transition")
    sizes = written["data"]["sizes"]
    assert list(sizes) == ["1 KB", "10 KB"]
    for label, entry in sizes.items():
        assert entry["default"] == "inline"  # under 8 KB compressed
        inline, through_s3 = entry["inline"], entry["S3"]
        assert inline["possible"]
        assert through_s3["possible"]
        assert inline["written"]["s3_bytes"] == 0
        assert through_s3["written"]["s3_bytes"] > 0
        assert through_s3["written"]["write_units"] == 3, label
        assert inline["cpu_ms"]["median"] > 0
        assert inline["wall_ms"]["median"] > 0
    assert sizes["10 KB"]["inline"]["written"]["dynamodb_bytes"] > sizes["1 KB"]["inline"]["written"]["dynamodb_bytes"]
    assert written["data"]["plots"]["time"]["series"]["S3"]["x"] == [1024, 10240]
