"""``sam build`` packages the layer for the functions' runtime and architecture, and every function's code."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.template.cfn import ROOT, load_yaml_template, sam_template
from tests.template.stacks import registered_phases

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


def sam_commands(*make_arguments: str) -> dict[str, list[str]]:
    """The ``sam build`` and ``sam deploy`` command lines ``make deploy`` runs (printed by ``make -n``)."""
    result = subprocess.run(
        ["make", "-n", "deploy", *make_arguments], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    commands: dict[str, list[str]] = {}
    for line in result.stdout.replace("\\\n", " ").splitlines():
        words = shlex.split(line)
        for verb in ("build", "deploy"):
            if any(word.endswith("/sam") for word in words) and verb in words:
                commands[verb] = words
    assert set(commands) == {"build", "deploy"}, result.stdout
    return commands


def architecture_of(command: list[str]) -> list[str]:
    """Every ``Architecture=`` value the command passes in ``--parameter-overrides``."""
    start = command.index("--parameter-overrides") + 1
    overrides = [word for word in command[start:] if "=" in word and not word.startswith("-")]
    return [word.split("=", 1)[1] for word in overrides if word.startswith("Architecture=")]


@pytest.mark.parametrize("arguments", [(), ("ARCH=x86_64",), ("ARCH=arm64", "PARAMETERS=Driver=stepfunctions")])
def test_make_builds_for_the_architecture_it_deploys(arguments: tuple[str, ...]) -> None:
    commands = sam_commands(*arguments)
    default = sam_template()["Parameters"]["Architecture"]["Default"]
    expected = next((argument.split("=", 1)[1] for argument in arguments if argument.startswith("ARCH=")), default)
    assert architecture_of(commands["build"]) == [expected]
    assert architecture_of(commands["deploy"]) == [expected]
    assert "--guided" not in commands["deploy"]  # its prompts could deploy another architecture


def test_the_architecture_cannot_be_set_for_the_deploy_alone() -> None:
    command = ["make", "-n", "deploy", "PARAMETERS=Architecture=x86_64"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode != 0
    assert "ARCH=" in result.stderr


def test_samconfig_saves_no_parameter_the_makefile_would_contradict() -> None:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    for environment in config.values():
        if isinstance(environment, dict):
            for command, section in environment.items():
                assert "parameter_overrides" not in section.get("parameters", {}), command


def test_the_layer_is_built_for_the_architecture_parameter() -> None:
    layer = sam_template()["Resources"]["CairnLayer"]
    assert layer["Metadata"]["BuildArchitecture"] == {"Ref": "Architecture"}
    assert layer["Properties"]["CompatibleArchitectures"] == [{"Ref": "Architecture"}]


@pytest.mark.slow
def test_sam_build_packages_the_layer_for_python312_and_the_architecture(sam_cli: Path, tmp_path: Path) -> None:
    """The build command of ``make deploy ARCH=x86_64`` (not the template's default) builds an x86_64 layer."""
    environment = python312_environment()
    if environment is None:
        pytest.skip("python3.12 is not available (sam build needs the Lambda runtime's Python)")
    subprocess.run([sys.executable, str(ROOT / "layers" / "stage_layer.py"), str(ROOT / "build" / "layer")], check=True)
    build = tmp_path / "build"
    architecture = "x86_64"
    assert architecture != sam_template()["Parameters"]["Architecture"]["Default"]
    words = sam_commands(f"ARCH={architecture}")["build"]
    command = [str(sam_cli), *words[[word.endswith("/sam") for word in words].index(True) + 1 :]]
    command[command.index("--build-dir") + 1] = str(build)
    result = subprocess.run(
        command,
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]

    built = load_yaml_template(build / "template.yaml")
    layer = build / built["Resources"]["CairnLayer"]["Properties"]["ContentUri"] / "python"
    assert (layer / "cairn" / "__init__.py").is_file()
    assert (layer / "cairn" / "aws" / "dynamodb.py").is_file()
    # The layer carries what runs in Lambda only: no local tools, no command line, no moto.
    assert not (layer / "cairn" / "testing").exists()
    assert not (layer / "cairn" / "cli.py").exists()
    assert not (layer / "cairn" / "templating").exists()
    assert not (layer / "cairn" / "dev").exists()
    assert not (layer / "cairn" / "client").exists()
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
    assert len(functions) == 2 + len(registered_phases())  # the API, the scheduler and every registered phase
    for properties in functions.values():
        module = properties["Handler"].rsplit(".", 1)[0]
        assert (build / properties["CodeUri"] / (module.replace(".", "/") + ".py")).is_file(), properties["Handler"]
