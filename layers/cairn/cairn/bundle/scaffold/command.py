"""The command ``cairn new NAME``: write the plan, sync the template, give the phases their env entries."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from ...core.naming import resource_id
from ..command_line import Parser, add_subcommand, error
from ..templating.state_schemas import schemas_path
from .files import plan, restore, write
from .names import PHASES, ScaffoldError, module_name
from .registry import REGISTRY, inspect_bundle

NEXT_STEPS = (
    "pytest                       every test, the new pipeline's included",
    "cairn template check         the template against the registry (sam validate --lint for the rest)",
    "sam build && sam deploy      build the layer and the functions, then deploy",
)

SUMMARY = "scaffold a pipeline: its module, test, sample events and registry line, and sync the template"
DESCRIPTION = (
    "Scaffold pipeline NAME in the bundle: functions/<module>/ with two phases, its test in "
    "tests/pipelines/, sample events in events/phases/NAME/, its line in functions/pipelines.py, and "
    "template.yaml brought in sync."
)
#: Syncs the template of the bundle in the folder given; raises ScaffoldError when it cannot.
Sync = Callable[[Path], None]


ENV_VARS = Path("events") / "env.json"
"""The bundle's environment file for ``sam local invoke --env-vars``."""


def new_pipeline(name: str, root: Path, sync: Sync) -> list[str]:
    """Add pipeline ``name`` to the bundle in ``root`` and sync its template; the lines to print."""
    prepared = plan(name, root)
    root = prepared.root
    template = root / "template.yaml"
    template_text = template.read_text(encoding="utf-8")
    schemas = schemas_path(template)
    schemas_text = schemas.read_text(encoding="utf-8") if schemas.is_file() else None
    written = write(prepared)
    try:
        if name not in {pipeline for pipeline, _ in inspect_bundle(root, module_name(name)).phases}:
            raise ScaffoldError(f'{REGISTRY} was edited but does not register "{name}"')
        sync(root)
        add_env_entries(root / ENV_VARS, name)
    except BaseException:
        template.write_text(template_text, encoding="utf-8")
        if schemas_text is None:
            schemas.unlink(missing_ok=True)
        else:
            schemas.write_text(schemas_text, encoding="utf-8")
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


def template_sync(root: Path) -> None:
    """``cairn template sync`` on the bundle in ``root``; ScaffoldError when it fails (it says why on stderr)."""
    from ..templating.command import run_sync
    from ..templating.loading import DEFAULT_FUNCTIONS, DEFAULT_REGISTRY

    arguments = argparse.Namespace(
        root=root,
        template=Path("template.yaml"),
        registry=DEFAULT_REGISTRY,
        functions=DEFAULT_FUNCTIONS,
        discard_edits=False,
    )
    if run_sync(arguments) != 0:
        raise ScaffoldError("cairn template sync failed (see above); nothing was added, run cairn new again once fixed")


def add_command(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add ``cairn new NAME [--root DIR]`` to the command line's subcommands."""
    new = add_subcommand(commands, "new", run_new, SUMMARY, DESCRIPTION)
    new.add_argument("name", metavar="NAME", help="lowercase letters, digits and '-', starting with a letter")
    new.add_argument(
        "--root", type=Path, default=Path(), help="the bundle's folder, with functions/ and template.yaml (default: .)"
    )


def run_new(arguments: argparse.Namespace) -> int:
    """``cairn new``: print what was created and the next steps (0), or one line on stderr (2)."""
    try:
        lines = new_pipeline(arguments.name, arguments.root, template_sync)
    except ScaffoldError as exc:
        return error("cairn", " ".join(str(exc).split()))
    print("\n".join(lines))
    return 0
