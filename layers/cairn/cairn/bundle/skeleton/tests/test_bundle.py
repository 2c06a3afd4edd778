"""The bundle as a whole: template.yaml agrees with functions/pipelines.py, and its hand-written part holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_template_checks_clean() -> None:
    """`cairn template check`: every phase has its function, every handler and folder exists (else: sync)."""
    command = [sys.executable, "-m", "cairn", "template", "check", "--template", str(ROOT / "template.yaml")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
