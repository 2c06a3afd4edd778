"""The generated section of template.yaml: its text, and finding or replacing it between its markers.

The section sits in ``Resources`` between a line ``# >>> cairn template sync`` and a line
``# <<< cairn template sync``. Everything between (the markers included) is written by
:func:`render`; the rest of the template is never touched.
"""

from __future__ import annotations

import re
from typing import Any

from ...core import naming
from ...core.registry import PipelineRegistry
from . import cfnyaml, dashboard, machinery, resources
from .errors import TemplateError

START = "# >>> cairn template sync"
END = "# <<< cairn template sync"
INDENT = 2
"""Resources are indented by two spaces under ``Resources:``."""
_RULE = "# " + "-" * 64
_TOP_LEVEL_KEY = re.compile(r"[A-Za-z]\w*:")
_MACHINERY = f"{machinery.START}stack"


def _pipeline_ids(registry: PipelineRegistry) -> list[tuple[str, list[str]]]:
    """Each pipeline's heading and the logical ids of its resources."""
    groups: list[tuple[str, list[str]]] = []
    for pipeline in registry:
        ids = [
            naming.resource_id(pipeline.name, phase, kind)
            for phase in pipeline.phase_names
            for kind in ("Function", "Role", "LogGroup")
        ]
        groups.append((f"{pipeline.name}: {', '.join(pipeline.phase_names)}", ids + resources.alarm_ids(pipeline)))
    return groups


def render(registry: PipelineRegistry) -> str:
    """The whole section, markers included, for ``registry``."""
    generated = resources.generated(registry)
    pad = " " * INDENT
    lines = [
        f"{pad}{START}: generated from the pipeline registry (functions/pipelines.py); do not edit by hand.",
        f"{pad}# `cairn template sync` rewrites it; `cairn template check` fails while it and the registry disagree.",
        f"{pad}# One function per phase, named <stack>-<pipeline>-<phase>; each phase's timeout, memory, environment",
        f"{pad}# and IAM statements are declared in Python: @pipeline.phase(timeout=..., memory=..., environment=...,",
        f"{pad}# statements=...). Lambda's own async retries are off (the scheduler applies the phase's retry policy),",
        f"{pad}# and RecursiveLoop is Allow on purpose: a job is one chain of invocations (docs/RELIABILITY.md).",
    ]
    groups = [
        *_pipeline_ids(registry),
        ("invoking the stack's functions", [resources.INVOKE_POLICY]),
        ("the stack's dashboard", [dashboard.DASHBOARD]),
    ]
    for heading, ids in groups:
        lines += ["", f"{pad}{_RULE} {heading}"]
        blocks = [cfnyaml.dump({logical_id: generated[logical_id]}, INDENT).rstrip("\n") for logical_id in ids]
        lines.append("\n\n".join(blocks))
    lines.append(f"{pad}{END}")
    return "\n".join(lines) + "\n"


def span(text: str) -> tuple[int, int] | None:
    """The first and one-past-last line numbers (0-based) of the section, markers included; None without it."""
    lines = text.splitlines()
    starts = [index for index, line in enumerate(lines) if line.strip().startswith(START)]
    ends = [index for index, line in enumerate(lines) if line.strip().startswith(END)]
    if not starts and not ends:
        return None
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise TemplateError(f'the template needs exactly one "{START}" line followed by one "{END}" line')
    return starts[0], ends[0] + 1


def current(text: str) -> str | None:
    """The section as it is in ``text``; None when the template has none."""
    found = span(text)
    if found is None:
        return None
    lines = text.splitlines(keepends=True)
    return "".join(lines[found[0] : found[1]])


def replace(text: str, section: str) -> str:
    """``text`` with its section replaced by ``section``, or with ``section`` added at the end of Resources."""
    lines = text.splitlines(keepends=True)
    found = span(text)
    if found is None:
        found = (_end_of_resources(lines),) * 2
        section = "\n" + section
    return "".join(lines[: found[0]]) + section + "".join(lines[found[1] :])


def _end_of_resources(lines: list[str]) -> int:
    """The line after the last resource: before the next top-level key (and its comments) or at the end; or,
    in a template with cairn's machinery in Resources, before it."""
    found = [index for index, line in enumerate(lines) if line.strip().startswith(_MACHINERY)]
    if found:
        return found[0]
    starts = [index for index, line in enumerate(lines) if line.rstrip() == "Resources:"]
    if len(starts) != 1:
        raise TemplateError("the template has no Resources section to put the phase functions in")
    end = len(lines)
    for index in range(starts[0] + 1, len(lines)):
        if _TOP_LEVEL_KEY.match(lines[index]):
            end = index
            break
    while end > starts[0] + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1
    return end


def without(text: str) -> str:
    """``text`` without its section: the hand-written template."""
    found = span(text)
    if found is None:
        return text
    lines = text.splitlines(keepends=True)
    return "".join(lines[: found[0]] + lines[found[1] :])


def resources_of(section: str) -> dict[str, Any]:
    """The resources a section holds, by logical id (an empty section holds none)."""
    body = "".join(line[INDENT:] if line.startswith(" " * INDENT) else line for line in section.splitlines(True))
    loaded = cfnyaml.load(body)
    return dict(loaded) if isinstance(loaded, dict) else {}


def hand_written(text: str) -> dict[str, Any]:
    """The template's resources outside the generated section, by logical id."""
    try:
        loaded = cfnyaml.load(without(text))
    except Exception as exc:  # PyYAML's errors say where
        raise TemplateError(f"the template does not parse: {exc}") from exc
    found = loaded.get("Resources") if isinstance(loaded, dict) else None
    return dict(found) if isinstance(found, dict) else {}
