"""cairn's machinery in a bundle's template: what lies between a ``# >>> cairn machinery: NAME`` line and its
``# <<< cairn machinery: NAME`` line.

A bundle's template is its owner's outside those lines (their resources, parameters, conditions and outputs)
and cairn's inside: the table, the bucket, the queues, the API, the scheduler, the alarms, their parameters and
settings. ``cairn template sync`` writes each block as the template cairn ships (``cairn init``'s) has it, for
the cairn installed, keeping what is the bundle's own: its runtime (``Globals.Function.Runtime``, which the layer's
``CompatibleRuntimes`` follows, :mod:`cairn.bundle.python_runtime`) and the ``Default`` of each of cairn's
parameters (``cairn init --driver`` writes one); ``cairn template check`` names the first other line changed in a
block. A template without blocks (a bundle made before cairn kept them) is left as it is.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from importlib import resources as package_files
from pathlib import Path

from ...distribution import spelled
from .. import python_runtime
from . import cfnyaml
from .errors import TemplateError

START = "# >>> cairn machinery: "
END = "# <<< cairn machinery: "
_MARKER = re.compile(r"^\s*# (>>>|<<<) cairn machinery: (\S+)")
_TOP_LEVEL_KEY = re.compile(r"[A-Za-z]\w*:")
_PARAMETER = re.compile(r"  ([A-Za-z0-9]+):\s*$")
_DEFAULT = re.compile(r"    Default:( .*)?$")
SHIPPED = Path(str(package_files.files("cairn.bundle") / "skeleton" / "template.yaml"))
"""The template ``cairn init`` writes: where each block's text comes from."""
_ANY_RUNTIME = "<the bundle's runtime>"


@dataclass(frozen=True)
class Block:
    """One block: its name and its lines (0-based, both markers included: ``first`` to ``last`` inclusive)."""

    name: str
    first: int
    last: int


def blocks(text: str) -> dict[str, Block]:
    """The template's blocks by name, in order; TemplateError when the marker lines do not pair up."""
    found: dict[str, Block] = {}
    opened: tuple[str, int] | None = None
    for index, line in enumerate(text.splitlines()):
        marker = _MARKER.match(line)
        if marker is None:
            continue
        kind, name = marker.groups()
        if kind == ">>>":
            if opened is not None:
                raise TemplateError(f'line {index + 1}: "{START}{name}" inside the block "{opened[0]}" (not closed)')
            if name in found:
                raise TemplateError(f'line {index + 1}: a second block "{START}{name}"')
            opened = (name, index)
        elif opened is None or opened[0] != name:
            raise TemplateError(f'line {index + 1}: "{END}{name}" closes no open "{START}{name}" line')
        else:
            found[name] = Block(name, opened[1], index)
            opened = None
    if opened is not None:
        raise TemplateError(f'line {opened[1] + 1}: "{START}{opened[0]}" is never closed by "{END}{opened[0]}"')
    return found


def _text(text: str, block: Block) -> str:
    return "".join(text.splitlines(keepends=True)[block.first : block.last + 1])


def expected(text: str, shipped: str | None = None) -> dict[str, str]:
    """Each block's text as cairn writes it for ``text`` (a bundle's template): the shipped block, with the
    bundle's runtime where the shipped template names its own."""
    source = shipped if shipped is not None else SHIPPED.read_text(encoding="utf-8")
    loaded = cfnyaml.load(text)
    runtime = python_runtime.chosen(loaded) if isinstance(loaded, dict) else None
    if isinstance(runtime, str) and runtime.strip() and "\n" not in runtime and _ANY_RUNTIME not in source:
        source = python_runtime.set_runtime(source, runtime)
    source = _with_defaults(source, text)
    return {name: _text(source, block) for name, block in blocks(source).items()}


def _defaults(lines: list[str]) -> dict[str, int]:
    """Where each parameter's one-line ``Default`` is, by parameter name."""
    found: dict[str, int] = {}
    start = next((index for index, line in enumerate(lines) if line.rstrip() == "Parameters:"), None)
    if start is None:
        return found
    parameter = None
    for index in range(start + 1, len(lines)):
        line = lines[index].rstrip("\n")
        if _TOP_LEVEL_KEY.match(line):
            break
        named = _PARAMETER.match(line)
        if named is not None:
            parameter = named.group(1)
        elif parameter is not None and _DEFAULT.match(line):
            found.setdefault(parameter, index)
    return found


