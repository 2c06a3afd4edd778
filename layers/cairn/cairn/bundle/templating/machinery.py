"""cairn's machinery in a bundle's template: what lies between a ``# >>> cairn machinery: NAME`` line and its
``# <<< cairn machinery: NAME`` line.

A bundle's template is its owner's outside those lines (their resources, parameters, conditions and outputs)
and cairn's inside: the table, the bucket, the queues, the API, the scheduler, the alarms, their parameters and
settings. ``cairn template sync`` writes each block as the template cairn ships (``cairn init``'s) has it, for
the cairn installed, keeping what is the bundle's own: its runtime (``Globals.Function.Runtime``, which the layer's
``CompatibleRuntimes`` follows, :mod:`cairn.bundle.python_runtime`) and the ``Default`` of each of cairn's
parameters (``cairn init --driver`` writes one).

Each block's first line names the sha256 of its lines as cairn wrote them (the owner's lines aside). So a block
whose lines still have that digest is a cairn's, perhaps an older one's, which a sync replaces; a block whose
lines do not was changed by hand, and a sync refuses to replace it (that would lose the change) unless told to
discard the change. ``cairn template check`` names the first line changed by hand. A template without blocks (a
bundle made before cairn kept them) is left as it is.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
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
_MARKER = re.compile(r"^(\s*)# (>>>|<<<) cairn machinery: ([\w-]+)(?: \(sha256 ([0-9a-f]{12})\))?")
_TOP_LEVEL_KEY = re.compile(r"[A-Za-z]\w*:")
_PARAMETER = re.compile(r"  ([A-Za-z0-9]+):\s*$")
_DEFAULT = re.compile(r"    Default:( .*)?$")
_OWNERS_DEFAULT = "    Default: <the bundle's>\n"
SHIPPED = Path(str(package_files.files("cairn.bundle") / "skeleton" / "template.yaml"))
"""The template ``cairn init`` writes: where each block's text comes from."""
_ANY_RUNTIME = "<the bundle's runtime>"
DISCARD = "--discard-edits"
"""The option of ``cairn template sync`` that replaces blocks changed by hand."""


class MachineryEditedError(TemplateError):
    """A sync that would lose changes made by hand inside cairn's machinery."""


@dataclass(frozen=True)
class Block:
    """One block: its name, its lines (0-based, both markers included: ``first`` to ``last`` inclusive), and the
    digest its first line names (None: it names none)."""

    name: str
    first: int
    last: int
    stamp: str | None = None


def blocks(text: str) -> dict[str, Block]:
    """The template's blocks by name, in order; TemplateError when the marker lines do not pair up."""
    found: dict[str, Block] = {}
    opened: tuple[str, int, str | None] | None = None
    for index, line in enumerate(text.splitlines()):
        marker = _MARKER.match(line)
        if marker is None:
            continue
        _indent, kind, name, stamp = marker.groups()
        if kind == ">>>":
            if opened is not None:
                raise TemplateError(f'line {index + 1}: "{START}{name}" inside the block "{opened[0]}" (not closed)')
            if name in found:
                raise TemplateError(f'line {index + 1}: a second block "{START}{name}"')
            opened = (name, index, stamp)
        elif opened is None or opened[0] != name:
            raise TemplateError(f'line {index + 1}: "{END}{name}" closes no open "{START}{name}" line')
        else:
            found[name] = Block(name, opened[1], index, opened[2])
            opened = None
    if opened is not None:
        raise TemplateError(f'line {opened[1] + 1}: "{START}{opened[0]}" is never closed by "{END}{opened[0]}"')
    return found


def _lines(text: str, block: Block) -> list[str]:
    return text.splitlines(keepends=True)[block.first : block.last + 1]


def _masked(text: str) -> str:
    """``text`` (a template, or one block of it) with the owner's lines saying so: the runtime and each parameter's
    ``Default``, which a sync keeps and a digest leaves out."""
    with contextlib.suppress(python_runtime.RuntimeChoiceError):  # a block without the runtime's lines
        text = python_runtime.set_runtime(text, _ANY_RUNTIME)
    lines = text.splitlines(keepends=True)
    for index in _defaults(lines).values():
        lines[index] = _OWNERS_DEFAULT
    return "".join(lines)


def _body(block_text: str) -> str:
    """A block's lines between its markers, the owner's lines masked (and Windows line ends read as ``\\n``: a
    checkout that converts them has not changed a line)."""
    return "".join(_masked(block_text.replace("\r\n", "\n")).splitlines(keepends=True)[1:-1])


def digest(body: str) -> str:
    """What a block's first line names: the start of the sha256 of its lines between the markers (masked)."""
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:12]


def stamp(text: str) -> str:
    """``text`` with each block's first line naming the digest of the block's lines, as cairn writes it."""
    lines = text.splitlines(keepends=True)
    for block in blocks(text).values():
        indent = _MARKER.match(lines[block.first]).group(1)  # type: ignore[union-attr]
        found = digest(_body("".join(_lines(text, block))))
        lines[block.first] = f"{indent}{START}{block.name} (sha256 {found})\n"
    return "".join(lines)


