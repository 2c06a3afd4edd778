"""The README stays a front page: at most 200 lines, the rest in docs/."""

from __future__ import annotations

import re

from tests.docs.examples import DOCS, README, README_MAX_LINES, readme_lines


def test_the_readme_has_at_most_200_lines() -> None:
    assert readme_lines() <= README_MAX_LINES, f"README.md has {readme_lines()} lines: move a section into docs/"


def test_every_link_of_the_readme_into_the_docs_names_a_page_that_exists() -> None:
    links = re.findall(r"\]\((docs/[^)#]+)", README.read_text())
    assert links
    missing = [link for link in links if not (DOCS.parent / link).exists()]
    assert not missing
