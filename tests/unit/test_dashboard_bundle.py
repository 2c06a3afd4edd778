"""The dashboard's modules combined into one script (cairn.dashboard.bundle): every form the modules use, each
module in a scope of its own, and every other form refused with the module and line that uses it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cairn.dashboard import assets
from cairn.dashboard.bundle import SCOPE_PREFIX, BundleError, combine, scope_name

SCOPE = re.compile(rf"^const ({SCOPE_PREFIX}[\w$]+) = \(\(\) => \{{$", re.M)


def shipped() -> dict[str, str]:
    folder = Path(str(assets.static_folder()))
    return {path.name: path.read_text(encoding="utf-8") for path in folder.glob("*.js")}


def test_every_shipped_module_is_combined_once_under_a_name_of_its_own() -> None:
    sources = shipped()

    script = combine("app.js", sources)

    scopes = SCOPE.findall(script)
    assert sorted(scopes) == sorted(scope_name(name) for name in sources)  # each module, none twice
    assert len(set(scopes)) == len(scopes)
    assert scopes[-1] == scope_name("app.js")  # the entry runs last, after everything it imports
    assert not re.search(r"^(?:import|export)\b", script, re.M)
    assert combine("app.js", dict(reversed(list(sources.items())))) == script  # the same bytes every time


def test_a_module_comes_after_those_it_imports_and_reads_their_exports() -> None:
    sources = {
        "app.js": 'import { h, make as build } from "./dom.js";\nimport {\n  LIMIT,\n} from "./limits.js";\n'
        'import * as all from "./limits.js";\nimport "./side.js";\nh(build(LIMIT, all.LIMIT));\n',
        "dom.js": 'import { LIMIT } from "./limits.js";\nexport function h() {}\n'
        "export async function make(a) { return a + LIMIT; }\nexport class Box {}\nconst hidden = 1;\n",
        "limits.js": "export const LIMIT = 3;\nconst hidden = 2;\n",
        "side.js": "document.title = 'x';\n",
    }

    script = combine("app.js", sources)

    assert SCOPE.findall(script) == [scope_name(name) for name in ("limits.js", "dom.js", "side.js", "app.js")]
    assert f"const {{ h, make: build }} = {scope_name('dom.js')};" in script
    assert f"const {{ LIMIT }} = {scope_name('limits.js')};" in script
    assert f"const all = {scope_name('limits.js')};" in script
    assert "return Object.freeze({ h, make, Box });" in script
    assert "async function make(a)" in script
    assert "class Box {}" in script
    assert script.count("const hidden") == 2  # private names stay in their module's scope


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("export default function () {}\n", "app.js:1: unhandled export form"),
        ("const a = 1;\nexport { a };\n", "app.js:2: unhandled export form"),
        ("export let counter = 0;\n", "app.js:1: unhandled export form"),
        ("export * from './dom.js';\n", "app.js:1: unhandled export form"),
        ('import h from "./dom.js";\n', "app.js:1: unhandled import form"),
        ('import { default as h } from "./dom.js";\n', "app.js:1: unhandled imported name"),
        ('\n\nconst m = await import("./dom.js");\n', "app.js:3: unhandled form"),
        ("const here = import.meta.url;\n", "app.js:1: unhandled form"),
        ("if (true) {\n  export const a = 1;\n}\n", "app.js:2: unhandled form"),
        ('import { h } from "https://cdn.example/dom.js";\n', "app.js:1: imports 'https://cdn.example/dom.js'"),
        ('import { h } from "./views/dom.js";\n', "app.js:1: imports './views/dom.js'"),
        ('import { g } from "./dom.js";\n', "app.js:1: dom.js does not export g"),
        ('import { h } from "./gone.js";\n', "app.js:1: imports gone.js, which is not in the folder"),
        (f"const {SCOPE_PREFIX}dom = 1;\n", "app.js:1: uses the reserved prefix"),
        ("const text = `\nexport const a = 1;\n`;\n", "app.js:2: a line starting with import or export inside"),
    ],
)
def test_a_form_it_does_not_handle_fails_naming_the_module_and_line(text: str, where: str) -> None:
    with pytest.raises(BundleError) as raised:
        combine("app.js", {"app.js": text, "dom.js": "export function h() {}\n"})

    assert str(raised.value).startswith(where)


def test_an_import_cycle_fails_naming_the_modules() -> None:
    sources = {
        "app.js": 'import { a } from "./a.js";\n',
        "a.js": 'import { b } from "./b.js";\nexport const a = 1;\n',
        "b.js": 'import { a } from "./a.js";\nexport const b = 2;\n',
    }

    with pytest.raises(BundleError, match=r"b\.js:1: import cycle: app\.js -> a\.js -> b\.js -> a\.js"):
        combine("app.js", sources)


def test_two_modules_whose_names_would_meet_in_the_script_are_refused() -> None:
    sources = {
        "app.js": 'import { a } from "./view-job.js";\nimport { b } from "./view_job.js";\n',
        "view-job.js": "export const a = 1;\n",
        "view_job.js": "export const b = 1;\n",
    }

    with pytest.raises(BundleError, match="share a name"):
        combine("app.js", sources)
