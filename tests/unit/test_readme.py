"""The README's examples run as written."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_the_readme_pipeline_example_runs_and_prints_its_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = python_blocks()
    assert len(blocks) >= 2, "the README should show a pipeline and how to run it"
    monkeypatch.chdir(tmp_path)
    output = io.StringIO()
    namespace: dict[str, object] = {"__name__": "readme_example"}
    with contextlib.redirect_stdout(output):
        for block in blocks:
            exec(compile(block, str(README), "exec"), namespace)
    assert output.getvalue().strip() == "{'count': 3}"
    assert (tmp_path / ".cairn" / "jobs" / "job-1.json").is_file()
