"""A bundle's plain ``sam build`` checks its state models: the layer's build (``layers/Makefile``, as ``sam build``
runs it) fixes the provisional state schemas when every model fits, and stops on a model that no longer fits the
schema ``state-schemas.json`` records for its state_version, with the message of ``cairn template check``. It builds
for the bundle's one runtime (``Globals: Function: Runtime``), with that Python alone.

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

from cairn.bundle import python_runtime
from cairn.cli import main
from cairn.dev.runtimes import RuntimeNotFound, interpreter_for
from tests.tools import missing

LIBRARY = Path(__file__).resolve().parents[2] / "layers" / "cairn"


def runtime_python(runtime: str = python_runtime.DEFAULT) -> str:
    """The Python of Lambda runtime ``runtime`` on this machine; skip without one."""
    try:
        return interpreter_for(runtime)
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
    return with_cairn(shutil.copytree(made, tmp_path / "shop"))


def with_cairn(copy: Path) -> Path:
    """``copy`` (a bundle) with a virtualenv whose ``cairn`` is this one."""
    cairn = copy / ".venv" / "bin" / "cairn"
    cairn.parent.mkdir(parents=True)
    cairn.write_text(f'#!/bin/sh\nPYTHONPATH="{LIBRARY}" exec "{sys.executable}" -m cairn "$@"\n', encoding="utf-8")
    cairn.chmod(0o755)
    return copy


def build_layer(bundle: Path, interpreter: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``make build-CairnLayer`` in the layer's x86_64 folder, as ``sam build`` runs it, on ``interpreter``."""
    python = tmp_path / "python"
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
        f'exec "{interpreter}" "$@"\n',
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
        f"RUNTIME_PYTHON={python}",
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


def test_the_first_build_fixes_the_schema_and_a_later_misfit_stops_the_build(bundle: Path, tmp_path: Path) -> None:
    built = build_layer(bundle, runtime_python(), tmp_path)

    assert built.returncode == 0, built.stdout + built.stderr
    assert 'fixed the state schema of pipeline "example" version 1' in built.stdout
    recorded = json.loads((bundle / "state-schemas.json").read_text(encoding="utf-8"))["example"]["1"]
    assert "x-cairn-provisional" not in recorded
    assert (tmp_path / "artifacts" / "python" / "cairn" / "__init__.py").is_file()

    module = bundle / "functions" / "example" / "pipeline.py"
    text = module.read_text(encoding="utf-8")
    module.write_text(text.replace("    results: list[str]", "    outputs: list[str]"), encoding="utf-8")
    stopped = build_layer(bundle, runtime_python(), tmp_path)

    assert stopped.returncode != 0, stopped.stdout + stopped.stderr
    assert (
        'pipeline "example": state field "results": removed (or renamed) since state-schemas.json recorded '
        "state_version 1: bump state_version and add a migration (Pipeline(state_version=2, migrations={1: ...}))"
    ) in stopped.stderr
    assert "a state model does not fit state-schemas.json (above): the build stops" in stopped.stderr


def test_the_layer_is_built_for_the_bundle_s_runtime_and_by_its_python_alone(tmp_path: Path) -> None:
    runtime = next(other for other in python_runtime.SUPPORTED if other != python_runtime.DEFAULT)
    bundle = tmp_path / "shop"
    assert main(["init", str(bundle), "--no-example", "--runtime", runtime]) == 0
    with_cairn(bundle)

    wrong = build_layer(bundle, runtime_python(python_runtime.DEFAULT), tmp_path)
    assert wrong.returncode != 0
    assert f"cairn layer: the layer's bytecode is for the Lambda runtime {runtime}, not Python 3." in wrong.stderr
    assert f"run this with python{python_runtime.version(runtime)}" in wrong.stderr

    built = build_layer(bundle, runtime_python(runtime), tmp_path)
    assert built.returncode == 0, built.stdout + built.stderr
    assert f"bytecode compiled for {runtime}" in built.stdout
    package = tmp_path / "artifacts" / "python" / "cairn"
    assert (package / "layer-runtime").read_text(encoding="utf-8") == f"{runtime}\n"
    tag = "cpython-" + python_runtime.version(runtime).replace(".", "")
    assert (package / "__pycache__" / f"app.{tag}.pyc").is_file()


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
