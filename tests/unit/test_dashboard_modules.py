"""The dashboard's script is native ES modules, no build step: each one small, and every import one the servers serve.

The page loads ``assets/app.js`` with ``<script type="module">``; the modules import each other by relative URL.
A module that imports a file that is missing, not served (an unknown kind of file, a hidden name), in a
subfolder (the deployed API's route ``/assets/{file}`` takes one path segment), or a name the file does not
export breaks the whole page in the browser: these tests say which one instead.

Each function of a module (a declaration, a function expression, an arrow function, a method) is short too: the
scanner below reads a module's tokens (strings, template literals with their substitutions, regular expressions
and comments skipped as JavaScript reads them) and pairs each function's brackets to count its lines.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from cairn.dashboard import assets

MAX_LINES = 500
"""A module is one view or one component: over this many lines it is two."""

MAX_FUNCTION_LINES = 80
"""A function does one job: over this many lines (its first to its last, both counted) it does two."""

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


SCRIPT_TOKEN = re.compile(
    r"(?P<space>(?:\s+|//[^\n]*|/\*.*?\*/)+)"
    r"|(?P<value>'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\")"
    r"|(?P<word>[\w$]+)"
    r"|(?P<punct>=>|.)",
    re.S,
)
"""A script's next token: spaces and comments (skipped), a string, a word or number, a punctuation mark."""
REGEX_LITERAL = re.compile(r"/(?:[^/\\\[\n]|\\.|\[(?:[^\]\\\n]|\\.)*\])+/[a-z]*")
"""A regular expression literal (a ``/`` escaped or in a character class does not end it), and its flags."""
TEMPLATE_TEXT = re.compile(r"(?:[^`\\$]|\\.|\$(?!\{))*(`|\$\{)", re.S)
"""A template literal's text, from its start or the end of a substitution, up to its end or its next ``${``."""
OPERATOR_WORDS = frozenset({"typeof", "instanceof", "in", "of", "new", "delete", "void", "await", "yield"})
"""Words that are operators: a value follows one, as it follows punctuation."""
BEFORE_REGEX = OPERATOR_WORDS | {"return", "throw", "case", "do", "else"}
"""Words after which a ``/`` begins a regular expression (after any other word, a value, it divides)."""
STATEMENT_HEADS = frozenset({"if", "for", "while", "switch", "catch", "with", "await"})
"""Words whose ``word (...) {`` is a statement's block, not a method."""
STATEMENT_STARTS = frozenset({"const", "let", "var", "if", "for", "while", "return", "export"})
"""Words that begin a statement: an arrow's expression body before one has ended (without a semicolon)."""
PAIRS = {")": "(", "]": "[", "}": "{"}
"""Each closing bracket and the one it closes (a ``}`` closes a template's ``${`` too)."""


@dataclass(frozen=True)
class Token:
    """A script's token: a ``word``, a ``punct`` (punctuation) or a ``value`` (a literal); its first and last lines."""

    text: str
    kind: str
    line: int
    last: int


@dataclass(frozen=True)
class Function:
    """A function of a script: its name (for one without, what it is) and its first and last lines."""

    name: str
    first: int
    last: int

    @property
    def lines(self) -> int:
        """How many lines it spans, the first and the last counted."""
        return self.last - self.first + 1


class UnreadableScriptError(ValueError):
    """A script the scanner cannot follow: a literal that does not end, brackets that do not pair."""


class Tokens:
    """A script read into tokens, one after another: :func:`tokens_of` reads them all."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.newlines = [at for at, char in enumerate(code) if char == "\n"]
        self.found: list[Token] = []
        self.substitutions: list[bool] = []  # per open "{" or "${": whether a template's text resumes at its "}"

    def line(self, at: int) -> int:
        """The line of the character at ``at`` (the first is 1)."""
        return bisect.bisect_right(self.newlines, at) + 1

    def add(self, text: str, kind: str, start: int, end: int) -> int:
        """Add the token that spans ``code[start:end]``; where the next one starts."""
        self.found.append(Token(text, kind, self.line(start), self.line(max(end - 1, start))))
        return end

    def starts_regex(self) -> bool:
        """Whether a ``/`` here begins a regular expression (else it divides)."""
        if not self.found:
            return True
        last = self.found[-1]
        if last.kind == "word":
            return last.text in BEFORE_REGEX
        return last.kind == "punct" and last.text not in PAIRS

    def regex(self, start: int) -> int:
        """Read the regular expression at ``start``; where it ends."""
        literal = REGEX_LITERAL.match(self.code, start)
        if literal is None:
            raise UnreadableScriptError(f"line {self.line(start)}: a regular expression does not end")
        return self.add(literal.group(), "value", start, literal.end())

    def template_text(self, start: int) -> int:
        """Read a template's text from ``start`` up to its end (a value) or its next ``${``; where it stops."""
        text = TEMPLATE_TEXT.match(self.code, start)
        if text is None:
            raise UnreadableScriptError(f"line {self.line(start)}: a template literal does not end")
        if text.group(1) == "`":
            return self.add("`", "value", start, text.end())
        self.substitutions.append(True)
        return self.add("${", "punct", start, text.end())

    def punctuation(self, text: str, start: int, end: int) -> int:
        """Read a punctuation mark (or the literal it begins); where the next token starts."""
        if text in "'\"":
            raise UnreadableScriptError(f"line {self.line(start)}: a string does not end")
        if text == "/" and self.starts_regex():
            return self.regex(start)
        if text == "`":
            return self.template_text(end)
        resumes = text == "}" and bool(self.substitutions) and self.substitutions.pop()
        if text == "{":
            self.substitutions.append(False)
        self.add(text, "punct", start, end)
        return self.template_text(end) if resumes else end


