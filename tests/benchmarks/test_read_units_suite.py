"""The read-units suite on small sizes: issue 43's read-side targets, billed as DynamoDB bills them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import common, read_units


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "latest"
    monkeypatch.setattr(common, "RESULTS", folder)
    return folder


def test_the_quick_suite_meets_the_read_side_targets_with_the_pinned_figures(results: Path) -> None:
    assert read_units.main(["--quick"]) == 0

    written = json.loads((results / "read_units.json").read_text())
    data = written["data"]
    assert [(bill, hand) for _, bill, hand in data["meter"]] == [(2.0, 2.0), (1.0, 1.0), (1.0, 1.0), (4.0, 4.0)]
    assert set(data["state_reads"].values()) == {1.0}  # the state alone, however long the log before it
    assert len(data["state_reads"]) == len(read_units.STATE_SIZES) * len(read_units.LOG_LINES)
    short, long = (data["restarts"][str(count)] for count in read_units.QUICK_TRANSITIONS)
    assert short == long == {"retry (resume)": 2.0, "rerun from a phase": 6.0, "start of a known id": 6.0}
    # an item reads the job item and its own record; the last item of each of the map's 10 slots its record too
    assert data["map_items"] == {str(size): 2 + read_units.MAP_CONCURRENCY / size for size in (10, 100)}
    assert data["sfn_transitions_per_phase"] == 2
    targets = {target["name"]: target for target in written["targets"]}
    assert len(targets) == 5
    assert all(target["met"] for target in targets.values()), targets
