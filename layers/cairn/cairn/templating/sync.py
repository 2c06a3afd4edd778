"""``cairn template sync``: write the registry's resources into the generated section of template.yaml."""

from __future__ import annotations

from pathlib import Path

from ..registry import PipelineRegistry
from . import resources, section
from .errors import TemplateError


def synced(text: str, registry: PipelineRegistry) -> str:
    """``text`` with its generated section rendered from ``registry`` (added at the end of Resources if absent)."""
    clashing = sorted(set(section.hand_written(text)) & set(resources.generated(registry)))
    if clashing:
        raise TemplateError(
            f"{', '.join(clashing)} written by hand outside the generated section: remove "
            f"{'them' if len(clashing) > 1 else 'it'}, the sync writes {'them' if len(clashing) > 1 else 'it'}"
        )
    return section.replace(text, section.render(registry))


def changes(before: str, after: str) -> list[str]:
    """What the sync changed, one line per generated resource added, changed or removed."""
    old = section.resources_of(section.current(before) or "")
    new = section.resources_of(section.current(after) or "")
    lines = [f"added {logical_id} ({new[logical_id]['Type']})" for logical_id in new if logical_id not in old]
    lines += [f"changed {logical_id}" for logical_id in new if logical_id in old and old[logical_id] != new[logical_id]]
    lines += [f"removed {logical_id} ({old[logical_id]['Type']})" for logical_id in old if logical_id not in new]
    if not lines and before != after:
        lines.append("rewrote the generated section (layout only)")
    return lines


def sync(template: Path, registry: PipelineRegistry) -> list[str]:
    """Bring ``template`` in line with ``registry``; what changed (nothing: already in sync)."""
    try:
        before = template.read_text(encoding="utf-8")
    except OSError as exc:
        raise TemplateError(f"cannot read {template}: {exc.strerror or exc}") from exc
    after = synced(before, registry)
    if after != before:
        template.write_text(after, encoding="utf-8")
    return changes(before, after)
