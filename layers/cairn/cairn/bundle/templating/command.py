"""``cairn template sync`` and ``cairn template check`` on the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..command_line import Parser, add_subcommand, error
from .check import check
from .errors import TemplateError
from .loading import DEFAULT_FUNCTIONS, DEFAULT_REGISTRY, load_registry
from .machinery import DISCARD
from .state_schemas import SCHEMAS_FILE, schemas_path, seal_schemas, sync_schemas
from .state_schemas import problems as state_schema_problems
from .sync import sync

EXIT_PROBLEMS = 1
SUMMARY = "bring template.yaml in line with the pipeline registry, or check that it is"
DESCRIPTION = (
    "The phase functions, log groups, errors alarms and invoke grants of template.yaml follow "
    "from the pipeline registry: `sync` writes them into the template's generated section (and removes the "
    "parameters and conditions only the old section used), `check` lists every disagreement and every "
    "part of the template that cannot work: a handler or a path that does not resolve, a variable cairn "
    "reads left unset, a parameter or condition nothing uses (exit status 1). `sync` also records each "
    "pipeline's state schema under its state_version in state-schemas.json beside the template (provisional: "
    "it follows the model until `check --seal`, which a bundle's sam build runs, fixes it), and `check` refuses "
    "a state model changed incompatibly without a state_version bump."
)


def add_command(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add ``cairn template sync|check [--root] [--template] [--registry] [--functions]``."""
    template = add_subcommand(commands, "template", None, SUMMARY, DESCRIPTION)
    actions = template.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(template))
    for action, run, summary in (
        ("sync", run_sync, "write the registry's resources into template.yaml and print what changed"),
        ("check", run_check, "print one line per disagreement with the registry and per mistake in template.yaml"),
    ):
        parser = add_subcommand(actions, action, run, summary)
        parser.add_argument("--root", type=Path, default=Path(), help="the bundle's folder (default: .)")
        parser.add_argument(
            "--template", type=Path, default=Path("template.yaml"), help="default: template.yaml (under --root)"
        )
        parser.add_argument(
            "--registry", default=DEFAULT_REGISTRY, metavar="MODULE:ATTR", help=f"default: {DEFAULT_REGISTRY}"
        )
        parser.add_argument(
            "--functions",
            type=Path,
            default=DEFAULT_FUNCTIONS,
            help=f"the folder the registry imports from (default: {DEFAULT_FUNCTIONS}, under --root); each "
            "handler resolves in its function's CodeUri",
        )
        if action == "sync":
            parser.add_argument(
                DISCARD,
                action="store_true",
                help="also rewrite a block of cairn's machinery changed by hand, losing the change (without it, sync "
                "refuses and names the line)",
            )
        if action == "check":
            parser.add_argument(
                "--states",
                action="store_true",
                help=f"check the state models against {SCHEMAS_FILE} only (what cairn dev checks before it reloads)",
            )
            parser.add_argument(
                "--seal",
                action="store_true",
                help=f"when nothing is wrong, fix the provisional state schemas in {SCHEMAS_FILE} as the models are "
                "now: what a bundle's sam build runs (layers/Makefile); a change after it needs a state_version bump",
            )
            parser.add_argument(
                "--stack-name",
                action="append",
                default=[],
                metavar="NAME",
                help="check that every name the template makes from this stack name stays within its limit "
                "(repeat for more; default: the stack names samconfig.toml saves)",
            )
            parser.add_argument(
                "--config-env",
                action="append",
                default=[],
                metavar="NAME",
                help="check that samconfig.toml's environment NAME can be deployed as it is saved (its parameter "
                "values against the template's declarations and rules, no placeholder left): run it before "
                "`sam deploy --config-env NAME` (repeat for more)",
            )


def _paths(arguments: argparse.Namespace) -> tuple[Path, Path]:
    root: Path = arguments.root
    return root / arguments.template, root / arguments.functions


def run_sync(arguments: argparse.Namespace) -> int:
    """``cairn template sync``: print what changed (0), or why it cannot (2)."""
    template, functions = _paths(arguments)
    try:
        registry = load_registry(arguments.registry, functions)
        changed = sync(template, registry, discard_edits=arguments.discard_edits)
        recorded, refused = sync_schemas(template, registry)  # state-schemas.json (cairn.core.migrations)
    except TemplateError as exc:
        return error("cairn", str(exc))
    count = sum(len(pipeline.phase_names) for pipeline in registry)
    summary = f"{len(registry.names)} pipeline(s), {count} phase(s)"
    for line in recorded:
        print(f"{schemas_path(template)}: {line}")
    if refused:  # the template is synced, but a state schema changed incompatibly under the same version
        print("\n".join(f"{template}: {line}" for line in changed))
        print("\n".join(f"{schemas_path(template)}: {line}" for line in refused), file=sys.stderr)
        return EXIT_PROBLEMS
    if not changed:
        print(f"{template}: already in sync with the registry ({summary})")
        return 0
    print("\n".join(f"{template}: {line}" for line in changed))
    print(f"{template}: in sync with the registry ({summary})")
    return 0


def run_check(arguments: argparse.Namespace) -> int:
    """``cairn template check``: one line per problem (1), none (0), or why it cannot check (2)."""
    template, functions = _paths(arguments)
    states_only: bool = arguments.states
    try:
        registry = load_registry(arguments.registry, functions)
        problems = (
            []
            if states_only
            else check(template, registry, functions, stack_name=arguments.stack_name, config_env=arguments.config_env)
        )
        problems += state_schema_problems(template, registry)
        sealed = seal_schemas(template, registry) if arguments.seal and not problems else []
    except TemplateError as exc:
        return error("cairn", str(exc))
    if problems:
        print("\n".join(f"{template}: {problem}" for problem in problems), file=sys.stderr)
        return EXIT_PROBLEMS
    for line in sealed:
        print(f"{schemas_path(template)}: {line}")
    if states_only:
        print(f"{template}: the state models fit {SCHEMAS_FILE}")
    else:
        print(f"{template}: matches the registry")
    return 0
