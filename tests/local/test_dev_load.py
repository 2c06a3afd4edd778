"""``cairn dev --load FILE``: a job pulled from a "production" API (the bundle on moto behind a real HTTP server)
is loaded into the local stack, shown by its API as the caller's job, and reruns from a phase there."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cairn.cli import main
from tests.local.devstack import DevStack, dev_stack
from tests.local.pulled import DOCUMENT, pull_production_job


@pytest.fixture(scope="module")
def pulled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A document-intake job run on the bundle on moto, pulled through `cairn jobs pull` into a file."""
    return pull_production_job(tmp_path_factory.mktemp("pulled") / "prod-doc-1.cairn-job.json", "prod-doc-1")


@pytest.fixture(scope="module")
def loaded_stack(pulled: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """`cairn dev --load FILE`, direct driver."""
    log = tmp_path_factory.mktemp("dev-load") / "dev.log"
    with dev_stack(log, "--driver", "direct", "--load", str(pulled)) as stack:
        yield stack


def test_the_loaded_job_is_the_callers_job_on_the_local_api_and_marked_as_loaded(
    loaded_stack: DevStack, pulled: Path
) -> None:
    saved = json.loads(pulled.read_text(encoding="utf-8"))

    view = loaded_stack.api.get("prod-doc-1", include_state=True, include_input=True)

    assert (view["status"], view["pipeline"]) == ("complete", "document-intake")
    assert view["result"] == saved["job"]["result"]
    assert view["input"] == saved["job"]["input"]
    assert view["input"]["document"] == DOCUMENT["document"]
    assert [record["phase"] for record in loaded_stack.phases("prod-doc-1")] == [
        write["record"]["phase"] for write in saved["history"] if write["record"]
    ]
    last = loaded_stack.api.log("prod-doc-1")["entries"][-1]["message"]
    assert last.startswith(f"Loaded from {pulled.name}, pulled from http://127.0.0.1:")
    assert "loaded        prod-doc-1 (document-intake, complete)" in loaded_stack.output()


def test_the_loaded_job_reruns_from_its_third_phase_on_the_local_stack(loaded_stack: DevStack) -> None:
    before = loaded_stack.api.get("prod-doc-1")

    loaded_stack.api.retry("prod-doc-1", mode="from", phase="extract")
    after = loaded_stack.wait_until(
        "prod-doc-1", lambda view: view["status"] == "complete" and view["sequence"] > before["sequence"]
    )

    assert after["result"] == before["result"]


def test_a_file_that_is_not_a_job_file_stops_cairn_dev_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"jobs": []}', encoding="utf-8")

    assert main(["dev", "--load", str(foreign)]) == 2

    err = capsys.readouterr().err
    assert err.splitlines() == [
        f'cairn dev: error: --load: {foreign} is not a cairn job file (no "format": "cairn-job"; made by cairn '
        "jobs pull)"
    ]


@pytest.mark.parametrize(
    ("field", "value", "refusal"),
    [
        ("jobId", "../../etc/passwd", "Invalid job id '../../etc/passwd'"),
        ("jobId", "a\nb", "Invalid job id 'a\\nb'"),
        ("jobId", "j" * 5000, "Invalid job id 'jjj"),
        ("usage", {"tokens": float("nan")}, "Invalid usage 'tokens': nan"),
        ("usage", {"tokens": -1}, "Invalid usage 'tokens': -1"),
    ],
)
def test_a_job_file_with_an_id_the_api_refuses_or_bad_usage_stops_cairn_dev_with_one_line(
    pulled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: object, refusal: str
) -> None:
    wire = json.loads(pulled.read_text(encoding="utf-8"))
    wire["job"][field] = value
    damaged = tmp_path / "damaged.cairn-job.json"
    damaged.write_text(json.dumps(wire), encoding="utf-8")

    assert main(["dev", "--load", str(damaged)]) == 2

    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"cairn dev: error: --load: {damaged} is a damaged cairn job file: job.{field}: {refusal}")