def tokens_of(code: str) -> list[Token]:
    """A script's tokens, without its comments; a template literal is its substitutions' tokens between
    ``${`` and ``}`` tokens, then a ``value`` token for its end."""
    tokens = Tokens(code)
    at = 0
    while at < len(code):
        found = SCRIPT_TOKEN.match(code, at)
        assert found is not None  # the last alternative takes any character
        kind, text = found.lastgroup or "", found.group()
        if kind == "punct":
            at = tokens.punctuation(text, at, found.end())
        elif kind == "space":
            at = found.end()
        else:
            at = tokens.add(text, kind, at, found.end())
    return tokens.found


def assigned_name(tokens: list[Token], at: int, otherwise: str) -> str:
    """The name a function starting at token ``at`` is given (``name = ...``, ``name: ...``); else ``otherwise``."""
    if at >= 2 and tokens[at - 1].text in {"=", ":"} and tokens[at - 2].kind == "word":
        return tokens[at - 2].text
    return otherwise


def arrow_start(tokens: list[Token], arrow: int, opened_at: dict[int, int]) -> Function:
    """The arrow function whose ``=>`` is token ``arrow``, from its parameters (its last line not known yet)."""
    start = opened_at.get(arrow - 1, arrow - 1)  # "(...) =>", else "parameter =>"
    if start > 0 and tokens[start - 1].text == "async":
        start -= 1
    line = tokens[start].line
    return Function(assigned_name(tokens, start, "arrow function"), line, line)


def body_of(tokens: list[Token], brace: int, opened_at: dict[int, int]) -> Function | None:
    """The function whose body the ``{`` at ``brace`` opens (its last line not known yet); None for another block."""
    before = tokens[brace - 1] if brace else None
    if before is None or before.text not in {"=>", ")"}:
        return None
    if before.text == "=>":
        return arrow_start(tokens, brace - 1, opened_at)
    head = opened_at[brace - 1] - 1  # what comes before the parameters' "("
    word = tokens[head] if head >= 0 else None
    if word is None:
        return None
    if word.text == "function":  # function (...) {
        return Function(assigned_name(tokens, head, "function"), word.line, word.line)
    if word.kind == "word" and head and tokens[head - 1].text in {"function", "*"}:  # function name(...) {
        return Function(word.text, tokens[head - 1].line, word.line)
    if word.kind == "word" and word.text not in STATEMENT_HEADS:  # a method: name(...) {
        return Function(word.text, word.line, word.line)
    if word.text == "]":  # a method with a computed name: [key](...) {
        return Function("computed method", word.line, word.line)
    return None


def ends_expression(tokens: list[Token], at: int) -> bool:
    """Whether the token at ``at`` ends an arrow's expression body at its depth of brackets (or deeper)."""
    token = tokens[at]
    if token.kind == "punct":
        return token.text in {",", ";"} or token.text in PAIRS
    return token.kind == "word" and token.text in STATEMENT_STARTS and tokens[at - 1].text != "."


