"""Where a bundle's layer takes cairn from, as ``sam build`` runs the layer's Makefile: the release its
``requirements.txt`` pins (``cairn-lambda==X.Y.Z``, from the package index), or the wheel ``cairn init`` left in
``layers/wheels`` for a cairn that is not a release, installed in place of the release and held to the same pin.

The layer's Python is a stand-in that records how pip is called (no package index here: pip's own handling of a
wheel beside a pin, the wheel taken and a version other than the pin's refused, is pip's); the bundle's whole
build with the real pip is tests/template/test_own_bundle.py's.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKELETON_LAYERS = ROOT / "layers" / "cairn" / "cairn" / "bundle" / "skeleton" / "layers"
PIN = "cairn-lambda==0.4.2"


@pytest.fixture
def layers(tmp_path: Path) -> Path:
    """A bundle's ``layers/`` as ``cairn init`` writes it, its requirements pinning cairn-lambda 0.4.2."""
    folder = shutil.copytree(SKELETON_LAYERS, tmp_path / "bundle" / "layers")
    # the runtime the layer is built for, which its Makefile reads from the bundle's template
    (tmp_path / "bundle" / "template.yaml").write_text("Globals:\n  Function:\n    Runtime: python3.13\n")
    requirements = folder / "requirements.txt"
    requirements.write_text(requirements.read_text(encoding="utf-8") + f"{PIN}\n", encoding="utf-8")
    return folder


def build(layers: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """``make build-CairnLayer`` in the arm64 folder, as ``sam build`` runs it; and the pip calls it made."""
    calls = tmp_path / "calls"
    python = tmp_path / "python3.13"
    python.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{calls}"\n', encoding="utf-8")
    python.chmod(0o755)
    done = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "--makefile",
            str(layers / "Makefile"),
            "build-CairnLayer",
            f"ARTIFACTS_DIR={tmp_path / 'artifacts'}",
            f"RUNTIME_PYTHON={python}",
        ],
        cwd=layers / "arm64",
        env={key: value for key, value in os.environ.items() if not key.startswith("MAKE")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    recorded = calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []
    return done, [shlex.split(line) for line in recorded if line.startswith("-m pip ") and " install " in line]


def test_a_release_is_installed_from_the_pin_alone(layers: Path, tmp_path: Path) -> None:
    done, installs = build(layers, tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert f"cairn layer: cairn released, {PIN}" in done.stdout
    (install,) = installs
    assert install[install.index("-r") + 1] == str(layers / "requirements.txt")
    assert [part for part in install if part.endswith(".whl")] == []


def test_the_wheel_of_an_unreleased_cairn_is_installed_with_the_pin(layers: Path, tmp_path: Path) -> None:
    (layers / "wheels").mkdir()
    (layers / "wheels" / "cairn_lambda-0.4.2-py3-none-any.whl").write_bytes(b"a wheel")

    done, installs = build(layers, tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "cairn layer: cairn from its wheel in layers/wheels (a cairn not released)" in done.stdout
    (install,) = installs
    assert install[install.index("-r") + 1] == str(layers / "requirements.txt")
    assert [Path(part).name for part in install if part.endswith(".whl")] == ["cairn_lambda-0.4.2-py3-none-any.whl"]


def test_without_a_pin_or_a_wheel_the_build_stops_saying_what_to_run(layers: Path, tmp_path: Path) -> None:
    requirements = layers / "requirements.txt"
    requirements.write_text(requirements.read_text(encoding="utf-8").replace(f"{PIN}\n", ""), encoding="utf-8")
    (layers / "wheels").mkdir()
    (layers / "wheels" / "cairn-0.1.0-py3-none-any.whl").write_bytes(b"a wheel of the former name")

    done, installs = build(layers, tmp_path)

    assert done.returncode == 2
    assert "requirements.txt pins no cairn-lambda and layers/wheels holds none" in done.stderr
    assert "run 'cairn init --layer-only .' in the bundle" in done.stderr
    assert installs == []
