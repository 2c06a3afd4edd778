"""``cairn new NAME``: a new pipeline in the bundle, as ``sam init`` makes a new function.

It writes the pipeline's module (``functions/<module>/``), its test (``tests/pipelines/``), the sample
events of its phase functions (``events/phases/<name>/``) and the registry line (``functions/pipelines.py``),
then brings ``template.yaml`` in sync. Everything is checked before anything is written, and a
failure on the way puts every file back as it was. A local tool (never in the Lambda layer).
"""

from __future__ import annotations

import argparse
import ast
import json
import keyword
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from ..core.naming import clashes, pascal, resource_id
from .events import PipelineOutline, dump, phase_events

NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
"""A pipeline name ``cairn new`` accepts: lowercase words of letters and digits joined by ``-``."""
MAX_NAME = 40
"""The longest such name: its function names stay readable (``naming.SUFFIX_CHARS``)."""
PHASES = ("start", "finish")
"""The phases of a new pipeline, in order."""
REGISTRY = Path("functions") / "pipelines.py"
RESERVED = ("cairn", "tests", "pipelines", "phases", "api", "scheduler")
"""Modules of the bundle and the library that a pipeline package may not be named after."""
REGISTRY_NAME = "PIPELINES"
NEXT_STEPS = (
    "pytest                       every test, the new pipeline's included",
    "cairn template check         the template against the registry (sam validate --lint for the rest)",
    "sam build && sam deploy      build the layer and the functions, then deploy",
)

_Parser = TypeVar("_Parser", bound=argparse.ArgumentParser)
#: Syncs the template of the bundle in the folder given; raises ScaffoldError when it cannot.
Sync = Callable[[Path], None]


class ScaffoldError(Exception):
    """A reason ``cairn new`` refuses or stops, in one line; nothing is left half-written."""


@dataclass(frozen=True)
class Plan:
    """What ``cairn new`` will write: new files and the registry's new text, all checked first."""

    name: str
    module: str
    root: Path
    files: dict[Path, str] = field(default_factory=dict)
    registry_text: str = ""


def module_name(name: str) -> str:
    """The Python package of pipeline ``name`` (``demo-two`` -> ``demo_two``)."""
    return name.replace("-", "_")


def check_name(name: str) -> str:
    """``name``'s module, or ScaffoldError saying why the name cannot be a new pipeline's."""
    if not NAME.fullmatch(name) or len(name) > MAX_NAME:
        raise ScaffoldError(
            f"invalid pipeline name {name!r}: use lowercase letters, digits and single '-' between them, "
            f"starting with a letter, at most {MAX_NAME} characters (e.g. demo-two)"
        )
    module = module_name(name)
    if keyword.iskeyword(module) or keyword.issoftkeyword(module):
        raise ScaffoldError(f"invalid pipeline name {name!r}: its module {module!r} is a Python keyword")
    if module in sys.stdlib_module_names or module in RESERVED:
        raise _hides(name, module)
    return module


def _hides(name: str, module: str) -> ScaffoldError:
    """The error for a name whose package would hide a module of the same name."""
    return ScaffoldError(
        f"invalid pipeline name {name!r}: a package functions/{module}/ would hide the module {module!r}"
    )


_INSPECT = f"""\
import importlib.util, json, sys
import pipelines

def found(module):
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return True
    return spec is not None and spec.origin is not None  # a namespace folder (docs/, events/) does not count

phases = [[pipeline.name, pipeline.phase_names] for pipeline in pipelines.{REGISTRY_NAME}]
print(json.dumps({{"phases": phases, "found": found(sys.argv[1])}}))
"""


@dataclass(frozen=True)
class Bundle:
    """What a fresh import of the bundle's registry says: its phases, and whether a module name is taken."""

    phases: list[tuple[str, str]]
    module_found: bool


