"""``cairn template check`` holds the bundle to one runtime, cairn's: the functions' (``Globals: Function:
Runtime``), the layer's ``CompatibleRuntimes`` and no function on its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.bundle import python_runtime
from cairn.bundle.templating import check
from pipelines import PIPELINES
from tests.template.cfn import TEMPLATE
from tests.template.test_template_check import FUNCTIONS, copy_of_template, run_check

CHOSEN = f"    Runtime: {python_runtime.DEFAULT}\n"
LAYER_RUNTIMES = f"      CompatibleRuntimes:\n        - {python_runtime.DEFAULT}\n"


def test_the_bundle_runs_on_the_default_runtime_chosen_in_one_place() -> None:
    text = TEMPLATE.read_text(encoding="utf-8")
    assert text.count(CHOSEN) == 1
    assert text.count(LAYER_RUNTIMES) == 1
    assert python_runtime.DEFAULT in python_runtime.SUPPORTED


@pytest.mark.parametrize("runtime", python_runtime.SUPPORTED)
def test_each_supported_runtime_passes_when_the_layer_follows_it(tmp_path: Path, runtime: str) -> None:
    text = python_runtime.set_runtime(TEMPLATE.read_text(encoding="utf-8"), runtime)
    template = copy_of_template(tmp_path)
    template.write_text(text, encoding="utf-8")
    assert check(template, PIPELINES, FUNCTIONS) == []


def test_a_layer_declared_for_another_runtime_than_the_functions_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = next(runtime for runtime in python_runtime.SUPPORTED if runtime != python_runtime.DEFAULT)
    template = copy_of_template(tmp_path, CHOSEN, f"    Runtime: {other}\n")

    status, lines = run_check(template, "pipelines:PIPELINES", capsys)

    assert status == 1
    assert lines == [
        f"{template}: CairnLayer.CompatibleRuntimes: {python_runtime.DEFAULT}, but the functions run on {other} "
        f"(Globals.Function.Runtime): the layer's compiled dependencies and bytecode are built for {other} alone: "
        "list it only"
    ]


def test_a_function_on_its_own_runtime_is_refused(tmp_path: Path) -> None:
    """A function of the user's own, where they add it: above the phase functions."""
    other = next(runtime for runtime in python_runtime.SUPPORTED if runtime != python_runtime.DEFAULT)
    own = (
        "  ReportFunction:\n    Type: AWS::Serverless::Function\n    Properties:\n      CodeUri: functions/\n"
        f"      Handler: api.app.handler\n      Runtime: {other}\n"
    )
    template = copy_of_template(tmp_path, "Resources:\n", "Resources:\n" + own)
    assert check(template, PIPELINES, FUNCTIONS) == [
        f"ReportFunction.Runtime: '{other}', but the layer is built for {python_runtime.DEFAULT} "
        "(Globals.Function.Runtime): remove it, the runtime is chosen once for every function"
    ]


@pytest.mark.parametrize(
    ("runtime", "why"),
    [
        ("python3.11", "'python3.11' is not a runtime cairn supports: choose python3.12 or python3.13"),
        (python_runtime.NEXT, f"{python_runtime.NEXT} is not supported yet"),
    ],
)
def test_a_runtime_cairn_does_not_support_is_refused(tmp_path: Path, runtime: str, why: str) -> None:
    text = python_runtime.set_runtime(TEMPLATE.read_text(encoding="utf-8"), runtime)
    template = copy_of_template(tmp_path)
    template.write_text(text, encoding="utf-8")
    (problem,) = check(template, PIPELINES, FUNCTIONS)
    assert problem.startswith(f"Globals.Function.Runtime: {why}")


def test_a_template_without_a_runtime_is_refused(tmp_path: Path) -> None:
    template = copy_of_template(tmp_path, CHOSEN, "")
    problems = check(template, PIPELINES, FUNCTIONS)
    assert "Globals.Function.Runtime: not set: set it to python3.12 or python3.13, the one runtime every function " in (
        "\n".join(problems)
    )


def test_an_older_cairn_s_layer_build_is_refused_under_another_runtime_than_python312(tmp_path: Path) -> None:
    template = copy_of_template(tmp_path)
    (tmp_path / "layers").unlink()
    (tmp_path / "layers").mkdir()
    (tmp_path / "layers" / "Makefile").write_text(
        "PYTHON312 ?= $(shell command -v python3.12)\nbuild-CairnLayer:\n", encoding="utf-8"
    )
    problems = check(template, PIPELINES, FUNCTIONS)
    assert (
        "layers/Makefile: an older cairn's layer build, for python3.12 alone, but the functions run on "
        f"{python_runtime.DEFAULT} (Globals.Function.Runtime): run cairn init --layer-only . to rewrite layers/ for "
        "the template's runtime"
    ) in problems
