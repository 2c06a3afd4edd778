"""A bundle's plain ``sam build`` checks its state models: the layer's build (``layers/Makefile``, as ``sam build``
runs it) fixes the provisional state schemas when every model fits, and stops on a model that no longer fits the
schema ``state-schemas.json`` records for its state_version, with the message of ``cairn template check``.

The Makefile runs as ``sam build`` runs it, with its Python's pip replaced by unpacking the bundle's cairn wheel
(no package index: only the layer's cairn matters here); the ``cairn`` the check runs is the bundle's
virtualenv's, as ``pip install "cairn-lambda[dev]"`` would put it there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cairn.cli import main
from cairn.dev.runtimes import RuntimeNotFound, interpreter_for
from tests.tools import missing

LIBRARY = Path(__file__).resolve().parents[2] / "layers" / "cairn"


@pytest.fixture(scope="module")
def python312() -> str:
    try:
        return interpreter_for("python3.12")
    except RuntimeNotFound as exc:
        missing(str(exc))


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ``cairn init``: its example pipeline's state schema recorded, provisional."""
    folder = tmp_path_factory.mktemp("init") / "shop"
    assert main(["init", str(folder)]) == 0
    return folder


@pytest.fixture
def bundle(made: Path, tmp_path: Path) -> Path:
    """A copy of the bundle, with a virtualenv whose ``cairn`` is this one."""
    copy = tmp_path / "shop"
    shutil.copytree(made, copy)
    cairn = copy / ".venv" / "bin" / "cairn"
    cairn.parent.mkdir(parents=True)
    cairn.write_text(f'#!/bin/sh\nPYTHONPATH="{LIBRARY}" exec "{sys.executable}" -m cairn "$@"\n', encoding="utf-8")
    cairn.chmod(0o755)
    return copy


def build_layer(bundle: Path, python312: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``make build-CairnLayer`` in the layer's x86_64 folder, as ``sam build`` runs it."""
    python = tmp_path / "python3.12"
    python.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then  # pip install: the wheel unpacked into --target\n'
        '    target=""; wheel=""\n'
        "    while [ $# -gt 0 ]; do\n"
        '        case "$1" in --target) target="$2"; shift;; *.whl) wheel="$1";; esac\n'
        "        shift\n"
        "    done\n"
        f'    exec "{sys.executable}" -m zipfile -e "$wheel" "$target"\n'
        "fi\n"
        f'exec "{python312}" "$@"\n',
        encoding="utf-8",
    )
    python.chmod(0o755)
    artifacts = tmp_path / "artifacts"
    shutil.rmtree(artifacts, ignore_errors=True)
    command = [
        "make",
        "--no-print-directory",
        "--makefile",
        str(bundle / "layers" / "Makefile"),
        "build-CairnLayer",
        f"ARTIFACTS_DIR={artifacts}",
        f"PYTHON312={python}",
    ]
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        command,
        cwd=bundle / "layers" / "x86_64",
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_first_build_fixes_the_schema_and_a_later_misfit_stops_the_build(
    bundle: Path, python312: str, tmp_path: Path
) -> None:
    built = build_layer(bundle, python312, tmp_path)

    assert built.returncode == 0, built.stdout + built.stderr
    assert 'fixed the state schema of pipeline "example" version 1' in built.stdout
    recorded = json.loads((bundle / "state-schemas.json").read_text(encoding="utf-8"))["example"]["1"]
    assert "x-cairn-provisional" not in recorded
    assert (tmp_path / "artifacts" / "python" / "cairn" / "__init__.py").is_file()

    module = bundle / "functions" / "example" / "pipeline.py"
    text = module.read_text(encoding="utf-8")
    module.write_text(text.replace("    results: list[str]", "    outputs: list[str]"), encoding="utf-8")
    stopped = build_layer(bundle, python312, tmp_path)

    assert stopped.returncode != 0, stopped.stdout + stopped.stderr
    assert (
        'pipeline "example": state field "results": removed (or renamed) since state-schemas.json recorded '
        "state_version 1: bump state_version and add a migration (Pipeline(state_version=2, migrations={1: ...}))"
    ) in stopped.stderr
    assert "a state model does not fit state-schemas.json (above): the build stops" in stopped.stderr


def test_without_a_cairn_to_run_the_check_the_build_goes_on_with_a_warning(
    made: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cairn.bundle import layer

    copy = shutil.copytree(made, tmp_path / "shop")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))

    assert layer.check_states(copy) == 0
    assert "warning: the state models were not checked against state-schemas.json: no cairn command" in (
        capsys.readouterr().err
    )
