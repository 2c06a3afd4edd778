"""The offload suite finds the break-even of a state in its history item against S3, and the default sits at it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import common, offload
from cairn.core.settings import DEFAULT_OFFLOAD_STATE_FROM


def test_the_default_offload_threshold_is_the_measured_break_even(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(common, "RESULTS", tmp_path)

    assert offload.main(["--quick"]) == 0

    written = json.loads((tmp_path / "offload.json").read_text())
    below, above = sorted(
        (row for row in written["tables"][0]["rows"]), key=lambda row: float(row[1].removesuffix(" KB"))
    )
    assert float(below[3]) <= float(below[5]), "just below the default the history item is no dearer than S3"
    assert float(above[3]) > float(above[5]), "just above it S3 is cheaper"
    (target,) = written["targets"]
    assert target["met"], target
    assert float(below[1].removesuffix(" KB")) * 1024 <= DEFAULT_OFFLOAD_STATE_FROM
    assert float(above[1].removesuffix(" KB")) * 1024 > DEFAULT_OFFLOAD_STATE_FROM
