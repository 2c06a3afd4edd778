"""``cairn init DIR``: a new bundle of one's own, from the installed cairn alone, as ``sam init`` makes a project.

It writes the SAM template (the hand-written part this cairn ships, its generated section synced to the
bundle's pipelines), ``samconfig.toml``, the thin entry points and the registry in ``functions/``, the
layer's build (``layers/``: the Makefile ``sam build`` runs, the pinned requirements with this cairn's
release among them, and this cairn's wheel when it is not a release: :mod:`cairn.bundle.wheel`), the Step
Functions definition (``statemachine/``), sample events (``events/``), tests, a README and a ``.gitignore``;
then ``cairn new`` adds the example pipeline. A folder that is not empty is refused
unless ``--force`` is given, and then every file that was there and is replaced is named.

The bundle is made in a staging folder inside the target, every target path is checked, and only then do
the files move in (:mod:`cairn.bundle.file_set`): a refused, failed, interrupted (Ctrl-C) or terminated
(SIGTERM) init leaves the folder as it was.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shutil
import signal
import string
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..core.errors import CairnError
from . import events as bundle_events
from . import file_set, python_runtime, scaffold, wheel
from .command_line import Parser, add_subcommand, error

SKELETON = Path(str(resources.files(__package__ or "cairn.bundle") / "skeleton"))
"""The files every bundle starts from (package data): copied, a few of them with the bundle's values filled."""
STATE_MACHINE = Path(__file__).resolve().parents[1] / "aws" / "pipeline.asl.json"
DRIVERS = ("direct", "stepfunctions")
ARCHITECTURES = ("arm64", "x86_64")
DEFAULT_PIPELINE = "example"
PLACEHOLDER_PIPELINE = "my-pipeline"
"""The pipeline the sample API events name in a bundle made without an example."""
RENAMED = {"gitignore.txt": ".gitignore"}
"""Skeleton files stored under another name (a dotfile inside a package would be easy to lose)."""
_STACK_NAME = re.compile(r"[^A-Za-z0-9-]+")
SUMMARY = "create a bundle of your own: template, samconfig, functions, layer build, events, tests, README"
DESCRIPTION = (
    "Create a new cairn bundle in DIR from the installed cairn: template.yaml, samconfig.toml, "
    "functions/ (the registry, the API, scheduler and phase entry points, an example pipeline), layers/ "
    "(built by plain `sam build`), statemachine/, events/, tests/, a README and a .gitignore."
)


class InitError(CairnError):
    """``cairn init`` refuses, in one line; nothing was written."""


@dataclass(frozen=True)
class Options:
    """What ``cairn init`` was asked for."""

    folder: Path
    pipeline: str | None = DEFAULT_PIPELINE
    driver: str = "direct"
    architecture: str = "arm64"
    runtime: str = python_runtime.DEFAULT
    """The Lambda runtime, written once: the template's ``Globals: Function: Runtime`` (and the layer's
    ``CompatibleRuntimes``), which the layer's build, ``cairn dev`` and ``cairn template check`` follow."""
    force: bool = False
    layer_only: bool = False
    """Rewrite ``layers/`` only (the layer's build, its pins and the wheel of an unreleased cairn), in an existing
    bundle."""


@dataclass
class Report:
    """What was written: new files, the existing files replaced (only with ``--force``), the older wheels
    removed, and what the template's sync printed."""

    written: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    synced: list[str] = field(default_factory=list)


def stack_name(folder: Path) -> str:
    """A CloudFormation stack name from the bundle folder's name (letters, digits, hyphens; a letter first)."""
    name = _STACK_NAME.sub("-", folder.resolve().name).strip("-")
    if not name or not name[0].isalpha():
        name = f"cairn-{name}".rstrip("-")
    return name[:100]


def set_parameter_default(template: str, parameter: str, value: str) -> str:
    """``template`` with the ``Default:`` of ``parameter`` (under ``Parameters:``) set to ``value``."""
    pattern = re.compile(rf"(^  {re.escape(parameter)}:\n(?:    .*\n)*?    Default: ).*$", re.MULTILINE)
    changed, count = pattern.subn(lambda match: match.group(1) + value, template, count=1)
    if count != 1:
        raise InitError(f"the template cairn ships has no Default for parameter {parameter}: reinstall cairn")
    return changed


def _samconfig(text: str, options: Options) -> str:
    stack = stack_name(options.folder)
    text = text.replace('stack_name = "cairn-prod"', f'stack_name = "{stack}-prod"')
    text = text.replace('stack_name = "cairn"', f'stack_name = "{stack}"')
    return text.replace('"Architecture=arm64', f'"Architecture={options.architecture}')


def _template(text: str, options: Options) -> str:
    text = set_parameter_default(text, "Driver", options.driver)
    text = set_parameter_default(text, "Architecture", options.architecture)
    try:
        return python_runtime.set_runtime(text, options.runtime)
    except python_runtime.RuntimeChoiceError as exc:
        raise InitError(str(exc)) from None


