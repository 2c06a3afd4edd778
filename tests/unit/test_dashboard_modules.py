"""The dashboard's script is native ES modules, no build step: each one small, and every import one the servers serve.

The page loads ``assets/app.js`` with ``<script type="module">``; the modules import each other by relative URL.
A module that imports a file that is missing, not served (an unknown kind of file, a hidden name), in a
subfolder (the deployed API's route ``/assets/{file}`` takes one path segment), or a name the file does not
export breaks the whole page in the browser: these tests say which one instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from cairn.dashboard import assets

MAX_LINES = 500
"""A module is one view or one component: over this many lines it is two."""

PAGE_URL = "http://dashboard.test/dashboard"
"""Where the page is (any of its addresses: the modules' URLs are relative to it)."""

MODULE_SCRIPT = re.compile(r"<script\b[^>]*\btype=[\"']module[\"'][^>]*\bsrc=[\"']([^\"']+)[\"']", re.I)
SCRIPT = re.compile(r"<script\b[^>]*>", re.I)
COMMENT = re.compile(r"/\*.*?\*/|^\s*//[^\n]*", re.S | re.M)
STATIC_IMPORT = re.compile(
    r"^\s*(?:import|export)\s+(?:(?P<names>\{[^}]*\}|\*\s+as\s+\w+|[\w$]+)\s+from\s+)?[\"'](?P<spec>[^\"']+)[\"']",
    re.M,
)
DYNAMIC_IMPORT = re.compile(r"\bimport\(\s*[\"'](?P<spec>[^\"']+)[\"']\s*\)")
EXPORTED = re.compile(r"^export\s+(?:async\s+)?(?:function\*?|const|let|var|class)\s+([\w$]+)", re.M)
EXPORT_LIST = re.compile(r"^export\s*\{([^}]*)\}", re.M)


@dataclass(frozen=True)
class Import:
    """One import of a module: what it asks for (``names``: the named imports) and where it points."""

    module: str
    spec: str
    names: tuple[str, ...]


def code_of(text: str) -> str:
    """A module's text without its comments (an example import in a comment is no import)."""
    return COMMENT.sub("", text)


def imports_of(module: str, text: str) -> list[Import]:
    """The static and dynamic imports (and re-exports) of a module."""
    code = code_of(text)
    found = []
    for match in STATIC_IMPORT.finditer(code):
        names = match.group("names") or ""
        named = names.startswith("{")
        wanted = tuple(part.split(" as ")[0].strip() for part in names.strip("{}").split(",")) if named else ()
        found.append(Import(module, match.group("spec"), tuple(name for name in wanted if name)))
    found.extend(Import(module, match.group("spec"), ()) for match in DYNAMIC_IMPORT.finditer(code))
    return found


def exports_of(text: str) -> set[str]:
    """The names a module exports (declarations and ``export { a, b as c }`` lists)."""
    code = code_of(text)
    names = set(EXPORTED.findall(code))
    for listed in EXPORT_LIST.findall(code):
        names.update(part.split(" as ")[-1].strip() for part in listed.split(",") if part.strip())
    return names


def asset_name(url: str) -> str | None:
    """The name under ``/assets/`` a URL of the page's origin points at; None for another origin or path."""
    parts = urlsplit(url)
    page = urlsplit(PAGE_URL)
    if (parts.scheme, parts.netloc) != (page.scheme, page.netloc) or not parts.path.startswith(assets.ASSETS_PREFIX):
        return None
    return parts.path.removeprefix(assets.ASSETS_PREFIX)


def module_problems(folder: Path) -> list[str]:
    """What is wrong with the modules in ``folder`` as the page loads them; empty when nothing is."""
    page = (folder / assets.INDEX).read_text()
    entries = MODULE_SCRIPT.findall(page)
    problems = [
        f"index.html: a script that is not a module: {tag}" for tag in SCRIPT.findall(page) if "module" not in tag
    ]
    if not entries:
        problems.append("index.html loads no <script type=module src=...>")
    modules = {path.relative_to(folder).as_posix(): path.read_text() for path in sorted(folder.rglob("*.js"))}
    for name, text in modules.items():
        lines = len(text.splitlines())
        if lines >= MAX_LINES:
            problems.append(f"{name}: {lines} lines (a module stays under {MAX_LINES})")

    reached: set[str] = set()
    pending: list[tuple[str, str, tuple[str, ...]]] = [
        (urljoin(PAGE_URL, entry), f"index.html ({entry})", ()) for entry in entries
    ]
    pending += [
        (urljoin(urljoin(PAGE_URL, assets.ASSETS_PREFIX + found.module), found.spec), found.module, found.names)
        for name, text in modules.items()
        for found in imports_of(name, text)
    ]
    for url, importer, names in pending:
        target = asset_name(url)
        if target is None:
            problems.append(f"{importer}: imports {url}, which is not one of the dashboard's files (/assets/...)")
            continue
        if "/" in target:
            problems.append(f"{importer}: imports {target}, in a subfolder (the API's /assets/{{file}} is one segment)")
        served = assets.asset_at(f"{assets.ASSETS_PREFIX}{target}")
        if served is None:
            problems.append(f"{importer}: imports {target}, which the dashboard's servers do not serve")
            continue
        if not served[1].startswith("text/javascript"):
            problems.append(f"{importer}: imports {target}, served as {served[1]}, not as a script")
        reached.add(target)
        missing = sorted(set(names) - exports_of(served[0].decode()))
        if missing:
            problems.append(f"{importer}: imports {', '.join(missing)} from {target}, which does not export it")
    problems.extend(f"{name}: no module imports it" for name in sorted(set(modules) - reached))
    return problems


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A dashboard of this test's: a page and its entry module, served from ``tmp_path``."""
    (tmp_path / "index.html").write_text('<script type="module" src="assets/app.js"></script>')
    (tmp_path / "app.js").write_text('import { h } from "./dom.js";\n// import { gone } from "./gone.js";\nh();\n')
    (tmp_path / "dom.js").write_text("/** Elements. */\nexport function h() {}\n")
    monkeypatch.setattr(assets, "static_folder", lambda: tmp_path)
    return tmp_path


def test_every_module_of_the_dashboard_is_small_imported_and_served() -> None:
    folder = Path(str(assets.static_folder()))
    modules = sorted(path.name for path in folder.rglob("*.js"))

    assert len(modules) > 10, "the dashboard is a set of modules, not one script"
    assert module_problems(folder) == []


def test_a_well_formed_dashboard_has_no_problem(folder: Path) -> None:
    assert module_problems(folder) == []


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("app.js", 'import { h } from "./gone.js";\n', "app.js: imports gone.js, which the dashboard's servers do not"),
        ("app.js", 'import { g } from "./dom.js";\n', "app.js: imports g from dom.js, which does not export it"),
        ("app.js", 'import "./notes.md";\n', "app.js: imports notes.md, which the dashboard's servers do not"),
        ("app.js", 'const v = await import("./.hidden.js");\n', "app.js: imports .hidden.js, which"),
        ("app.js", 'import { h } from "https://cdn.example/dom.js";\n', "app.js: imports https://cdn.example/dom.js"),
        ("app.js", 'import { h } from "./views/dom.js";\n', "app.js: imports views/dom.js, in a subfolder"),
        ("app.js", 'import { h } from "./dom.js";\n' + "h();\n" * MAX_LINES, f"app.js: {MAX_LINES + 1} lines"),
        ("orphan.js", "export const unused = 1;\n", "orphan.js: no module imports it"),
        ("index.html", '<script src="assets/app.js"></script>', "index.html: a script that is not a module"),
    ],
)
def test_a_broken_import_an_oversized_or_an_unused_module_is_reported(
    folder: Path, name: str, text: str, problem: str
) -> None:
    (folder / name).write_text(text)
    (folder / "views").mkdir()
    (folder / "views" / "dom.js").write_text("export function h() {}\n")  # served, but from a subfolder

    problems = module_problems(folder)

    assert any(found.startswith(problem) for found in problems), problems


def test_the_page_entry_is_the_module_index_html_loads() -> None:
    page = Path(str(assets.static_folder())).joinpath(assets.INDEX).read_text()

    assert MODULE_SCRIPT.findall(page) == ["assets/app.js"]
