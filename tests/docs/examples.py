"""The documentation's figures and examples: the README's length, the fenced Python blocks of README.md and
docs/**/*.md, the shell blocks of the pages a bundle's user follows, and the public names of ``cairn`` with their
docstrings.

Every ```` ```python ```` block runs (tests/docs/test_examples.py), and so does every ```` ```bash ```` (or
``shell``, ``sh``) block of :data:`BUNDLE_PAGES`, in a bundle made by ``cairn init`` (tests/docs/test_bundle_pages.py).
A block that cannot run as written (it calls a deployed model, or deploys to AWS, say) is marked on the line just
above its fence with ``<!-- not run: the reason -->``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_MAX_LINES = 200
NOT_RUN = re.compile(r"<!-- not run: (?P<reason>[^>]+) -->")
SERVES = "<!-- each line serves until stopped -->"
"""Above a shell block whose every line starts a server (``cairn dev``): the docs test starts each, waits until it
answers, and stops it with Ctrl-C."""
FENCE = re.compile(r"^```python\n(?P<code>.*?)^```$", flags=re.DOTALL | re.MULTILINE)
SHELL_FENCE = re.compile(r"^```(?:bash|shell|sh)\n(?P<code>.*?)^```$", flags=re.DOTALL | re.MULTILINE)
#: The pages whose commands a user types in a bundle made by ``cairn init``, in the order they are followed: the
#: first makes the bundle (from an empty folder), the next run in it.
BUNDLE_PAGES = (
    DOCS / "getting-started" / "own-bundle.md",
    DOCS / "getting-started" / "first-deploy.md",
    DOCS / "getting-started" / "local-stack.md",
)
#: Modules an application imports by name besides ``cairn``: each public name of their ``__all__`` is checked too.
PUBLIC_MODULES = ("cairn.adapters", "cairn.agents", "cairn.testing.plugin")


@dataclass(frozen=True)
class Example:
    """One fenced Python block: its page, its first line, its code, and why it does not run (if it does not)."""

    page: Path
    line: int
    code: str
    not_run: str | None
    serves: bool = False


def pages() -> list[Path]:
    """README.md and every Markdown page of docs/, in a stable order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def examples(page: Path, fence: re.Pattern[str] = FENCE) -> list[Example]:
    """The ```python blocks of ``page`` (or those ``fence`` matches, such as :data:`SHELL_FENCE`), in order."""
    text = page.read_text()
    found = []
    for match in fence.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = NOT_RUN.fullmatch(before.strip())
        line = text.count("\n", 0, match.start()) + 1
        reason = marker.group("reason") if marker else None
        found.append(Example(page, line, match.group("code"), reason, serves=before.strip() == SERVES))
    return found


def shell_blocks(page: Path) -> list[Example]:
    """The ```bash, ```shell and ```sh blocks of ``page``, in order."""
    return examples(page, SHELL_FENCE)


def pages_with_examples() -> list[Path]:
    """The pages with at least one block that runs."""
    return [page for page in pages() if any(example.not_run is None for example in examples(page))]


def readme_lines() -> int:
    """How many lines the README has."""
    return len(README.read_text().splitlines())


@dataclass(frozen=True)
class PublicName:
    """A public name: where it is exported, what it is, and its docstring ("" when it has none)."""

    qualified: str
    doc: str


def public_names() -> list[PublicName]:
    """Every name of ``cairn.__all__`` and of the public modules' ``__all__``, and the public methods and properties
    of the classes among them, each with its docstring (inherited from the port it implements, where it does)."""
    found: list[PublicName] = []
    for module_name in ("cairn", *PUBLIC_MODULES):
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            found.append(PublicName(f"{module_name}.{name}", docstring(module_name, name, value)))
            if inspect.isclass(value) and value.__module__.startswith("cairn"):
                found += members(f"{module_name}.{name}", value)
    return found


def docstring(module_name: str, name: str, value: object) -> str:
    """The docstring of a class, function or module; of anything else (a type alias, a constant), the string
    literal just below its assignment in the module that defines it."""
    if inspect.isclass(value) or inspect.isroutine(value) or inspect.ismodule(value):
        return inspect.getdoc(value) or ""
    module = importlib.import_module(module_name)
    exports: dict[str, str] = getattr(module, "_EXPORTS", {})
    defining = importlib.import_module(exports[name], module_name) if name in exports else module
    source = Path(inspect.getfile(defining))
    # A name a package re-exports is defined in one of the package's modules.
    candidates = [source, *sorted(source.parent.glob("*.py"))] if source.name == "__init__.py" else [source]
    for candidate in candidates:
        doc = attribute_docstring(candidate, name)
        if doc:
            return doc
    imported = importing_module(defining, name)  # a name a module re-exports (cairn.adapters): where it comes from
    return attribute_docstring(Path(inspect.getfile(imported)), name) if imported is not None else ""


def importing_module(module: ModuleType, name: str) -> ModuleType | None:
    """The module ``module`` imports ``name`` from (``from .core.clock import Clock``), or None."""
    for node in ast.parse(Path(inspect.getfile(module)).read_text()).body:
        if isinstance(node, ast.ImportFrom) and any(alias.name == name for alias in node.names):
            package = module.__name__ if Path(inspect.getfile(module)).name == "__init__.py" else module.__package__
            return importlib.import_module(importlib.util.resolve_name("." * node.level + (node.module or ""), package))
    return None


def attribute_docstring(source: Path, name: str) -> str:
    """The string literal just below ``name = ...`` (or the ``#:`` comment just above it) in ``source``."""
    text = source.read_text()
    body = ast.parse(text).body
    lines = text.splitlines()
    for index, node in enumerate(body):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if not any(isinstance(target, ast.Name) and target.id == name for target in targets):
            continue
        following = body[index + 1] if index + 1 < len(body) else None
        if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant):
            return str(following.value.value)
        above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
        return above.removeprefix("#:").strip() if above.startswith("#:") else ""
    return ""


def members(qualified: str, cls: type) -> list[PublicName]:
    """The public methods and properties ``cls`` defines itself, with their docstrings (inherited ones count)."""
    found = []
    for attribute, raw in vars(cls).items():
        if attribute.startswith("_"):
            continue
        if isinstance(raw, property) or inspect.isfunction(raw) or isinstance(raw, classmethod | staticmethod):
            found.append(PublicName(f"{qualified}.{attribute}", inspect.getdoc(getattr(cls, attribute)) or ""))
    return found


def summary() -> str:
    """The documentation's figures, for the test run's summary."""
    runnable = [example for page in pages() for example in examples(page) if example.not_run is None]
    marked = [example for page in pages() for example in examples(page) if example.not_run is not None]
    names = public_names()
    undocumented = [name.qualified for name in names if not name.doc.strip()]
    return (
        f"README.md: {readme_lines()} lines (at most {README_MAX_LINES}); "
        f"examples: {len(runnable)} python blocks run from {len(pages_with_examples())} pages "
        f"({len(marked)} marked not run); "
        f"docstrings: {len(names) - len(undocumented)} of {len(names)} public names documented"
    )
