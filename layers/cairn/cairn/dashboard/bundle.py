"""The dashboard's modules combined into one script, so that a first load is one request for its code.

The source stays native ES modules (``static/*.js``, each importing the others by relative URL): a developer
edits them as they are, and nothing but Python is needed to serve them. The page, as served, loads one module
script instead: :func:`combine` puts every module the entry imports (directly or not) into one text, each in
a function scope of its own (so names private to two modules never collide), in an order where a module comes
after the modules it imports; its imports become reads of their exports, its ``export`` keywords go, and it
ends by returning what it exports.

It is combined when it is first asked for, from the files as they are, and kept while they are unchanged
(:func:`combined`, cached by content) rather than at package build time: ``sam build`` and ``cairn dev`` need
no step of their own (nothing but Python, no Node), ``cairn dev`` sees an edited module at the next load, and
the three servers of the page (``cairn dev``, ``cairn dashboard``, the deployed API) serve the same bytes
from the same function. Combining the shipped modules takes a few milliseconds, once per process.

The combiner is strict, not general: it handles the forms the modules use (``import { a, b as c } from
"./x.js"`` on one line or several, ``import * as x from``, ``import "./x.js"``, and ``export`` before a
``function``, ``async function``, ``class`` or ``const``) and raises :class:`BundleError`, naming the module and
line, for any other (a default export, an export list, ``export let``, a dynamic import, ``import.meta``, an
import cycle, a name the imported module does not export). It reads statements by line: an import or an
export starts its line, as the modules write them (one indented, or a line so starting inside a template
literal, is refused). Exports are ``const``, functions and classes only, so a module's exports read once are
what a live binding would read. The result is deterministic: the same files give the same bytes, hence the
same content hash in the script's URL. No library is used: those that combine ES modules run on Node or
ship a native program, which the runtime must not need.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

SCOPE_PREFIX = "__cairn_module_"
"""The prefix of the one name each module gets in the combined script; no module may use it itself."""

_IMPORT_START = re.compile(r"^import\b")
_EXPORT_START = re.compile(r"^export\b")
_NAMED_IMPORT = re.compile(
    r"^import\s*\{(?P<names>[^}]*)\}\s*from\s*(?P<q>[\"'])(?P<spec>[^\"']+)(?P=q)\s*;?\s*$", re.S
)
_NAMESPACE_IMPORT = re.compile(
    r"^import\s+\*\s+as\s+(?P<name>[A-Za-z_$][\w$]*)\s+from\s*(?P<q>[\"'])(?P<spec>[^\"']+)(?P=q)\s*;?\s*$"
)
_BARE_IMPORT = re.compile(r"^import\s*(?P<q>[\"'])(?P<spec>[^\"']+)(?P=q)\s*;?\s*$")
_DECLARATION = re.compile(
    r"^export\s+(?P<kind>async\s+function\s*\*?|function\s*\*?|class|const)\s*(?P<name>[A-Za-z_$][\w$]*)(?![\w$])"
)
_IMPORTED_NAME = re.compile(r"^(?P<name>[A-Za-z_$][\w$]*)(?:\s+as\s+(?P<local>[A-Za-z_$][\w$]*))?$")
_SPEC = re.compile(r"^\./(?P<file>[\w][\w.-]*\.js)$")
_UNHANDLED_ANYWHERE = re.compile(r"\bimport\s*\(|\bimport\s*\.\s*meta\b|^[ \t]+(?:import|export)\s+[\w${*\"']", re.M)


class BundleError(ValueError):
    """A module uses a form the combiner does not handle, or its imports cannot be combined (names the line)."""

    def __init__(self, module: str, line: int, message: str) -> None:
        super().__init__(f"{module}:{line}: {message}")
        self.module = module
        self.line = line


@dataclass(frozen=True)
class _Import:
    """One import statement: the module it names and the names it binds (``exported -> local``)."""

    file: str
    names: tuple[tuple[str, str], ...]
    namespace: str | None
    line: int


@dataclass(frozen=True)
class _Module:
    """A module read for combining: its imports, the names it exports and its body without either keyword."""

    file: str
    imports: tuple[_Import, ...]
    exports: tuple[str, ...]
    body: str


def scope_name(file: str) -> str:
    """The name a module's exports have in the combined script (``view-job.js`` -> ``__cairn_module_view_job``)."""
    return SCOPE_PREFIX + re.sub(r"[^\w$]", "_", file.removesuffix(".js"))


def combine(entry: str, sources: Mapping[str, str]) -> str:
    """The modules ``entry`` imports (directly or not) and ``entry`` itself as one module script's text.

    ``sources`` maps each file name of the folder to its text. Raises :class:`BundleError` for a form the
    combiner does not handle, a missing module, an import cycle, or a name a module does not export.
    """
    modules: dict[str, _Module] = {}
    order: list[str] = []
    _visit(entry, sources, modules, order, visiting=(), importer=(entry, 0))
    names = [scope_name(file) for file in order]
    if len(set(names)) != len(names):
        raise BundleError(entry, 0, f"two modules share a name in the combined script: {sorted(names)}")
    parts = [
        f"// The dashboard's {len(order)} modules in one script (cairn.dashboard.bundle); the source is each file.\n"
    ]
    parts.extend(_scoped(modules[file], modules) for file in order)
    return "".join(parts)