def _layer_requirements(text: str, options: Options) -> str:
    """The layer's pins with cairn's own last: the released distribution, by version."""
    return (
        f"{text.rstrip()}\n"
        f"# cairn itself, the version this bundle was made with (cairn init --layer-only . moves it): from the\n"
        f"# package index, or from the wheel in layers/wheels/ when it is there (a cairn not released).\n"
        f"{wheel.pin()}\n"
    )


def _readme(text: str, options: Options) -> str:
    values = {
        "bundle": options.folder.resolve().name,
        "stack": stack_name(options.folder),
        "pipeline": options.pipeline or PLACEHOLDER_PIPELINE,
        "architecture": options.architecture,
        "runtime": options.runtime,
        "python": f"python{python_runtime.version(options.runtime)}",
        "driver": options.driver,
        "version": wheel.installed_version(),
    }
    return string.Template(text).substitute(values)


FILLED: dict[str, Callable[[str, Options], str]] = {
    "samconfig.toml": _samconfig,
    "template.yaml": _template,
    "README.md": _readme,
    "layers/requirements.txt": _layer_requirements,
}
"""Skeleton files whose text takes the bundle's values."""


def skeleton_files(options: Options) -> dict[str, bytes]:
    """Every file of the new bundle but the example pipeline's, by path relative to its folder."""
    files: dict[str, bytes] = {}
    for path in sorted(SKELETON.rglob("*")):
        relative = path.relative_to(SKELETON).as_posix()
        if not path.is_file() or "__pycache__" in relative or path.suffix == ".pyc":
            continue
        target = RENAMED.get(relative, relative)
        fill = FILLED.get(relative)
        files[target] = fill(path.read_text(encoding="utf-8"), options).encode() if fill else path.read_bytes()
    files["statemachine/pipeline.asl.json"] = STATE_MACHINE.read_bytes()
    return files


def generic_events(options: Options) -> dict[str, bytes]:
    """The API's, the scheduler's and the state machine's sample events, for the example pipeline's sample job
    (the phase events are ``cairn new``'s); without an example, for a pipeline yet to be added."""
    example = bundle_events.PipelineOutline(
        options.pipeline or PLACEHOLDER_PIPELINE, scaffold.PHASES, {"items": ["a", "b"]}
    )
    return {
        path: bundle_events.dump(event).encode()
        for path, event in bundle_events.sample_events([example]).items()
        if not path.startswith("events/phases/")
    }


def _check(options: Options) -> None:
    if options.driver not in DRIVERS:
        raise InitError(f"unknown driver {options.driver!r}: choose {' or '.join(DRIVERS)}")
    if options.architecture not in ARCHITECTURES:
        raise InitError(f"unknown architecture {options.architecture!r}: choose {' or '.join(ARCHITECTURES)}")
    refused = python_runtime.refusal(options.runtime)
    if refused is not None:
        raise InitError(refused)
    if options.pipeline is not None:
        try:
            scaffold.check_name(options.pipeline)
        except scaffold.ScaffoldError as exc:
            raise InitError(str(exc)) from None
    folder = options.folder
    if folder.exists() and not folder.is_dir():
        raise InitError(f"{folder} exists and is not a folder")
    if options.layer_only:
        if not (folder / "template.yaml").is_file():
            raise InitError(f"{folder} has no template.yaml: --layer-only rewrites the layers/ of an existing bundle")
    elif folder.is_dir() and any(folder.iterdir()) and not options.force:
        shown = ", ".join(sorted(entry.name for entry in folder.iterdir())[:5])
        raise InitError(
            f"{folder} is not empty ({shown}...): choose a new folder, or pass --force to write the bundle there "
            "(files cairn init writes are replaced, and each one replaced is named)"
        )
    wheel.installed_version()