def functions_of(code: str) -> list[Function]:
    """Every function of a script (declarations, function expressions, arrows, methods) and its first and last lines."""
    tokens = tokens_of(code)
    found: list[Function] = []
    brackets: list[tuple[int, Function | None]] = []  # each open bracket's token, and the function it is the body of
    opened_at: dict[int, int] = {}  # each closing bracket's token: the token of the bracket it closes
    arrows: list[tuple[Function, int]] = []  # arrows whose expression body is being read, and their depth
    for at, token in enumerate(tokens):
        while at and arrows and arrows[-1][1] >= len(brackets) and ends_expression(tokens, at):
            arrow = arrows.pop()[0]
            found.append(Function(arrow.name, arrow.first, tokens[at - 1].last))
        if token.kind != "punct":
            continue
        if token.text in {"(", "[", "{", "${"}:
            brackets.append((at, body_of(tokens, at, opened_at) if token.text == "{" else None))
        elif token.text in PAIRS:
            if not brackets or tokens[brackets[-1][0]].text.lstrip("$") != PAIRS[token.text]:
                raise UnreadableScriptError(f"line {token.line}: a {token.text} that closes no bracket of its kind")
            opened_at[at], body = brackets.pop()
            if body is not None:
                found.append(Function(body.name, body.first, token.line))
        elif token.text == "=>" and at + 1 < len(tokens) and tokens[at + 1].text != "{":
            arrows.append((arrow_start(tokens, at, opened_at), len(brackets)))
    if brackets:
        raise UnreadableScriptError(f"line {tokens[brackets[-1][0]].line}: a bracket that is never closed")
    found.extend(Function(arrow.name, arrow.first, tokens[-1].last) for arrow, _ in arrows)
    return found


def function_problems(folder: Path) -> list[str]:
    """The functions of the modules in ``folder`` that are too long (and the modules the scanner cannot read)."""
    problems = []
    for path in sorted(folder.rglob("*.js")):
        name = path.relative_to(folder).as_posix()
        try:
            functions = functions_of(path.read_text())
        except UnreadableScriptError as error:
            problems.append(f"{name}: {error}")
            continue
        problems.extend(
            f"{name}:{function.first} {function.name}: {function.lines} lines "
            f"(a function stays within {MAX_FUNCTION_LINES})"
            for function in functions
            if function.lines > MAX_FUNCTION_LINES
        )
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


SAMPLE_SCRIPT = """\
/* not code: function hidden() { */
export function declared(a, b = "}\\"") {
  const text = `${a} {${b.map((x) => `${x}}`).join("")}`;
  const pattern = /[{}/]+\\/{/g; // } not code either
  return text.replace(pattern, "{") / 2;
}
const expression = function () {
  return { key: "value" };
};
const arrow = async (one, two) =>
  one +
  two;
const single = (value) => [value, { nested: () => value }], after = 1;
const block = item => {
  return item;
};
class Poller {
  constructor(task) {
    this.task = task;
  }
  get running() {
    return false;
  }
  *[Symbol.iterator]() {}
}
const object = {
  method() {},
  async other() { if (true) { for (;;) {} } },
};
"""
"""Every kind of function, and braces in strings, templates, regular expressions and comments."""


def test_the_scanner_finds_each_kind_of_function_and_its_lines() -> None:
    found = sorted(functions_of(SAMPLE_SCRIPT), key=lambda function: (function.first, function.last))

    assert found == [
        Function("declared", 2, 6),
        Function("arrow function", 3, 3),
        Function("expression", 7, 9),
        Function("arrow", 10, 12),
        Function("nested", 13, 13),
        Function("single", 13, 13),
        Function("block", 14, 16),
        Function("constructor", 18, 20),
        Function("running", 21, 23),
        Function("computed method", 24, 24),
        Function("method", 27, 27),
        Function("other", 28, 28),
    ]


def test_every_function_of_the_dashboard_is_short() -> None:
    folder = Path(str(assets.static_folder()))
    names = {function.name for path in folder.glob("view-*.js") for function in functions_of(path.read_text())}

    assert {"jobView", "jobsView", "newJobView"} <= names, "the scanner finds the views' functions"
    assert function_problems(folder) == []


@pytest.mark.parametrize(
    ("head", "tail"),
    [
        ("export function long() {", "}"),
        ("export const long = (items) => {", "};"),
        ("export const long = (items) =>", ";"),
        ("export const tools = { long() {", "} };"),
    ],
    ids=["declaration", "arrow", "arrow-expression", "method"],
)
@pytest.mark.parametrize("lines", [MAX_FUNCTION_LINES, MAX_FUNCTION_LINES + 1])
def test_a_function_over_the_limit_is_reported(folder: Path, head: str, tail: str, lines: int) -> None:
    body = "  [\n" + "    1,\n" * (lines - 3) + "  ]"  # with the head's line and the last one: `lines` lines
    (folder / "long.js").write_text(f"{head}\n{body}{tail}\n")

    problems = function_problems(folder)

    expected = [f"long.js:1 long: {lines} lines (a function stays within {MAX_FUNCTION_LINES})"]
    assert problems == (expected if lines > MAX_FUNCTION_LINES else [])


@pytest.mark.parametrize(
    "text",
    ["const s = `never ends;\n", "const s = 'never ends;\n", "const r = /never ends\n", "function f() {\n", "f());\n"],
)
def test_a_script_the_scanner_cannot_follow_is_reported(folder: Path, text: str) -> None:
    (folder / "broken.js").write_text(text)

    assert [problem.split(": line")[0] for problem in function_problems(folder)] == ["broken.js"]
