"""What a plain ``sam build`` of this repository must leave in its build folder, checked in one place.

tests/template/test_build.py builds the architecture this machine does not run; the fresh-clone e2e test
(tests/template/test_own_bundle.py) builds the one it runs and checks its build with the same function.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cairn.bundle import python_runtime
from cairn.layer_architecture import ARCHITECTURES
from tests.template.cfn import ROOT, load_yaml_template
from tests.template.stacks import registered_phases

ARCHITECTURE_TAGS = {"arm64": "aarch64", "x86_64": "x86_64"}
"""How each Lambda architecture is named in a compiled extension's file name."""
RUNTIME = str(python_runtime.chosen(load_yaml_template()))
"""This repository's runtime (``Globals: Function: Runtime``)."""


def interpreter_tag(runtime: str) -> str:
    """How a runtime's Python names its bytecode and compiled extensions: ``cpython-313`` for ``python3.13``."""
    return "cpython-" + python_runtime.version(runtime).replace(".", "")


def check_repository_build(build: Path, architecture: str) -> None:
    """The layer in ``build`` (a ``sam build`` folder) holds cairn and its pins compiled for the template's runtime
    and ``architecture``, bytecode beside every module and no local tool; each function's handler is in its code."""
    tag = interpreter_tag(RUNTIME)
    built = load_yaml_template(build / "template.yaml")
    layer = build / built["Resources"]["CairnLayer"]["Properties"]["ContentUri"] / "python"
    assert (layer / "cairn" / "__init__.py").is_file()
    assert (layer / "cairn" / "aws" / "dynamodb" / "__init__.py").is_file()
    # Bytecode for the runtime, beside every module: Lambda's /opt is read-only, nothing is compiled there.
    assert (layer / "cairn" / "core" / "engine" / "__pycache__" / f"advancing.{tag}.pyc").is_file()
    assert (layer / "pydantic" / "__pycache__" / f"main.{tag}.pyc").is_file()
    assert (layer / "cairn" / "layer-runtime").read_text() == f"{RUNTIME}\n"
    # The layer carries what runs in Lambda only: no local tools, no command line, no moto.
    for local in ("testing", "cli.py", "client", "dev", "bundle"):
        assert not (layer / "cairn" / local).exists(), local
    assert not (layer / "moto").exists()
    assert not list(layer.glob("moto-*.dist-info"))
    assert list(layer.glob("cairn_lambda-*.dist-info")), "cairn enters the layer as the cairn-lambda distribution"
    for requirement in (ROOT / "layers" / "requirements.txt").read_text().splitlines():
        if requirement and not requirement.startswith("#"):
            name, version = requirement.split("==")
            name = name.split("[")[0].replace("-", "_").lower()
            assert list(layer.glob(f"{name}-{version}.dist-info")), f"{requirement} is not in the layer"
    (extension,) = layer.glob("pydantic_core/_pydantic_core.*.so")
    assert tag in extension.name
    assert ARCHITECTURE_TAGS[architecture] in extension.name
    assert (layer / "cairn" / "layer-architecture").read_text() == f"{architecture}\n"
    if ARCHITECTURES.get(os.uname().machine) != architecture:  # a function on this machine refuses the layer
        imported = subprocess.run(
            [sys.executable, "-c", "import cairn"],
            env={"PYTHONPATH": str(layer), "AWS_LAMBDA_FUNCTION_NAME": "cairn-test-api", "PATH": os.environ["PATH"]},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert imported.returncode != 0
        assert f"The cairn layer was built for {architecture}, but this function runs on" in imported.stderr

    functions = {
        logical_id: resource["Properties"]
        for logical_id, resource in built["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }
    assert len(functions) == 2 + len(registered_phases())  # the API, the scheduler and every registered phase
    for properties in functions.values():
        module = properties["Handler"].rsplit(".", 1)[0]
        assert (build / properties["CodeUri"] / (module.replace(".", "/") + ".py")).is_file(), properties["Handler"]