def init_bundle(options: Options, sync: scaffold.Sync = scaffold.template_sync) -> Report:
    """Write the bundle in ``options.folder`` and add its example pipeline; what was written and replaced.

    Nothing in the folder changes until the whole bundle is made and every path checked; any failure after
    puts back what was there.
    """
    _check(options)
    folder = options.folder
    created = _missing_folder(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with file_set.staging_folder(folder) as staging:
            synced = _make(options, staging, sync)
            staged = file_set.staged_files(staging)
            stale = sorted(
                path.relative_to(folder).as_posix()
                for pattern in wheel.WHEEL_GLOBS
                for path in (folder / "layers" / "wheels").glob(pattern)
                if path.relative_to(folder).as_posix() not in staged
            )
            file_set.check_targets(folder, staged)
            placed = file_set.place(folder, staging, staged, remove=stale)
    except BaseException:
        if created is not None:
            with file_set.signals_held():
                shutil.rmtree(created, ignore_errors=True)
        raise
    return Report(placed.written, placed.replaced, placed.removed, synced)


def _missing_folder(folder: Path) -> Path | None:
    """The outermost of ``folder`` and its parents that does not exist yet (None: ``folder`` exists)."""
    missing = [path for path in [folder, *folder.parents] if not path.exists()]
    return missing[-1] if missing else None


def _make(options: Options, staging: Path, sync: scaffold.Sync) -> list[str]:
    """Make the bundle (the layer's build alone with ``--layer-only``) in ``staging``; what the sync printed."""
    for relative, data in {**skeleton_files(options), **generic_events(options)}.items():
        if not options.layer_only or relative.startswith("layers/"):
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    if wheel.unreleased():
        wheel.build_wheel(staging / "layers" / "wheels")
    if options.pipeline is None or options.layer_only:
        return []
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        scaffold.new_pipeline(options.pipeline, staging, sync)
    here = str(options.folder.resolve())
    return [line.replace(str(staging.resolve()), here) for line in printed.getvalue().splitlines()]


def add_command(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add ``cairn init DIR`` to the command line."""
    init = add_subcommand(commands, "init", run_init, SUMMARY, DESCRIPTION)
    init.add_argument("folder", metavar="DIR", type=Path, help="the new bundle's folder (created; must be empty)")
    init.add_argument(
        "--pipeline", default=DEFAULT_PIPELINE, help=f"the example pipeline's name (default {DEFAULT_PIPELINE})"
    )
    init.add_argument("--no-example", action="store_true", help="no example pipeline (add one with cairn new)")
    init.add_argument("--driver", choices=DRIVERS, default="direct", help="the template's default Driver")
    init.add_argument(
        "--arch", choices=ARCHITECTURES, default="arm64", help="the functions' and the layer's architecture"
    )
    init.add_argument(
        "--runtime",
        default=python_runtime.DEFAULT,
        help=f"the Lambda runtime of every function and of the layer's build: {' or '.join(python_runtime.SUPPORTED)} "
        f"(default {python_runtime.DEFAULT}); written once, in the template's Globals: Function: Runtime",
    )
    init.add_argument("--force", action="store_true", help="write into a folder that is not empty")
    init.add_argument(
        "--layer-only",
        action="store_true",
        help="in an existing bundle, rewrite layers/ only: the layer's build, its pins (this cairn's version among "
        "them) and, for a cairn that is not a release, its wheel",
    )


def run_init(arguments: argparse.Namespace) -> int:
    """``cairn init``: the files written and the next steps (0), or one line on stderr (2)."""
    options = Options(
        folder=arguments.folder,
        pipeline=None if arguments.no_example else arguments.pipeline,
        driver=arguments.driver,
        architecture=arguments.arch,
        runtime=arguments.runtime,
        force=arguments.force,
        layer_only=arguments.layer_only,
    )
    as_it_was = f"{options.folder} is as it was" if options.folder.exists() else "nothing was written"
    try:
        with file_set.sigterm_raises():
            report = init_bundle(options)
    except (InitError, scaffold.ScaffoldError, wheel.WheelError, file_set.PlacementError) as exc:
        return error("cairn init", " ".join(str(exc).split()))
    except OSError as exc:
        return error("cairn init", f"{exc}; {as_it_was}")
    except file_set.Terminated:
        print(f"cairn init: stopped (SIGTERM); {as_it_was}", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print(f"cairn init: stopped (Ctrl-C); {as_it_was}", file=sys.stderr)
        return 128 + signal.SIGINT
    print("\n".join([*report.synced, *summary(options, report)]))
    return 0


def layer_source() -> str:
    """Where the layer's cairn comes from, in a few words."""
    if wheel.unreleased():
        return f"{wheel.pin()}, from layers/wheels (this cairn is not a release)"
    return f"{wheel.pin()}, from the package index"


def summary(options: Options, report: Report) -> list[str]:
    """What ``cairn init`` prints once done."""
    if options.layer_only:
        done = [f"  wrote {path}" for path in report.written] + [f"  replaced {path}" for path in report.replaced]
        done += [f"  removed {path} (an older wheel)" for path in report.removed]
        return [f"Rewrote the layer's build in {options.folder / 'layers'} ({layer_source()}):", *done]
    lines = [
        f"Created the cairn bundle {options.folder} ({len(report.written)} files), on {options.runtime}; "
        f"its layer: {layer_source()}."
    ]
    lines += [f"  replaced {path} (it was there and differed)" for path in report.replaced]
    if options.pipeline is not None:
        lines.append(f'Added the example pipeline "{options.pipeline}" (cairn new).')
    lines += [
        "",
        "Next, in the bundle's folder:",
        f"  cd {options.folder}",
        "  pytest                   the example pipeline's tests and the template check",
        "  cairn dev                the stack on 127.0.0.1:3000 (API, dashboard), no AWS account",
        "  cairn new NAME           another pipeline",
        "  sam build && sam deploy --guided   the first deploy (then: sam build && sam deploy)",
    ]
    return lines
