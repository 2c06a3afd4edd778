"""What a bundle's user reads on the getting-started pages, checked from the text (their commands run in
tests/docs/test_bundle_pages.py): no command of this repository's Makefile, only parameters a bundle's template has,
the own-bundle page's steps as a numbered list on the built site, and every documented ``curl`` that sends a body
naming its JSON content type (the API refuses another with 415)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import markdown  # type: ignore[import-untyped]  # Python-Markdown (what mkdocs renders with) has no stubs here
import pytest

from cairn.bundle.templating import cfnyaml
from tests.docs.examples import BUNDLE_PAGES, ROOT, pages, shell_blocks

#: The Markdown extensions mkdocs.yml builds the site with that shape lists and blocks.
EXTENSIONS = ("admonition", "attr_list", "tables", "toc", "pymdownx.superfences")


@pytest.mark.parametrize("page", BUNDLE_PAGES, ids=lambda page: page.name)
def test_a_bundle_page_s_commands_are_a_bundle_s(page: Path) -> None:
    blocks = shell_blocks(page)
    assert any(block.not_run is None for block in blocks), f"{page.name}: no command the docs tests run"
    for block in blocks:
        commands = [line.split("#", 1)[0].strip() for line in block.code.splitlines()]
        assert not [command for command in commands if re.match(r"(make|\.venv/bin/)", command)], (
            f"{page.name}:{block.line} uses this repository's Makefile or virtualenv; a bundle has neither"
        )
    text = page.read_text()
    assert not re.search(r"`make [a-z-]+", text), f"{page.name} names a make target; a bundle has no Makefile"


def test_the_bundle_pages_name_only_parameters_a_bundle_s_template_has() -> None:
    repository = set(cfnyaml.load((ROOT / "template.yaml").read_text())["Parameters"])
    bundle = set(cfnyaml.load((ROOT / "layers/cairn/cairn/bundle/skeleton/template.yaml").read_text())["Parameters"])
    named = {page.name: set(re.findall(r"`([A-Z][A-Za-z]+)(?:=[^`]*)?`", page.read_text())) for page in BUNDLE_PAGES}
    assert set().union(*named.values()) & bundle, "the pages name no parameter: this check looks at nothing"
    lacking = {page: sorted((names & repository) - bundle) for page, names in named.items()}
    assert not any(lacking.values()), f"parameters a bundle's template does not have: {lacking}"


class _Lists(HTMLParser):
    """The items of each top-level ordered list, by their first bold words."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.lists: list[list[str]] = []
        self._bold = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in {"ol", "ul"}:
            self.depth += 1
            if tag == "ol" and self.depth == 1:
                self.lists.append([])
        elif tag == "li" and self.depth == 1 and self.lists:
            self.lists[-1].append("")
        elif tag == "strong":
            self._bold = True

    def handle_endtag(self, tag: str) -> None:
        if tag in {"ol", "ul"}:
            self.depth -= 1
        elif tag == "strong":
            self._bold = False

    def handle_data(self, data: str) -> None:
        if self._bold and self.depth == 1 and self.lists and self.lists[-1] and not self.lists[-1][-1]:
            self.lists[-1][-1] = data.strip()


def test_the_own_bundle_page_s_five_steps_render_as_a_numbered_list() -> None:
    text = (ROOT / "docs" / "getting-started" / "own-bundle.md").read_text()
    section = text[text.index("## Adding a pipeline") :]
    parser = _Lists()
    parser.feed(markdown.markdown(section, extensions=list(EXTENSIONS)))
    assert parser.lists == [["Scaffold it.", "Write the phases", "Sync the template", "Check", "Deploy"]]


def _curl_commands(text: str) -> list[str]:
    """Each ``curl`` command of ``text``, its continued lines joined."""
    joined = re.sub(r"\s*\\\n\s*", " ", text)
    return [match.group(0) for match in re.finditer(r"curl [^\n`]*", joined)]


def _sends_a_form(command: str) -> bool:
    """Whether ``command`` sends a body without naming it JSON (curl then sends it as a form)."""
    with_body = re.search(r"\s(-d|--data\S*)\s", command)
    as_json = re.search(r"-H '?content-type: application/json", command, flags=re.IGNORECASE)
    return bool(with_body) and not as_json


def test_every_documented_curl_with_a_body_sends_json() -> None:
    found = [(page, command) for page in pages() for command in _curl_commands(page.read_text())]
    assert any(re.search(r"\s-d\s", command) for _, command in found), "no documented curl sends a body"
    wrong = [f"{page.relative_to(ROOT)}: {command}" for page, command in found if _sends_a_form(command)]
    assert not wrong, "a body without -H 'Content-Type: application/json' is sent as a form, and refused: 415"


def test_the_curl_check_tells_a_form_from_json() -> None:
    (bare,) = _curl_commands("run: `curl -X POST $API/jobs -d '{}'`")
    assert _sends_a_form(bare)
    (continued,) = _curl_commands("curl -X POST $API/x \\\n  -H 'Content-Type: application/json' -d '{}'  # ok")
    assert continued == "curl -X POST $API/x -H 'Content-Type: application/json' -d '{}'  # ok"
    assert not _sends_a_form(continued)
    assert not _sends_a_form("curl $API/health")