def expected(text: str, shipped: str | None = None) -> dict[str, str]:
    """Each block's text as cairn writes it for ``text`` (a bundle's template): the shipped block, stamped, with the
    bundle's runtime and parameter defaults where the shipped template has its own."""
    source = stamp(shipped if shipped is not None else SHIPPED.read_text(encoding="utf-8"))
    loaded = cfnyaml.load(text)
    runtime = python_runtime.chosen(loaded) if isinstance(loaded, dict) else None
    if isinstance(runtime, str) and runtime.strip() and "\n" not in runtime:
        source = python_runtime.set_runtime(source, runtime)
    source = _with_defaults(source, text)
    return {name: "".join(_lines(source, block)) for name, block in blocks(source).items()}


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


@dataclass(frozen=True)
class Difference:
    """How a block differs from what cairn writes: ``stamp`` (its first line only), ``cairn`` (another cairn wrote it,
    unchanged since) or ``hand`` (changed by hand), and where (``where``: a line, for ``hand``)."""

    name: str
    kind: str
    where: str


def differences(text: str, wanted: dict[str, str]) -> list[Difference]:
    """The blocks of ``text`` that differ from ``wanted`` (their names shared) other than in the owner's lines."""
    found = []
    for name, block in blocks(text).items():
        if name not in wanted:
            continue
        actual = "".join(_lines(text, block))
        mine, theirs = _body(actual), _body(wanted[name])
        if mine == theirs:
            if block.stamp != digest(mine):
                found.append(Difference(name, "stamp", str(block.first + 1)))
        elif block.stamp == digest(mine):
            found.append(Difference(name, "cairn", str(block.first + 1)))
        else:
            lines = actual.splitlines()[1:-1]
            found.append(Difference(name, "hand", _first_change(lines, wanted[name].splitlines()[1:-1], block)))
    return found


def _unknown_and_missing(present: dict[str, Block], wanted: dict[str, str]) -> tuple[list[str], list[str]]:
    return [name for name in present if name not in wanted], [name for name in wanted if name not in present]


def synced(text: str, shipped: str | None = None, *, discard_edits: bool = False) -> str:
    """``text`` with each of its blocks written as cairn writes it; unchanged when it has none.

    MachineryEditedError when a block was changed by hand (its lines are not those its first line names), unless
    ``discard_edits``: the sync would lose the change.
    """
    present = blocks(text)
    if not present:
        return text
    wanted = expected(text, shipped)
    unknown, missing = _unknown_and_missing(present, wanted)
    if unknown:
        raise TemplateError(
            f"the template's cairn machinery {', '.join(unknown)} is not a block {spelled()} writes: "
            "a newer cairn's? install it, or copy the block from a template `cairn init` makes"
        )
    if missing:
        raise TemplateError(
            f"the template lacks the cairn machinery {', '.join(missing)} this cairn writes: copy "
            f"{'them' if len(missing) > 1 else 'it'} from a template `cairn init` makes, then run cairn template sync"
        )
    edited = [item for item in differences(text, wanted) if item.kind == "hand"]
    if edited and not discard_edits:
        raise MachineryEditedError(
            "; ".join(_by_hand(item) for item in edited)
            + f": a sync would lose {'them' if len(edited) > 1 else 'it'}, so it changed nothing. Move your change "
            f"outside the block, then run cairn template sync {DISCARD} to write cairn's"
        )
    lines = text.splitlines(keepends=True)
    for block in sorted(present.values(), key=lambda item: item.first, reverse=True):
        lines[block.first : block.last + 1] = [wanted[block.name]]
    return "".join(lines)


def _by_hand(item: Difference) -> str:
    return f'line {item.where}, in the cairn machinery "{item.name}", was changed by hand'


def problems(text: str, shipped: str | None = None) -> list[str]:
    """One line per block that differs from what cairn writes (the owner's lines aside: the runtime's are
    :mod:`cairn.bundle.python_runtime`'s to check), naming the first line changed by hand."""
    try:
        present = blocks(text)
        wanted = expected(text, shipped) if present else {}
    except TemplateError as exc:
        return [str(exc)]
    unknown, missing = _unknown_and_missing(present, wanted)
    found = [f'the cairn machinery "{name}" is not a block {spelled()} writes (a newer cairn\'s?)' for name in unknown]
    for item in differences(text, wanted):
        if item.kind == "hand":
            found.append(
                f"{_by_hand(item)}: {spelled()} writes it otherwise: move your change outside the block, then run "
                f"cairn template sync {DISCARD}"
            )
        elif item.kind == "cairn":
            found.append(
                f'the cairn machinery "{item.name}" (line {item.where}) is another cairn\'s, unchanged since: run '
                f"cairn template sync to write {spelled()}'s"
            )
        else:
            found.append(
                f'line {item.where}: the sha256 the cairn machinery "{item.name}" names is not its lines\': run '
                "cairn template sync"
            )
    return found + [
        f'no cairn machinery "{name}" where {spelled()} has one: copy it from a template `cairn init` makes'
        for name in missing
    ]


def _first_change(actual: list[str], wanted: list[str], block: Block) -> str:
    """The first line between the block's markers that differs, as ``N (was ..., cairn writes ...)``."""
    matcher = difflib.SequenceMatcher(a=actual, b=wanted, autojunk=False)
    for tag, a_start, _a_end, b_start, _b_end in matcher.get_opcodes():
        if tag == "equal":
            continue
        line = block.first + 2 + a_start
        if tag == "insert":
            return f"{line} (cairn writes {wanted[b_start].strip()!r} before it)"
        was = actual[a_start].strip()
        if tag == "delete":
            return f"{line} ({was!r} is not cairn's)"
        return f"{line} ({was!r}; cairn writes {wanted[b_start].strip()!r})"
    return str(block.first + 1)
