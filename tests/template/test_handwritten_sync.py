"""``cairn template sync`` removes the parameters and conditions only a removed pipeline used, and no other.

The bundle's copy drops research-brief from its registry (functions/pipelines.py), as a user who
no longer wants the sample does; its functions go with the sync, and so must its ``AgentModelId``
parameter and ``HasAgentModel`` condition, which nothing else uses (cfn-lint's W2001 and W8001).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from cairn.bundle.templating import section
from tests.template.cfn import ROOT, TEMPLATE
from tests.template.test_linters import cfn_lint
from tests.template.test_template_check import bundle_with

RESEARCH_BRIEF = ("from research_brief.pipeline import pipeline as research_brief\n", "        research_brief,\n")
#: A parameter of the user's own, with its comment, that nothing uses yet.
HAND_WRITTEN = '  # Kept for the next release.\n  ReportsBucket:\n    Type: String\n    Default: ""\n'


def without_research_brief(folder: Path, template: str) -> Path:
    """A copy of the bundle whose registry has document-intake only; its template is ``template``."""
    shutil.copytree(ROOT / "functions", folder / "functions", ignore=shutil.ignore_patterns("__pycache__"))
    registry = folder / "functions" / "pipelines.py"
    text = registry.read_text(encoding="utf-8")
    for line in RESEARCH_BRIEF:
        assert line in text
        text = text.replace(line, "")
    registry.write_text(text, encoding="utf-8")
    return bundle_with(folder, template, links=("layers", "statemachine", ".gitignore"))


def cairn_template(action: str, template: Path) -> subprocess.CompletedProcess[str]:
    """``python -m cairn template ACTION --template TEMPLATE`` in the bundle's folder."""
    return subprocess.run(
        [sys.executable, "-m", "cairn", "template", action, "--template", str(template)],
        cwd=template.parent,
        env={**os.environ, "PYTHONPATH": str(ROOT / "layers" / "cairn")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def block(text: str, first: str) -> str:
    """The lines of ``text`` from the line ``first`` up to the next declaration of its section (a line indented
    as ``first`` is), comments above that one included."""
    start = text.index(first)
    indent = len(first) - len(first.lstrip())
    lines = text[start:].splitlines(keepends=True)
    end = 1
    while end < len(lines):
        line = lines[end]
        if line.strip() and not line.startswith(" " * (indent + 1)):
            break
        end += 1
    while end > 1 and lines[end - 1].lstrip().startswith("#"):  # a comment above the next declaration is its own
        end -= 1
    return "".join(lines[:end])


def test_a_removed_pipelines_parameter_and_condition_go_with_it(tmp_path: Path) -> None:
    before = TEMPLATE.read_text(encoding="utf-8")
    template = without_research_brief(tmp_path, before)
    synced = cairn_template("sync", template)
    assert synced.returncode == 0, synced.stderr
    printed = synced.stdout.splitlines()
    assert f"{template}: removed Parameters.AgentModelId (only the generated section used it)" in printed
    assert f"{template}: removed Conditions.HasAgentModel (only the generated section used it)" in printed
    after = template.read_text(encoding="utf-8")
    assert "AgentModel" not in after
    # Outside the generated section only the two declarations went: every other line, comment and layout stays.
    parameter = block(before, "  AgentModelId:\n")
    condition = block(before, "  HasAgentModel:")
    expected = section.without(before).replace(parameter, "").replace(condition, "")
    assert section.without(after) == expected
    assert "HasDocumentsBucket: !Not [!Equals [!Ref DocumentsBucket" in after  # document-intake still uses them
    checked = cairn_template("check", template)
    assert checked.returncode == 0, checked.stderr
    assert cfn_lint(after) == []
    assert cairn_template("sync", template).stdout.splitlines()[-1].startswith(f"{template}: already in sync")


def test_a_hand_written_unused_parameter_stays_for_the_check_to_name(tmp_path: Path) -> None:
    end = "  # <<< cairn machinery: stack\n"  # a parameter of the owner's goes after cairn's
    before = TEMPLATE.read_text(encoding="utf-8").replace(end, end + HAND_WRITTEN, 1)
    template = without_research_brief(tmp_path, before)
    synced = cairn_template("sync", template)
    assert synced.returncode == 0, synced.stderr
    after = template.read_text(encoding="utf-8")
    assert end + HAND_WRITTEN in after
    assert "AgentModelId" not in after
    checked = cairn_template("check", template)
    assert checked.returncode == 1
    assert checked.stderr.splitlines() == [
        f"{template}: Parameters.ReportsBucket: declared but used nowhere (left by a removed pipeline?): remove it, "
        "or run cairn template sync"
    ]
