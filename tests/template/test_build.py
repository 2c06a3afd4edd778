"""Plain ``sam build`` packages the layer for the template's Architecture, and build and deploy agree on it."""

from __future__ import annotations

import os
import platform
import subprocess
import tomllib
from pathlib import Path

import pytest

from cairn.bundle import python_runtime
from tests.template.builds import RUNTIME, check_repository_build
from tests.template.cfn import ROOT, sam_template

OTHER_ARCHITECTURE = {"x86_64": "arm64", "amd64": "arm64", "aarch64": "x86_64", "arm64": "x86_64"}[
    platform.machine().lower()
]
"""The Lambda architecture this machine does not run: the one only a cross-architecture layer build gives."""
SAMCONFIG = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))


def overrides(section: dict[str, object]) -> dict[str, str]:
    """The ``parameter_overrides`` of a samconfig section, as NAME -> value."""
    text = str(section.get("parameter_overrides", ""))
    return dict(pair.split("=", 1) for pair in text.split())


@pytest.mark.parametrize("environment", ["default", "prod"])
def test_samconfig_saves_the_template_s_architecture_for_build_and_deploy_alike(environment: str) -> None:
    default = sam_template()["Parameters"]["Architecture"]["Default"]
    config = SAMCONFIG[environment]
    # prod also deploys with Stage=prod: what protects production data (the table's deletion protection)
    stage = {"Stage": "prod"} if environment == "prod" else {}
    assert overrides(config["global"]["parameters"]) == {"Architecture": default, **stage}
    for command in ("build", "deploy", "validate"):
        assert "parameter_overrides" not in config.get(command, {}).get("parameters", {}), command


def test_a_person_confirms_the_default_deploy_and_ci_deploys_prod_unattended() -> None:
    assert SAMCONFIG["default"]["deploy"]["parameters"]["confirm_changeset"] is True
    prod = SAMCONFIG["prod"]["deploy"]["parameters"]
    assert prod["confirm_changeset"] is False
    assert prod["fail_on_empty_changeset"] is False
    assert "REPLACE" in SAMCONFIG["prod"]["global"]["parameters"]["region"]  # a placeholder sam rejects


def test_make_build_and_deploy_are_plain_sam_build_and_deploy() -> None:
    done = subprocess.run(["make", "-n", "deploy"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    commands = [line.split() for line in done.stdout.splitlines() if line.split() and line.split()[0].endswith("/sam")]
    assert [words[1:] for words in commands] == [["build"], ["deploy"]]


def test_the_layer_is_built_by_its_makefile_for_the_architecture_parameter() -> None:
    layer = sam_template()["Resources"]["CairnLayer"]
    assert layer["Metadata"]["BuildMethod"] == "makefile"
    assert layer["Metadata"]["BuildArchitecture"] == {"Ref": "Architecture"}
    assert layer["Metadata"]["WorkingDirectory"] == {"Fn::Sub": "layers/${Architecture}"}
    assert layer["Properties"]["CompatibleArchitectures"] == [{"Ref": "Architecture"}]
    allowed = sam_template()["Parameters"]["Architecture"]["AllowedValues"]
    for architecture in allowed:
        platform = (ROOT / "layers" / architecture / "platform.mk").read_text(encoding="utf-8")
        assert f"ARCHITECTURE := {architecture}" in platform


def make_layer(tmp_path: Path, *variables: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PATH": path if path is not None else os.environ.get("PATH", "")}
    command = ["make", "--no-print-directory", "-C", str(ROOT / "layers"), "build-CairnLayer", *variables]
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600, check=False)


def test_without_the_runtime_s_python_the_layer_build_names_the_two_ways_out(tmp_path: Path) -> None:
    done = make_layer(tmp_path, f"ARTIFACTS_DIR={tmp_path / 'out'}", "ARCHITECTURE=arm64", "RUNTIME_PYTHON=")
    assert done.returncode != 0
    version = python_runtime.version(RUNTIME)
    assert f"no Python {version} found (the {RUNTIME} runtime's" in done.stderr
    assert f"Install Python {version} so that python{version} is on PATH" in done.stderr
    assert "sam build --use-container" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_template_without_a_runtime_stops_the_layer_build_saying_where_it_goes(tmp_path: Path) -> None:
    template = tmp_path / "template.yaml"
    template.write_text("Globals:\n  Function:\n    Timeout: 3\n", encoding="utf-8")
    done = make_layer(tmp_path, f"ARTIFACTS_DIR={tmp_path / 'out'}", "ARCHITECTURE=arm64", f"TEMPLATE={template}")
    assert done.returncode != 0
    assert f"cairn layer: {template} names no runtime: set Globals: Function: Runtime" in done.stderr
    assert not (tmp_path / "out").exists()


def test_the_layer_build_refuses_an_unknown_architecture(tmp_path: Path) -> None:
    done = make_layer(tmp_path, f"ARTIFACTS_DIR={tmp_path / 'out'}", "ARCHITECTURE=riscv64")
    assert done.returncode != 0
    assert "unknown architecture 'riscv64'" in done.stderr


# The architecture this machine does not run, passed as the parameter (it reaches the layer's build); the fresh-clone
# e2e test (tests/template/test_own_bundle.py) builds the one it runs and checks its build the same way.
@pytest.mark.slow
@pytest.mark.e2e
def test_plain_sam_build_packages_the_layer_for_the_runtime_and_the_other_architecture(
    sam_cli: Path, runtime_python: str, tmp_path: Path
) -> None:
    architecture = OTHER_ARCHITECTURE
    build = tmp_path / "build"
    environment = {
        **os.environ,
        "SAM_CLI_TELEMETRY": "0",
        "PATH": f"{Path(runtime_python).parent}:{os.environ['PATH']}",
    }
    environment.pop("PYENV_VERSION", None)
    command = [
        str(sam_cli),
        "build",
        "--build-dir",
        str(build),
        "--parameter-overrides",
        f"Architecture={architecture}",
    ]
    result = subprocess.run(
        command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=900, check=False
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]

    check_repository_build(build, architecture)
