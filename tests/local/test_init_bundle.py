"""A bundle fresh from ``cairn init`` runs its example pipeline under ``cairn dev``, on both drivers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.local.devstack import cairn, dev_stack


@pytest.mark.parametrize("driver", ["direct", "stepfunctions"])
def test_the_example_pipeline_of_a_new_bundle_completes_under_cairn_dev(tmp_path: Path, driver: str) -> None:
    created = cairn("init", "shop", "--driver", driver, cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    bundle = tmp_path / "shop"

    with dev_stack(tmp_path / "dev.log", cwd=bundle) as stack:
        assert f"(driver {driver})" in stack.output()
        stack.api.start("example", state={"items": ["a", " ", "b"]}, job_id="first")
        job = stack.wait_for("first")

    assert job["status"] == "complete", job
    assert job["result"] == {"results": ["A", "B"]}
    assert [phase["phase"] for phase in job["phases"]] == ["start", "finish"]