def _visit(
    file: str,
    sources: Mapping[str, str],
    modules: dict[str, _Module],
    order: list[str],
    visiting: tuple[str, ...],
    importer: tuple[str, int],
) -> None:
    """Read ``file`` and, first, every module it imports; append each to ``order`` after its imports."""
    if file in modules:
        return
    if file in visiting:
        raise BundleError(importer[0], importer[1], f"import cycle: {' -> '.join((*visiting, file))}")
    if file not in sources:
        raise BundleError(importer[0], importer[1], f"imports {file}, which is not in the folder")
    module = parse(file, sources[file])
    for imported in module.imports:
        _visit(imported.file, sources, modules, order, (*visiting, file), (file, imported.line))
    for imported in module.imports:
        missing = [name for name, _ in imported.names if name not in modules[imported.file].exports]
        if missing:
            raise BundleError(file, imported.line, f"{imported.file} does not export {', '.join(missing)}")
    modules[file] = module
    order.append(file)


def parse(file: str, text: str) -> _Module:
    """A module's imports, exports and body; :class:`BundleError` for a form the combiner does not handle."""
    if SCOPE_PREFIX in text:
        raise BundleError(file, _line_of(text, text.index(SCOPE_PREFIX)), f"uses the reserved prefix {SCOPE_PREFIX}")
    unhandled = _UNHANDLED_ANYWHERE.search(text)
    if unhandled:
        raise BundleError(file, _line_of(text, unhandled.start()), f"unhandled form: {unhandled.group().strip()!r}")
    lines = text.split("\n")
    _check_outside_templates(file, lines)
    imports: list[_Import] = []
    exports: list[str] = []
    body: list[str] = []
    at = 0
    while at < len(lines):
        line = lines[at]
        if _IMPORT_START.match(line):
            statement, taken = _statement(lines, at)
            imports.append(_parse_import(file, at + 1, statement))
            body.extend([""] * taken)  # kept as blank lines: the module's lines keep their numbers
            at += taken
            continue
        if _EXPORT_START.match(line):
            declared = _DECLARATION.match(line)
            if declared is None:
                raise BundleError(file, at + 1, f"unhandled export form: {line.strip()!r}")
            exports.append(declared["name"])
            line = line.removeprefix("export").lstrip()
        body.append(line)
        at += 1
    if len(set(exports)) != len(exports):
        raise BundleError(file, 0, "exports a name twice")
    return _Module(file, tuple(imports), tuple(exports), "\n".join(body))


def _check_outside_templates(file: str, lines: list[str]) -> None:
    """:class:`BundleError` for a line that starts like an import or export inside a template literal (an odd
    count of backticks before it): the combiner reads statements by line and would take it for one."""
    backticks = 0
    for number, line in enumerate(lines, start=1):
        if backticks % 2 and (_IMPORT_START.match(line) or _EXPORT_START.match(line)):
            raise BundleError(file, number, "a line starting with import or export inside a template literal")
        backticks += len(re.findall(r"(?<!\\)`", line))


def _statement(lines: list[str], at: int) -> tuple[str, int]:
    """The import statement starting at line ``at`` (it may span lines up to its ``;``) and its line count."""
    taken = 1
    statement = lines[at]
    while not statement.rstrip().endswith(";") and at + taken < len(lines) and taken < 50:
        statement += "\n" + lines[at + taken]
        taken += 1
    return statement, taken


def _parse_import(file: str, line: int, statement: str) -> _Import:
    """One import statement read; :class:`BundleError` for a default import or a non-relative specifier."""
    named = _NAMED_IMPORT.match(statement)
    namespace = _NAMESPACE_IMPORT.match(statement)
    bare = _BARE_IMPORT.match(statement)
    found = named or namespace or bare
    if found is None:
        raise BundleError(file, line, f"unhandled import form: {statement.strip()!r}")
    spec = _SPEC.match(found["spec"])
    if spec is None:
        raise BundleError(file, line, f"imports {found['spec']!r}: only a file beside it (./name.js) is combined")
    names: list[tuple[str, str]] = []
    if named:
        for part in (part.strip() for part in named["names"].split(",")):
            if not part:
                continue
            each = _IMPORTED_NAME.match(part)
            if each is None or each["name"] == "default":
                raise BundleError(file, line, f"unhandled imported name: {part!r}")
            names.append((each["name"], each["local"] or each["name"]))
    return _Import(spec["file"], tuple(names), namespace["name"] if namespace else None, line)


def _scoped(module: _Module, modules: Mapping[str, _Module]) -> str:
    """A module in its own function scope: its imports read first, its body, then its exports returned."""
    head = [f"\n// {module.file}\nconst {scope_name(module.file)} = (() => {{\n"]
    for imported in module.imports:
        source = scope_name(imported.file)
        if imported.namespace:
            head.append(f"const {imported.namespace} = {source};\n")
        if imported.names:
            bound = ", ".join(name if name == local else f"{name}: {local}" for name, local in imported.names)
            head.append(f"const {{ {bound} }} = {source};\n")
    exported = ", ".join(module.exports)
    return "".join(head) + module.body.rstrip("\n") + f"\nreturn Object.freeze({{ {exported} }});\n}})();\n"


def _line_of(text: str, offset: int) -> int:
    """The 1-based line number of a character offset."""
    return text.count("\n", 0, offset) + 1


@functools.lru_cache(maxsize=4)
def combined(entry: str, sources: tuple[tuple[str, str], ...]) -> bytes:
    """:func:`combine` of ``sources`` (name, text pairs) as UTF-8, made once per content and kept."""
    return combine(entry, dict(sources)).encode()
