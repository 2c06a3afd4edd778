"""``cairn template check`` names a mistake in the hand-written part of template.yaml: resource, property, fix.

Each test runs the command as a user does (``python -m cairn template check --template ...``, in a
subprocess) on a copy of the bundle whose template has one mistake that cfn-lint and ``sam build``
let through, and that ``cairn dev`` and a deployed stack would only show as errors at run time.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cairn.bundle.templating import check
from pipelines import PIPELINES
from tests.template.cfn import ROOT, TEMPLATE
from tests.template.test_template_check import FUNCTIONS, bundle_with


def cairn_check(template: Path) -> tuple[int, list[str]]:
    """``python -m cairn template check --template TEMPLATE`` in the template's folder: status, stderr lines."""
    done = subprocess.run(
        [sys.executable, "-m", "cairn", "template", "check", "--template", str(template)],
        cwd=template.parent,
        env={**os.environ, "PYTHONPATH": str(ROOT / "layers" / "cairn")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stderr.splitlines()


def with_mistake(tmp_path: Path, pattern: str, replacement: str) -> Path:
    """A copy of the bundle whose template has the first match of ``pattern`` replaced."""
    text = TEMPLATE.read_text(encoding="utf-8")
    changed, count = re.subn(pattern, replacement, text, count=1, flags=re.MULTILINE)
    assert count == 1, pattern
    return bundle_with(tmp_path, changed)


API_CODE = r"(      CodeUri: )functions/(\n      Handler: api\.app\.handler)"


@pytest.mark.parametrize(
    ("pattern", "replacement", "expected"),
    [
        pytest.param(
            r"Handler: api\.app\.handler",
            "Handler: api.ap.handler",
            "ApiFunction.Handler: 'api.ap.handler' does not resolve in functions/ (no module api/ap.py): "
            "set Handler to MODULE.FUNCTION of a file under functions/",
            id="api-handler",
        ),
        pytest.param(
            r"Handler: scheduler\.app\.handler",
            "Handler: scheduler.app.handlr",
            "SchedulerFunction.Handler: 'scheduler.app.handlr' does not resolve in functions/ (module "
            "'scheduler.app' has no attribute 'handlr'): set Handler to MODULE.FUNCTION of a file under functions/",
            id="scheduler-handler",
        ),
        pytest.param(
            API_CODE,
            r"\1functons/\2",
            "ApiFunction.CodeUri: folder 'functons/' does not exist (paths are relative to the folder of "
            "template.yaml): set CodeUri to the folder of the function's code",
            id="code-uri",
        ),
        pytest.param(
            r"^Conditions:\n",
            'Conditions:\n  HasOldSample: !Not [!Equals [!Ref Driver, ""]]\n',
            "Conditions.HasOldSample: declared but used nowhere (left by a removed pipeline?): remove it, or run "
            "cairn template sync",
            id="leftover-condition",
        ),
        pytest.param(
            r"^        CAIRN_DELAY_QUEUE_URL: .*\n",
            "",
            "ApiFunction.Environment.Variables: CAIRN_DELAY_QUEUE_URL not set (cairn reads it): set it in "
            "Globals.Function.Environment.Variables, as the bundle's template does",
            id="required-variable",
        ),
        pytest.param(
            r"DefinitionUri: \S+",
            "DefinitionUri: statemachine/pipline.asl.json",
            "PipelineStateMachine.DefinitionUri: file 'statemachine/pipline.asl.json' does not exist (paths are "
            "relative to the folder of template.yaml): set DefinitionUri to the state machine's definition file",
            id="definition-uri",
        ),
        pytest.param(
            r"ContentUri: \S+",
            "ContentUri: layer/",
            "CairnLayer.ContentUri: folder 'layer/' does not exist",
            id="content-uri",
        ),
    ],
)
def test_a_mistake_in_the_hand_written_part_is_named(
    tmp_path: Path, pattern: str, replacement: str, expected: str
) -> None:
    template = with_mistake(tmp_path, pattern, replacement)
    status, lines = cairn_check(template)
    assert status == 1, lines
    assert [line for line in lines if line.startswith(f"{template}: {expected}")], "\n".join(lines)


def test_a_missing_variable_is_named_on_every_function_that_misses_it(tmp_path: Path) -> None:
    template = with_mistake(tmp_path, r"^        CAIRN_TABLE_NAME: .*\n", "")
    status, lines = cairn_check(template)
    assert status == 1
    named = {line.split(": ")[1].split(".")[0] for line in lines if "CAIRN_TABLE_NAME not set" in line}
    assert {"ApiFunction", "SchedulerFunction", "DocumentIntakeFetchFunction"} <= named
    assert len(named) == template.read_text(encoding="utf-8").count("Type: AWS::Serverless::Function")


def test_a_variable_the_function_sets_itself_counts(tmp_path: Path) -> None:
    """Globals and the function's own variables are merged, as SAM merges them."""
    text = TEMPLATE.read_text(encoding="utf-8")
    found = re.search(r"^        CAIRN_DELAY_QUEUE_URL: .*\n", text, flags=re.MULTILINE)
    assert found is not None
    text = text.replace(found.group(0), "")
    handler = text.index("      Handler: ", text.index("  ApiFunction:\n"))
    text = text[:handler] + f"      Environment:\n        Variables:\n  {found.group(0)}" + text[handler:]
    missing = [
        problem.split(".")[0]
        for problem in check(bundle_with(tmp_path, text), PIPELINES, FUNCTIONS)
        if "CAIRN_" in problem
    ]
    assert "ApiFunction" not in missing
    assert "SchedulerFunction" in missing


def test_an_unused_parameter_is_named_and_one_only_an_unused_condition_reads_too(tmp_path: Path) -> None:
    text = TEMPLATE.read_text(encoding="utf-8")
    # Where a user adds their own: a parameter after cairn's machinery, a condition above cairn's.
    text += "  Forgotten:\n    Type: String\n    Default: x\n"
    text = text.replace("Conditions:\n", 'Conditions:\n  IsForgotten: !Equals [!Ref Forgotten, "y"]\n', 1)
    status, lines = cairn_check(bundle_with(tmp_path, text))
    assert status == 1
    assert [line.split(": ", 1)[1].split(":")[0] for line in lines] == [
        "Parameters.Forgotten",
        "Conditions.IsForgotten",
    ]


@pytest.mark.parametrize(
    ("content", "definition"),
    [
        pytest.param("build/layer/", "layers/cairn/cairn/aws/pipeline.asl.json", id="staged-layer"),
        pytest.param("layers/", "statemachine/pipeline.asl.json", id="makefile-layer"),
    ],
)
def test_the_layer_and_definition_paths_of_either_layout_pass(tmp_path: Path, content: str, definition: str) -> None:
    """The staged layer (build/layer/, made by the build: .gitignore ignores it) or layers/ with its Makefile."""
    text = re.sub(r"ContentUri: \S+", f"ContentUri: {content}", TEMPLATE.read_text(encoding="utf-8"), count=1)
    text = re.sub(r"DefinitionUri: \S+", f"DefinitionUri: {definition}", text, count=1)
    source = next(
        path
        for path in (ROOT / "statemachine" / "pipeline.asl.json", ROOT / "layers/cairn/cairn/aws/pipeline.asl.json")
        if path.is_file()
    )
    # The definition and an empty layer folder of each layout, in a copy whose code links to this bundle's.
    (tmp_path / definition).parent.mkdir(parents=True)
    shutil.copy(source, tmp_path / definition)
    (tmp_path / "layers").mkdir(exist_ok=True)
    shutil.copy(ROOT / ".gitignore", tmp_path / ".gitignore")
    template = bundle_with(tmp_path, text, links=("functions",))

    def located() -> list[str]:  # the staged layer is also a change to cairn's machinery, named on its own line
        found = check(template, PIPELINES, FUNCTIONS)
        return [problem.split(" (")[0] for problem in found if "machinery" not in problem]

    assert located() == []
    (tmp_path / ".gitignore").unlink()
    expected = [f"CairnLayer.ContentUri: folder '{content}' does not exist"] if content.startswith("build/") else []
    assert located() == expected