def inspect_bundle(root: Path, module: str) -> Bundle:
    """Import the registry of the bundle in ``root`` in a fresh interpreter, and look ``module`` up there."""
    done = subprocess.run(
        [sys.executable, "-c", _INSPECT, module],
        cwd=root,
        env={**os.environ, "PYTHONPATH": search_path(root)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no error message"]
        raise ScaffoldError(f"{REGISTRY} does not import: {lines[-1]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    phases = [(pipeline, phase) for pipeline, names in found["phases"] for phase in names]
    return Bundle(phases, bool(found["found"]))


def search_path(root: Path) -> str:
    """PYTHONPATH for the bundle in ``root``, as the Makefile sets it (functions/, the library, the root).

    The library this command runs from comes next, for a bundle that does not carry it; the caller's
    PYTHONPATH is left out, so what is found is the bundle's own.
    """
    parts = [root / "functions", root / "layers" / "cairn", root, Path(__file__).resolve().parents[1]]
    return os.pathsep.join(str(part) for part in parts)


def plan(name: str, root: Path) -> Plan:
    """Check that pipeline ``name`` can be added to the bundle in ``root`` and prepare every file."""
    module = check_name(name)
    root = root.resolve()
    registry = root / REGISTRY
    if not registry.is_file() or not (root / "template.yaml").is_file():
        raise ScaffoldError(f"{root} is not a cairn bundle: it needs {REGISTRY} and template.yaml (use --root)")
    functions = root / "functions"
    for taken in (functions / module, functions / f"{module}.py", root / "events" / "phases" / name):
        if taken.exists():
            raise ScaffoldError(f"{taken.relative_to(root)} already exists: choose another name")
    registry_text = add_to_registry(registry.read_text(encoding="utf-8"), module)
    bundle = inspect_bundle(root, module)
    if bundle.module_found:
        raise _hides(name, module)
    existing = bundle.phases
    if name in {pipeline for pipeline, _ in existing}:
        raise ScaffoldError(f'a pipeline named "{name}" is already registered in {REGISTRY}')
    problems = clashes([*existing, *((name, phase) for phase in PHASES)])
    if problems:
        raise ScaffoldError(f'pipeline "{name}" would clash with a registered one: {problems[0]}')
    files = {
        functions / module / "__init__.py": render_init(name),
        functions / module / "pipeline.py": render_pipeline(name),
        root / "tests" / "pipelines" / f"test_{module}.py": render_test(name),
        **render_events(name, root),
    }
    package = root / "tests" / "pipelines" / "__init__.py"
    if not package.exists():
        files[package] = '"""Tests of the bundle\'s pipelines, one module each."""\n'
    for path in files:
        if path.exists():
            raise ScaffoldError(f"{path.relative_to(root)} already exists: remove it or choose another name")
    return Plan(name, module, root, files, registry_text)


def add_to_registry(source: str, module: str) -> str:
    """``functions/pipelines.py`` with pipeline package ``module`` added: one import line, one list entry.

    The file must have the layout ``cairn new`` keeps: one ``from <module>.pipeline import pipeline as
    <module>`` line per pipeline, and ``PIPELINES = PipelineRegistry([...])`` with one name per line.
    Lines are found through the syntax tree; any other layout is refused, never guessed at.
    """
    unrecognised = f"{REGISTRY} does not have the layout cairn new edits"
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ScaffoldError(f"{REGISTRY} is not valid Python: {exc.msg} (line {exc.lineno})") from exc
    lines = source.splitlines(keepends=True)
    imports = [node for node in tree.body if isinstance(node, ast.ImportFrom)]
    pipeline_imports = [node for node in imports if _is_pipeline_import(node)]
    empty = _empty_registry_line(tree, lines)
    if empty is not None and not pipeline_imports:
        return _first_entry(lines, imports, empty, module)
    entries = _registry_entries(tree, lines)
    if entries is None or not pipeline_imports:
        raise ScaffoldError(
            f"{unrecognised}: one 'from <package>.pipeline import pipeline as <package>' line per pipeline and "
            f"'{REGISTRY_NAME} = PipelineRegistry([...])' listing one name per line"
        )
    registered = {node.names[0].asname for node in pipeline_imports}
    if {entry.id for entry in entries} != registered:
        raise ScaffoldError(f"{unrecognised}: the imported pipelines and the {REGISTRY_NAME} list differ")
    if module in registered:
        raise ScaffoldError(f"{REGISTRY} already imports a pipeline package {module!r}")
    entry_line = entries[-1].lineno - 1
    indent = lines[entry_line][: len(lines[entry_line]) - len(lines[entry_line].lstrip())]
    import_line = _import_position(imports, pipeline_imports, module) - 1
    new_lines = [*lines]
    new_lines.insert(entry_line + 1, f"{indent}{module},\n")
    new_lines.insert(import_line, f"from {module}.pipeline import pipeline as {module}\n")
    return "".join(new_lines)


EMPTY_REGISTRY = f"{REGISTRY_NAME} = PipelineRegistry([])"
"""The registry line of a bundle without pipelines (``cairn init --no-example``)."""


def _empty_registry_line(tree: ast.Module, lines: Sequence[str]) -> int | None:
    """The index of the line ``PIPELINES = PipelineRegistry([])``, alone as written; None if there is none."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and lines[node.lineno - 1].strip() == EMPTY_REGISTRY:
            return node.lineno - 1
    return None


def _first_entry(lines: Sequence[str], imports: list[ast.ImportFrom], registry_line: int, module: str) -> str:
    """An empty registry with its first pipeline: the import among the one-line ``from`` imports, the list opened."""
    one_line = [node for node in imports if node.lineno == node.end_lineno and node.module and not node.level]
    if not one_line:
        raise ScaffoldError(f"{REGISTRY} does not import PipelineRegistry: the layout cairn new edits is gone")
    key = _sort_key(f"{module}.pipeline")
    later = [node.lineno for node in one_line if key < _sort_key(node.module or "")]
    import_line = (later[0] if later else one_line[-1].lineno + 1) - 1
    new_lines = [*lines]
    new_lines[registry_line : registry_line + 1] = [
        f"{REGISTRY_NAME} = PipelineRegistry(\n",
        "    [\n",
        f"        {module},\n",
        "    ]\n",
        ")\n",
    ]
    new_lines.insert(import_line, f"from {module}.pipeline import pipeline as {module}\n")
    return "".join(new_lines)


def _is_pipeline_import(node: ast.ImportFrom) -> bool:
    """``from <package>.pipeline import pipeline as <package>`` on one line."""
    if node.level or node.module is None or len(node.names) != 1 or node.lineno != node.end_lineno:
        return False
    package, _, rest = node.module.partition(".")
    alias = node.names[0]
    return rest == "pipeline" and alias.name == "pipeline" and alias.asname == package


def _registry_entries(tree: ast.Module, lines: Sequence[str]) -> list[ast.Name] | None:
    """The names listed in ``PIPELINES = PipelineRegistry([...])``, each alone on its line; None otherwise."""
    found: list[list[ast.Name]] = []
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        if not (isinstance(target, ast.Name) and target.id == REGISTRY_NAME):
            continue
        if not (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "PipelineRegistry"
            and len(value.args) == 1
            and not value.keywords
            and isinstance(value.args[0], ast.List)
        ):
            return None
        entries = value.args[0].elts
        if not entries or not all(isinstance(entry, ast.Name) for entry in entries):
            return None
        names = [entry for entry in entries if isinstance(entry, ast.Name)]
        if any(lines[entry.lineno - 1].strip() != f"{entry.id}," for entry in names):
            return None
        found.append(names)
    return found[0] if len(found) == 1 else None


def _import_position(imports: list[ast.ImportFrom], pipeline_imports: list[ast.ImportFrom], module: str) -> int:
    """The line number before which the new import goes: sorted among the ``from`` imports of its block."""
    first = pipeline_imports[0]
    block = [node for node in imports if node.lineno == node.end_lineno and node.module and not node.level]
    # The block is the run of one-line imports around the first pipeline import, with no gap between them.
    index = block.index(first)
    start = index
    while start > 0 and block[start - 1].lineno == block[start].lineno - 1:
        start -= 1
    end = index
    while end + 1 < len(block) and block[end + 1].lineno == block[end].lineno + 1:
        end += 1
    run = block[start : end + 1]
    key = _sort_key(f"{module}.pipeline")
    for node in run:
        if key < _sort_key(node.module or ""):
            return node.lineno
    return run[-1].lineno + 1


def _sort_key(module: str) -> list[tuple[int, str]]:
    """isort's natural, case-insensitive order of module names (``demo2`` before ``demo10``)."""
    return [(int(part), "") if part.isdigit() else (-1, part) for part in re.split(r"(\d+)", module.lower()) if part]


@dataclass(frozen=True)
class Written:
    """What :func:`write` changed: the registry's text before, the files and folders it made."""

    registry_text: str
    files: list[Path]
    folders: list[Path]


def write(plan: Plan) -> Written:
    """Write the plan's files and the registry; on any error put everything back and re-raise."""
    registry = plan.root / REGISTRY
    written = Written(registry.read_text(encoding="utf-8"), [], [])
    try:
        for path, text in plan.files.items():
            for parent in reversed(path.parents):
                if not parent.exists():
                    parent.mkdir()
                    written.folders.append(parent)
            path.write_text(text, encoding="utf-8")
            written.files.append(path)
        registry.write_text(plan.registry_text, encoding="utf-8")
    except BaseException:
        restore(plan, written)
        raise
    return written


def restore(plan: Plan, written: Written) -> None:
    """Undo :func:`write`: the registry's old text back, the new files and folders (and their caches) removed."""
    (plan.root / REGISTRY).write_text(written.registry_text, encoding="utf-8")
    for path in written.files:
        path.unlink(missing_ok=True)
        cache = path.parent / "__pycache__"
        for compiled in cache.glob(f"{path.stem}.*.pyc") if path.suffix == ".py" else ():
            compiled.unlink()
    for folder in reversed(written.folders):
        cache = folder / "__pycache__"
        if cache.is_dir() and not any(cache.iterdir()):
            cache.rmdir()
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


ENV_VARS = Path("events") / "env.json"
"""The bundle's environment file for ``sam local invoke --env-vars``."""


def new_pipeline(name: str, root: Path, sync: Sync) -> list[str]:
    """Add pipeline ``name`` to the bundle in ``root`` and sync its template; the lines to print."""
    prepared = plan(name, root)
    root = prepared.root
    template = root / "template.yaml"
    template_text = template.read_text(encoding="utf-8")
    written = write(prepared)
    try:
        if name not in {pipeline for pipeline, _ in inspect_bundle(root, module_name(name)).phases}:
            raise ScaffoldError(f'{REGISTRY} was edited but does not register "{name}"')
        sync(root)
        add_env_entries(root / ENV_VARS, name)
    except BaseException:
        template.write_text(template_text, encoding="utf-8")
        restore(prepared, written)
        raise
    created = sorted(path.relative_to(root).as_posix() for path in written.files)
    return [
        f'Created pipeline "{name}" (phases: {", ".join(PHASES)}):',
        *(f"  {path}" for path in created),
        f"Registered it in {REGISTRY.as_posix()} and synced template.yaml (cairn template sync).",
        "",
        f"Next: write its phases in functions/{prepared.module}/pipeline.py (timeout, memory and retry go in",
        "@pipeline.phase(...)), run `cairn template sync` after changing phases or their settings, then:",
        *(f"  {step}" for step in NEXT_STEPS),
    ]


def add_env_entries(env_file: Path, name: str) -> None:
    """Give the new pipeline's phase functions their own entries in ``events/env.json``, if it keeps any.

    A file of ``Parameters`` only is left alone (the template's literal values reach each function); one
    that names functions gets the new ones too, so ``sam local invoke --env-vars`` finds every function.
    """
    if not env_file.exists():
        return
    env = json.loads(env_file.read_text(encoding="utf-8"))
    if not isinstance(env, dict) or not any(key != "Parameters" for key in env):
        return
    for phase in PHASES:
        env.setdefault(resource_id(name, phase, "Function"), {"CAIRN_PIPELINE": name, "CAIRN_PHASE": phase})
    env_file.write_text(json.dumps(env, indent=2) + "\n", encoding="utf-8")


def render_init(name: str) -> str:
    """The new package's ``__init__.py``."""
    return f'"""The {name} pipeline: its phases are in ``pipeline.py``, registered in ``functions/pipelines.py``."""\n'


def render_pipeline(name: str) -> str:
    """The new pipeline's module: a state model and two phases that show the API."""
    state = f"{pascal(name)}State"
    return textwrap.dedent(
        f'''\
        """The {name} pipeline: ``start`` -> ``finish``.

        ``start`` checks the input; ``finish`` works through the items and saves the state after each one,
        so a crash re-enters it at the first item not yet saved instead of starting over. What each phase
        needs from Lambda (timeout in seconds, memory in MB, retries) is declared on its decorator;
        ``cairn template sync`` writes it into template.yaml.
        """

        from __future__ import annotations

        from pydantic import BaseModel, Field

        from cairn import Done, Next, PhaseContext, Pipeline, RetryPolicy


        class {state}(BaseModel):
            """The job's state, saved in its checkpoint: the items to process and the results so far."""

            items: list[str] = Field(default_factory=list)
            results: list[str] = Field(default_factory=list)


        pipeline = Pipeline("{name}", state={state})  # the first phase registered runs first


        def process(item: str) -> str:
            """The work done on one item: replace it with the real thing."""
            return item.strip().upper()


        @pipeline.phase(timeout=30, memory=256, retry=RetryPolicy(max_attempts=2))
        def start(ctx: PhaseContext[{state}]) -> Next:
            """Drop blank items, then hand the rest to ``finish``."""
            items = [item for item in ctx.state.items if item.strip()]
            ctx.log(f"{{len(items)}} items to process")
            return Next("finish", ctx.state.model_copy(update={{"items": items, "results": []}}))


        @pipeline.phase(timeout=120, memory=512, retry=RetryPolicy(max_attempts=3, backoff=2.0))
        def finish(ctx: PhaseContext[{state}]) -> Done:
            """Process the items not yet done, saving after each one; the result lists every item's output."""
            state = ctx.state
            for item in state.items[len(state.results) :]:
                state = state.model_copy(update={{"results": [*state.results, process(item)]}})
                ctx.log(f"processed {{item!r}}")
                ctx.save_state(state)  # a crash after this line resumes "finish" at the next item
            return Done({{"results": state.results}})
        '''
    )


def render_test(name: str) -> str:
    """The new pipeline's test: a job to the end, and a crash mid-phase resumed from its checkpoint."""
    module = module_name(name)
    state = f"{pascal(name)}State"
    return textwrap.dedent(
        f'''\
        """The {name} pipeline, run locally: a job to the end, and a worker crash resumed from the checkpoint."""

        from __future__ import annotations

        import pytest

        from cairn import Cairn, JobStatus
        from {module} import pipeline as module
        from {module}.pipeline import {state}, pipeline


        class Crash(BaseException):
            """A process death, simulated: not an Exception, so nothing on the way out catches it."""


        def test_a_job_runs_both_phases_to_the_end() -> None:
            app = Cairn(pipeline)
            app.start(pipeline, "job-1", state={state}(items=["a", " ", "b"]))

            app.run_until_idle()

            job = app.get("job-1")
            assert job.status == JobStatus.COMPLETE
            assert job.result == {{"results": ["A", "B"]}}
            assert [record.phase for record in job.phases] == ["start", "finish"]


        def test_a_crash_mid_finish_resumes_at_the_first_item_not_saved(monkeypatch: pytest.MonkeyPatch) -> None:
            app = Cairn(pipeline)
            processed: list[str] = []

            def dies_on_c_once(item: str) -> str:
                processed.append(item)
                if item == "c" and processed.count("c") == 1:
                    raise Crash("the worker died while processing c")
                return item.upper()

            monkeypatch.setattr(module, "process", dies_on_c_once)
            app.start(pipeline, "job-2", state={{"items": ["a", "b", "c", "d"]}})
            with pytest.raises(Crash):
                app.run_until_idle()

            crashed = app.get("job-2")
            assert crashed.status == JobStatus.RUNNING
            assert crashed.checkpoint is not None
            assert crashed.checkpoint.next_phase == "finish"
            assert crashed.checkpoint.state["results"] == ["A", "B"]

            app.retry("job-2")  # resume: from the checkpoint, taking over the dead worker's claim
            app.run_until_idle()

            job = app.get("job-2")
            assert job.status == JobStatus.COMPLETE
            assert job.result == {{"results": ["A", "B", "C", "D"]}}
            assert processed == ["a", "b", "c", "c", "d"]  # a and b were saved before the crash: not redone
        '''
    )


def render_events(name: str, root: Path) -> dict[Path, str]:
    """The sample events of the new pipeline's phase functions (``sam local invoke -e``), by path under ``root``."""
    return {root / path: dump(event) for path, event in phase_events(PipelineOutline(name, PHASES)).items()}


def template_sync(root: Path) -> None:
    """``cairn template sync`` on the bundle in ``root``; ScaffoldError when it fails (it says why on stderr)."""
    from .templating.command import run_sync
    from .templating.loading import DEFAULT_FUNCTIONS, DEFAULT_REGISTRY

    arguments = argparse.Namespace(
        root=root, template=Path("template.yaml"), registry=DEFAULT_REGISTRY, functions=DEFAULT_FUNCTIONS
    )
    if run_sync(arguments) != 0:
        raise ScaffoldError("cairn template sync failed (see above); nothing was added, run cairn new again once fixed")


def add_command(commands: argparse._SubParsersAction[_Parser]) -> None:
    """Add ``cairn new NAME [--root DIR]`` to the command line's subcommands."""
    new = commands.add_parser(
        "new",
        help="scaffold a pipeline: its module, test, sample events and registry line, and sync the template",
        description="Scaffold pipeline NAME in the bundle: functions/<module>/ with two phases, its test in "
        "tests/pipelines/, sample events in events/phases/NAME/, its line in functions/pipelines.py, and "
        "template.yaml brought in sync.",
    )
    new.add_argument("name", metavar="NAME", help="lowercase letters, digits and '-', starting with a letter")
    new.add_argument(
        "--root", type=Path, default=Path(), help="the bundle's folder, with functions/ and template.yaml (default: .)"
    )
    new.set_defaults(run=run_new)


def run_new(arguments: argparse.Namespace) -> int:
    """``cairn new``: print what was created and the next steps (0), or one line on stderr (2)."""
    try:
        lines = new_pipeline(arguments.name, arguments.root, template_sync)
    except ScaffoldError as exc:
        print(f"cairn: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0
