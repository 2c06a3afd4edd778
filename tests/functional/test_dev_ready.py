"""``cairn dev`` never says Ready with an entry point that does not import: it names the function and exits 2.

Each test runs ``python -m cairn dev`` as a user does, in a copy of the bundle whose template has a
handler typo; without the check the server printed Ready and answered every request with a 500.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.template.cfn import ROOT, TEMPLATE
from tests.template.test_template_check import bundle_with

START_TIMEOUT = 180.0
"""Seconds after which ``cairn dev`` that neither exited nor said Ready is called hung: a safety net."""


def run_dev(folder: Path) -> tuple[int | None, str, str]:
    """``cairn dev`` in ``folder`` until it exits or says Ready (then it is stopped): status, stdout, stderr."""
    out, err = folder / "dev.out", folder / "dev.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "cairn", "dev", "--no-reload", "--port", "0"],
            cwd=folder,
            env={**os.environ, "PYTHONPATH": str(ROOT / "layers" / "cairn")},
            stdout=stdout,
            stderr=stderr,
        )
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while process.poll() is None and "Ready." not in out.read_text(errors="replace"):
            assert time.monotonic() < deadline, f"cairn dev neither exited nor said Ready in {START_TIMEOUT:g}s"
            time.sleep(0.1)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, out.read_text(errors="replace"), err.read_text(errors="replace")


@pytest.mark.parametrize(
    ("handler", "typo", "function", "error"),
    [
        ("api.app.handler", "api.ap.handler", "ApiFunction (cairn-dev-api)", "No module named 'api.ap'"),
        (
            "scheduler.app.handler",
            "scheduler.app.handlr",
            "SchedulerFunction (cairn-dev-scheduler)",
            "Handler 'handlr' missing on module 'scheduler.app'",
        ),
    ],
)
def test_a_handler_that_does_not_import_stops_the_start(
    tmp_path: Path, handler: str, typo: str, function: str, error: str
) -> None:
    text = TEMPLATE.read_text(encoding="utf-8")
    assert f"Handler: {handler}\n" in text
    bundle_with(tmp_path, text.replace(f"Handler: {handler}\n", f"Handler: {typo}\n", 1))
    status, out, err = run_dev(tmp_path)
    assert "Ready." not in out
    assert status == 2, err
    (line,) = err.splitlines()
    assert line.startswith(f"cairn dev: error: function {function} does not start: its handler {typo} in ")
    assert f"fails with Runtime.ImportModuleError: {error}" in line
    assert "fix the Handler or CodeUri in template.yaml" in line
