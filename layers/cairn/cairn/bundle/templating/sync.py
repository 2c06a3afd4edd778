"""``cairn template sync``: write the registry's resources into the generated section of template.yaml, and
cairn's machinery (:mod:`.machinery`) as the cairn installed writes it.

The parameters and conditions the old section used (a removed pipeline's, say) that nothing uses
after it go with it; a hand-written one the section never used stays (``cairn template check`` names it).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...core.errors import StorageError
from ...core.registry import PipelineRegistry
from ...distribution import spelled
from ...storage.file_io import replace_file
from . import cfnyaml, declarations, machinery, references, resources, section
from .errors import TemplateError


def _loaded(text: str) -> Mapping[str, Any]:
    loaded = cfnyaml.load(text)
    return loaded if isinstance(loaded, Mapping) else {}


def left_over(before: str, after: str) -> dict[str, list[str]]:
    """The parameters and conditions, by section, that ``before``'s section used and nothing in ``after`` uses."""
    used_by_section = references.referenced(section.resources_of(section.current(before) or ""))
    return references.removable(_loaded(after), references.with_conditions(used_by_section, _loaded(before)))


def synced(text: str, registry: PipelineRegistry, shipped: str | None = None, *, discard_edits: bool = False) -> str:
    """``text`` with its generated section rendered from ``registry`` (added at the end of Resources if absent),
    without the parameters and conditions only the section it replaced used, and with cairn's machinery as the
    cairn installed writes it (:mod:`.machinery`), or as the template ``shipped`` has it: a block changed by hand
    raises :class:`.machinery.MachineryEditedError` unless ``discard_edits``."""
    clashing = sorted(set(section.hand_written(text)) & set(resources.generated(registry)))
    if clashing:
        raise TemplateError(
            f"{', '.join(clashing)} written by hand outside the generated section: remove "
            f"{'them' if len(clashing) > 1 else 'it'}, the sync writes {'them' if len(clashing) > 1 else 'it'}"
        )
    after = section.replace(machinery.synced(text, shipped, discard_edits=discard_edits), section.render(registry))
    for part, names in left_over(text, after).items():
        after = declarations.remove(after, part, names)
    return after


def changes(before: str, after: str) -> list[str]:
    """What the sync changed: one line per generated resource added, changed or removed, and per declaration removed."""
    old = section.resources_of(section.current(before) or "")
    new = section.resources_of(section.current(after) or "")
    lines = [f"added {logical_id} ({new[logical_id]['Type']})" for logical_id in new if logical_id not in old]
    lines += [f"changed {logical_id}" for logical_id in new if logical_id in old and old[logical_id] != new[logical_id]]
    lines += [f"removed {logical_id} ({old[logical_id]['Type']})" for logical_id in old if logical_id not in new]
    if before != after:
        was, now = _loaded(before), _loaded(after)
        lines += [
            f"removed {part}.{name} (only the generated section used it)"
            for part in references.DECLARATIONS
            for name in references.declared(was, part)
            if name not in references.declared(now, part)
        ]
    lines += [
        f"rewrote the cairn machinery {name} (as {spelled()} writes it)"
        for name, block in machinery.blocks(after).items()
        if name in machinery.blocks(before) and _block(before, name) != _block(after, name)
    ]
    if not lines and before != after:
        lines.append("rewrote the generated section (layout only)")
    return lines


def _block(text: str, name: str) -> str:
    block = machinery.blocks(text)[name]
    return "".join(text.splitlines(keepends=True)[block.first : block.last + 1])


def sync(template: Path, registry: PipelineRegistry, *, discard_edits: bool = False) -> list[str]:
    """Bring ``template`` in line with ``registry``; what changed (nothing: already in sync)."""
    try:
        before = template.read_text(encoding="utf-8")
    except OSError as exc:
        raise TemplateError(f"cannot read {template}: {exc.strerror or exc}") from exc
    after = synced(before, registry, discard_edits=discard_edits)
    if after != before:
        _rewrite(template, after)
    return changes(before, after)


def _rewrite(template: Path, text: str) -> None:
    """Write ``template`` whole or not at all (a crash mid-write leaves the old one), keeping its permissions."""
    try:
        mode = template.stat().st_mode & 0o777
        replace_file(template, text.encode("utf-8"), lasting=False, temp_prefix=f".{template.name}.")
        template.chmod(mode)
    except (OSError, StorageError) as exc:
        raise TemplateError(f"cannot write {template}: {exc}; it is as it was") from exc
