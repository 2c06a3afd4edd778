"""The scale suite on a few dozen jobs: its figures hold from the first job to the last, and the model is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import common, scale


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "latest"
    monkeypatch.setattr(common, "RESULTS", folder)
    return folder


def test_the_load_test_measures_flat_costs_and_writes_the_scale_model(results: Path, tmp_path: Path) -> None:
    doc = tmp_path / "SCALE.md"
    assert scale.main(["--jobs", "60", "--samples", "3", "--stalled", "6", "--doc", str(doc)]) == 0

    measured = json.loads((results / "scale.json").read_text())["data"]["measured"]
    assert measured["metered_jobs"] == 3
    assert len(set(measured["per_job_units"])) == 1, "a job's write units moved as the table grew"
    assert measured["listing_jobs"] == 50
    assert measured["sweep_running"] == 6
    assert 1 <= measured["sweep_read_units"] / measured["sweep_running"] <= 2  # its entry and one item read
    spread = measured["index_spread"]
    assert set(spread) == {"owner", "sweepKey"}
    assert measured["listing_read_units"] / measured["listing_jobs"] <= 0.2
    assert measured["listing_item_reads"] == 0
    assert 0 < measured["listing_client_cpu_ms"] < measured["listing_cpu_ms"]  # moto's share split off
    assert (measured["count_total"], measured["count_exact"]) == (66, True)  # the 60 jobs and the 6 stalled ones
    filtered = {(page["filter"], page["page"]): page for page in measured["filtered_listings"]}
    assert set(filtered) == {("status running", 1), (f"pipeline {scale.RARE}", 1)}  # one page each at this size
    assert filtered["status running", 1]["jobs"] == 6
    assert filtered["status running", 1]["item_reads"] == 0
    assert filtered["status running", 1]["read_units"] == 2.0  # each shard's query reads only its matches
    assert filtered[f"pipeline {scale.RARE}", 1]["jobs"] == 1  # job 50 of 60 (the metered ones run the other)
    assert spread["owner"]["keys"] == 4  # a busy owner's jobs reach every listing shard
    targets = {target["name"]: target for target in json.loads((results / "scale.json").read_text())["targets"]}
    assert set(targets) == {
        "Filtered listing, status running, at 60 jobs",
        f"Filtered listing, pipeline {scale.RARE}, at 60 jobs",
        "Count per status at 60 jobs",
    }
    assert targets["Count per status at 60 jobs"]["met"] is (measured["count_read_units"] <= 5)

    text = doc.read_text()
    for heading in ("## Measured", "## Quotas", "## What binds, in order", "## The sweep at 1 M and 100 M jobs"):
        assert heading in text
    assert "60 jobs on moto" in text
    assert "**Filtered listings**" in text
    assert "| 100,000,000 | 10,000,000 |" in text
