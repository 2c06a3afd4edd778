"""``make demo``: the document-intake demo through ``cairn dev`` and its HTTP API, end to end."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.local.devstack import ROOT, environment

pytestmark = pytest.mark.xdist_group("local-demo")


def test_the_demo_kills_a_worker_shows_the_error_resumes_and_completes_every_job(tmp_path: object) -> None:
    env = {**environment(), "PYTHONPATH": f"{ROOT / 'layers' / 'cairn'}:{ROOT / 'functions'}"}
    run = subprocess.run(
        [sys.executable, "-m", "document_intake.stack_demo"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,  # a demo that hangs fails here
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "kill -9" in out
    assert "demo-contract  error at extract: Runtime exited with error: signal: killed" in out
    assert "nextPhase   extract" in out
    assert 'POST /jobs/demo-contract/retry {"mode": "resume"}' in out
    summary = out[out.index("  job ") :].splitlines()
    rows = {line.split()[0]: line.split() for line in summary[1:4]}
    assert set(rows) == {"demo-contract", "demo-invoice", "demo-report"}
    assert all(row[1] == "complete" for row in rows.values())
    assert "extract > extract" in summary[[line.split()[0] for line in summary[:4]].index("demo-contract")]