def _with_defaults(source: str, text: str) -> str:
    """``source`` with the ``Default`` lines of the parameters it shares with ``text`` taken from ``text``."""
    wanted, own = source.splitlines(keepends=True), text.splitlines(keepends=True)
    theirs = _defaults(own)
    for parameter, index in _defaults(wanted).items():
        if parameter in theirs:
            wanted[index] = own[theirs[parameter]].rstrip("\n") + "\n"
    return "".join(wanted)


def synced(text: str, shipped: str | None = None) -> str:
    """``text`` with each of its blocks written as cairn writes it; unchanged when it has none."""
    present = blocks(text)
    if not present:
        return text
    wanted = expected(text, shipped)
    unknown = [name for name in present if name not in wanted]
    if unknown:
        raise TemplateError(
            f"the template's cairn machinery {', '.join(unknown)} is not a block {spelled()} writes: "
            "a newer cairn's? install it, or copy the block from a template `cairn init` makes"
        )
    missing = [name for name in wanted if name not in present]
    if missing:
        raise TemplateError(
            f"the template lacks the cairn machinery {', '.join(missing)} this cairn writes: copy "
            f"{'them' if len(missing) > 1 else 'it'} from a template `cairn init` makes, then run cairn template sync"
        )
    lines = text.splitlines(keepends=True)
    for block in sorted(present.values(), key=lambda item: item.first, reverse=True):
        lines[block.first : block.last + 1] = [wanted[block.name]]
    return "".join(lines)


def _runtime_masked(text: str) -> str:
    """``text`` with its runtime lines saying :data:`_ANY_RUNTIME`: a runtime the machinery and the layer
    disagree on is :mod:`cairn.bundle.python_runtime`'s finding, not an edit of the machinery."""
    try:
        return python_runtime.set_runtime(text, _ANY_RUNTIME)
    except python_runtime.RuntimeChoiceError:
        return text


def problems(text: str, shipped: str | None = None) -> list[str]:
    """One line per block that differs from what cairn writes, naming its first changed line (the runtime
    lines aside: :mod:`cairn.bundle.python_runtime` checks them)."""
    source = shipped if shipped is not None else SHIPPED.read_text(encoding="utf-8")
    try:
        present = blocks(text)
        wanted = expected(text, _runtime_masked(source)) if present else {}
    except TemplateError as exc:
        return [str(exc)]
    text = _runtime_masked(text)
    found = []
    for name, block in present.items():
        if name not in wanted:
            found.append(f'the cairn machinery "{name}" is not a block {spelled()} writes (a newer cairn\'s?)')
            continue
        actual = _text(text, block).splitlines()
        if actual == wanted[name].splitlines():
            continue
        found.append(
            f"line {_first_change(actual, wanted[name].splitlines(), block)}, in the cairn "
            f'machinery "{name}": {spelled()} writes it otherwise: run cairn template sync to restore it '
            "(your own lines go outside the block)"
        )
    found += [
        f'no cairn machinery "{name}" where {spelled()} has one: copy it from a template `cairn init` makes'
        for name in wanted
        if name not in present
    ]
    return found


def _first_change(actual: list[str], wanted: list[str], block: Block) -> str:
    """The first line of the block that differs, as ``N (was ..., cairn writes ...)``."""
    matcher = difflib.SequenceMatcher(a=actual, b=wanted, autojunk=False)
    for tag, a_start, _a_end, b_start, _b_end in matcher.get_opcodes():
        if tag == "equal":
            continue
        line = block.first + 1 + a_start
        if tag == "insert":
            return f"{line} (cairn writes {wanted[b_start].strip()!r} before it)"
        was = actual[a_start].strip()
        if tag == "delete":
            return f"{line} ({was!r} is not cairn's)"
        return f"{line} ({was!r}; cairn writes {wanted[b_start].strip()!r})"
    return str(block.first + 1)
