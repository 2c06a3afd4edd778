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


def section(title: str) -> str:
    """The README's section under ``## title``, up to the next one."""
    return README.read_text().split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def commands(text: str) -> list[str]:
    """The command lines of the first ``sh`` block of ``text`` (comments dropped)."""
    block = re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)[0]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_quick_start_is_two_commands() -> None:
    assert commands(section("Quick start")) == ["make demo", "make test"]


def test_your_own_bundle_goes_from_pip_install_to_a_deployed_stack_in_ten_lines_at_most() -> None:
    lines = commands(section("Your own bundle"))
    assert len(lines) <= 10
    assert "pip install" in lines[0]
    assert lines[0].endswith('layers/cairn[dev]"')
    assert any(line.startswith("cairn init ") for line in lines)
    assert any("sam build" in line for line in lines)
    assert lines[-1].startswith("sam deploy")
    assert not [line for line in lines if line.startswith("make ")], "a user's bundle has no Makefile"
