"""``sam build`` packages the layer for the functions' runtime and architecture, and every function's code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.template.cfn import ROOT, TEMPLATE, load_yaml_template

# What `make build` sets as PYENV_VERSION so that pyenv puts python3.12 on PATH beside 3.11.
PYENV_VERSIONS = os.environ.get("SAM_PYENV_VERSION", "3.11.7:3.12.1")
ARCHITECTURE_TAGS = {"arm64": "aarch64", "x86_64": "x86_64"}


def python312_environment() -> dict[str, str] | None:
    """An environment in which ``python3.12`` runs (as found, or through pyenv), or None."""
    base = {**os.environ, "SAM_CLI_TELEMETRY": "0"}
    for extra in ({}, {"PYENV_VERSION": PYENV_VERSIONS}):
        environment = {**base, **extra}
        interpreter = shutil.which("python3.12", path=environment.get("PATH"))
        if interpreter is None:
            continue
        probe = subprocess.run([interpreter, "--version"], env=environment, capture_output=True, check=False)
        if probe.returncode == 0:
            return environment
    return None


@pytest.mark.slow
def test_sam_build_packages_the_layer_for_python312_and_the_architecture(sam_cli: Path, tmp_path: Path) -> None:
    environment = python312_environment()
    if environment is None:
        pytest.skip("python3.12 is not available (sam build needs the Lambda runtime's Python)")
    subprocess.run([sys.executable, str(ROOT / "layers" / "stage_layer.py"), str(ROOT / "build" / "layer")], check=True)
    build = tmp_path / "build"
    result = subprocess.run(
        [str(sam_cli), "build", "--template", str(TEMPLATE), "--build-dir", str(build)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]

    built = load_yaml_template(build / "template.yaml")
    architecture = load_yaml_template()["Parameters"]["Architecture"]["Default"]
    layer = build / built["Resources"]["CairnLayer"]["Properties"]["ContentUri"] / "python"
    assert (layer / "cairn" / "__init__.py").is_file()
    assert (layer / "cairn" / "aws" / "dynamodb.py").is_file()
    # The layer carries what runs in Lambda only: no local tools, no command line, no moto.
    assert not (layer / "cairn" / "testing").exists()
    assert not (layer / "cairn" / "cli.py").exists()
    assert not (layer / "moto").exists()
    assert not list(layer.glob("moto-*.dist-info"))
    for requirement in (ROOT / "layers" / "cairn" / "requirements.txt").read_text().splitlines():
        if requirement and not requirement.startswith("#"):
            name = requirement.split("==")[0].split("[")[0].replace("-", "_").lower()
            assert list(layer.glob(f"{name}-*.dist-info")), f"{name} is not in the layer"
    (extension,) = layer.glob("pydantic_core/_pydantic_core.*.so")
    assert "cpython-312" in extension.name
    assert ARCHITECTURE_TAGS[architecture] in extension.name

    functions = {
        logical_id: resource["Properties"]
        for logical_id, resource in built["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }
    assert len(functions) == 6
    for properties in functions.values():
        module = properties["Handler"].rsplit(".", 1)[0]
        assert (build / properties["CodeUri"] / (module.replace(".", "/") + ".py")).is_file(), properties["Handler"]
