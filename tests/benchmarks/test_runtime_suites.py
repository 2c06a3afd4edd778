"""The local-stack and cold-start suites, in their quick form: they measure, and write tables of sane figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import cold_start, common, concurrency

pytestmark = pytest.mark.xdist_group("bench-local")


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "latest"
    monkeypatch.setattr(common, "RESULTS", folder)
    return folder


def _table(result: dict[str, Any], title: str) -> dict[str, Any]:
    (table,) = [table for table in result["tables"] if table["title"].startswith(title)]
    return dict(table)


def test_concurrency_runs_jobs_on_cairn_dev_and_reports_throughput_and_phase_latency(results: Path) -> None:
    assert concurrency.main(["--quick"]) == 0

    result = json.loads((results / "concurrency.json").read_text())
    assert result["unmeasured"] == []
    throughput = _table(result, "Throughput")
    assert [row[:3] for row in throughput["rows"]] == [["direct", "1", "1/1"], ["direct", "5", "5/5"]]
    assert all(float(row[3]) > 0 for row in throughput["rows"])  # jobs per second
    latency = _table(result, "Per-phase latency")
    assert [row[2] for row in latency["rows"]] == list(concurrency.PHASES) * 2
    for run in result["data"]["runs"]:
        assert run["completed"] == run["jobs"]
        assert set(run["phase_ms"]) == set(concurrency.PHASES)
        for spread in run["handoff_ms"].values():
            assert 0 <= spread["median"] <= spread["p95"]
            assert spread["count"] == run["jobs"]


def test_cold_start_times_the_entry_points_and_the_first_transition_against_boto3(results: Path) -> None:
    assert cold_start.main(["--quick"]) == 0

    result = json.loads((results / "cold_start.json").read_text())
    assert result["unmeasured"] == []
    imports = _table(result, "Import time of the Lambda entry points")
    expected = [
        "import boto3",
        "the dependency floor",
        "import phases",
        "the dependency floor of api.app",
        "import api.app",
        "import scheduler.app",
    ]
    assert [row[0] for row in imports["rows"]] == expected
    rows = {row[0]: row for row in imports["rows"]}
    over_boto3 = {name: float(row[5].rstrip("x")) for name, row in rows.items()}
    over_floor = {name: float(row[6].rstrip("x")) for name, row in rows.items()}
    assert over_boto3["import boto3"] == over_floor["the dependency floor"] == 1.0
    assert all(ratio > 0 for ratio in [*over_boto3.values(), *over_floor.values()])
    # what each floor imports (timings of a few fresh processes are too noisy to order them)
    base, api = (
        cold_start.floor_code(cold_start.floor_of("phases")),
        cold_start.floor_code(cold_start.floor_of("api.app")),
    )
    assert "import boto3" in base
    assert "from pydantic import BaseModel, Field" in base
    assert api.startswith(base.split("print(")[0])
    assert "APIGatewayHttpResolver" in api
    assert "Resolver" not in base
    (target,) = result["targets"]
    assert target["goal"] == "at most 1.3x its dependency floor"
    heaviest = _table(result, "The 10 heaviest imports of phases")
    assert len(heaviest["rows"]) == 10
    assert all(float(row[1]) >= 0 and float(row[2]) >= float(row[1]) for row in heaviest["rows"])
    beyond = _table(result, "What phases imports beyond boto3")
    assert beyond["rows"][-1][0] == "all of it"
    assert float(beyond["rows"][-1][1]) > 0
    first = _table(result, "Time to the first transition")
    boto3_row, now_row = first["rows"]
    assert boto3_row[0] == "import boto3"
    assert now_row[0] == "first transition, now"
    assert int(now_row[6]) > 0
    assert float(now_row[7].rstrip("x")) > 0
    assert {target["name"] for target in result["targets"]} == {"Import of each entry point (Lambda, tracing on)"}


def test_the_layers_size_is_counted_by_distribution(tmp_path: Path) -> None:
    python = tmp_path / "layer" / "python"
    (python / "cairn").mkdir(parents=True)
    (python / "cairn" / "__init__.py").write_text("x" * 100)
    (python / "botocore").mkdir()
    (python / "botocore" / "data.json").write_text("{}" * 500)
    (python / "botocore-1.0.dist-info").mkdir()
    (python / "botocore-1.0.dist-info" / "RECORD").write_text(
        "botocore/data.json,sha256=x,1000\nbotocore-1.0.dist-info/RECORD,,\n"
    )

    layer = cold_start.measure_layer(tmp_path / "layer", "test")

    assert layer.by_distribution["cairn (the library)"] == 100
    assert layer.by_distribution["botocore"] == 1000 + len(
        "botocore/data.json,sha256=x,1000\nbotocore-1.0.dist-info/RECORD,,\n"
    )
    assert layer.unzipped == sum(layer.by_distribution.values())
    assert layer.without_sdk_unzipped == 100
    assert 0 < layer.without_sdk_zipped < layer.zipped


def test_the_layers_bytecode_is_counted_with_its_sources_distribution(tmp_path: Path) -> None:
    python = tmp_path / "layer" / "python"
    (python / "cairn" / "__pycache__").mkdir(parents=True)
    (python / "cairn" / "__init__.py").write_text("x" * 100)
    (python / "cairn" / "__pycache__" / "__init__.cpython-312.pyc").write_bytes(b"c" * 30)
    (python / "botocore" / "__pycache__").mkdir(parents=True)
    (python / "botocore" / "client.py").write_text("y" * 200)
    (python / "botocore" / "__pycache__" / "client.cpython-312.pyc").write_bytes(b"b" * 70)
    record = "botocore/client.py,sha256=x,200\nbotocore-1.0.dist-info/RECORD,,\n"
    (python / "botocore-1.0.dist-info").mkdir()
    (python / "botocore-1.0.dist-info" / "RECORD").write_text(record)

    layer = cold_start.measure_layer(tmp_path / "layer", "test")

    assert layer.by_distribution["botocore"] == 200 + 70 + len(record)  # the .pyc sits with its source
    assert layer.by_distribution["cairn (the library)"] == 100 + 30
    assert layer.unzipped == sum(layer.by_distribution.values())
