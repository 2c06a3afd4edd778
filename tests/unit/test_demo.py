"""``python -m document_intake.demo`` as a user runs it: a real crash, a resume, a result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_demo(*args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "layers" / "cairn"), str(ROOT / "functions"), str(ROOT)]),
    }
    return subprocess.run(
        [sys.executable, "-m", "document_intake.demo", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_demo_crashes_the_worker_then_resumes_to_complete(tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = run_demo("--store", str(store))
    out = done.stdout
    assert done.returncode == 0, done.stderr + out

    assert "extract  page 2/4 saved" in out
    assert "CRASH    worker process died (exit code 137)" in out
    assert "nextPhase   extract" in out
    assert "pages done  2 of 4" in out
    assert 'run_pipeline(..., retry_mode="resume")' in out
    assert "extract  resumes at page 3/4 (2 pages already saved)" in out
    assert out.index("CRASH") < out.index("extract  page 3/4 saved") < out.index("publish  done")
    assert out.count("extract  page 1/4 saved") == 1
    assert "Job demo-contract: complete" in out

    job = json.loads((store / "demo-contract.json").read_text())
    history = [json.loads(line) for line in (store / "demo-contract.history.jsonl").read_text().splitlines()]
    assert job["status"] == "complete"
    assert job["checkpoint"] is None
    assert job["result"]["document"]["kind"] == "contract"
    assert job["result"]["fields"]["references"] == {"contract": "NW-MSA-2025-017"}
    assert job["usage"]["pages"] == 4
    log = [entry["message"] for item in history for entry in item["log"]]
    extracted = [message for message in log if message.startswith("Extracted page")]
    assert [message.split(":")[0] for message in extracted] == [f"Extracted page {n}/4" for n in range(1, 5)]


def test_demo_without_the_crash_runs_in_one_go(tmp_path: Path) -> None:
    done = run_demo("--store", str(tmp_path), "--document", "invoice", "--no-crash")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "CRASH" not in done.stdout
    assert "Job demo-invoice: complete" in done.stdout
    assert json.loads((tmp_path / "demo-invoice.json").read_text())["status"] == "complete"


def test_demo_rejects_an_unknown_document(tmp_path: Path) -> None:
    done = run_demo("--store", str(tmp_path), "--document", "no-such-document")
    assert done.returncode == 1
    assert 'No document "no-such-document"' in done.stderr
