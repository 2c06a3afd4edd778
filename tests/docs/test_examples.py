"""Every example runs: the ```python blocks of README.md and docs/**/*.md, each page's blocks in order in one
namespace (a later block uses what an earlier one defined), in an empty working directory."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from tests.docs.examples import NOT_RUN, ROOT, examples, pages, pages_with_examples


@pytest.mark.parametrize("page", pages_with_examples(), ids=lambda page: str(page.relative_to(ROOT)))
def test_the_python_examples_of_a_page_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"docs_example_{page.stem}"}
    with contextlib.redirect_stdout(io.StringIO()):
        for example in examples(page):
            if example.not_run is None:
                exec(compile(example.code, f"{page}:{example.line}", "exec"), namespace)


def test_the_documentation_has_examples_and_few_are_left_unrun() -> None:
    found = [example for page in pages() for example in examples(page)]
    marked = [example for example in found if example.not_run is not None]
    assert len(found) >= 20
    assert len(marked) <= 3, [f"{example.page}:{example.line} {example.not_run}" for example in marked]


def test_a_marker_of_an_example_not_run_says_why() -> None:
    assert NOT_RUN.fullmatch("<!-- not run: it calls Amazon Bedrock -->")
    assert not NOT_RUN.fullmatch("<!-- not run: -->")
