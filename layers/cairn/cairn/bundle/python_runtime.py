"""The Lambda runtime a bundle runs on, chosen once: ``Globals: Function: Runtime`` in its template.

``cairn init --runtime`` writes it there, and in the cairn layer's ``CompatibleRuntimes``. Everything else
follows that one value: the layer's build (``layers/Makefile`` reads it from the template, installs the wheels
for that Python and compiles the bytecode with its interpreter), ``cairn dev`` on a built template (each
function on its runtime's Python, :mod:`cairn.dev.runtimes`) and the built layer itself, which refuses to load
under another Python (:mod:`cairn.layer_runtime`). ``cairn template check`` refuses a runtime cairn does not
support, a layer declared for another runtime, and a function that sets its own.

Supporting the next runtime (:data:`NEXT`, once its interpreter is there to build and test with, and the
layer's pinned requirements have wheels for it) is adding it to :data:`SUPPORTED`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.errors import CairnError

SUPPORTED = ("python3.12", "python3.13")
"""The runtimes cairn builds its layer for and tests on."""
DEFAULT = "python3.13"
"""What ``cairn init`` chooses without ``--runtime``: the newest supported runtime (the longest Lambda support)."""
NEXT = "python3.14"
"""The runtime Lambda offers that cairn does not support yet."""
LAYER = "CairnLayer"
"""The layer whose compiled dependencies and bytecode are for one Python."""
WHERE = "Globals.Function.Runtime"
"""Where the choice lives, as ``cairn template check`` names it."""
OLD_MAKEFILE = "PYTHON312"
"""What names the layer build of a cairn before the runtime could be chosen (it built for python3.12 alone)."""
_GLOBALS_RUNTIME = re.compile(r"^(Globals:\n(?:(?:  .*|#.*|[ \t]*)\n)*?    Runtime: ).*$", re.MULTILINE)
_LAYER_RUNTIMES = re.compile(
    rf"^(  {LAYER}:\n(?:    .*\n)*?      CompatibleRuntimes:\n)(?:        - .*\n)+", re.MULTILINE
)


class RuntimeChoiceError(CairnError):
    """A runtime cairn does not support, or a template whose runtime cannot be set."""


def refusal(runtime: str) -> str | None:
    """Why cairn cannot run on ``runtime`` (one sentence), None when it is supported."""
    if runtime in SUPPORTED:
        return None
    known = " or ".join(SUPPORTED)
    if runtime == NEXT:
        return f"{runtime} is not supported yet (the next runtime cairn will support): choose {known}"
    return f"{runtime!r} is not a runtime cairn supports: choose {known}"


def version(runtime: str) -> str:
    """The Python version of a supported runtime: ``3.13`` for ``python3.13``."""
    return runtime.removeprefix("python")


def chosen(template: Mapping[str, Any]) -> Any:
    """``Globals.Function.Runtime`` of a loaded template (None without one)."""
    shared = template.get("Globals")
    function = shared.get("Function") if isinstance(shared, Mapping) else None
    return function.get("Runtime") if isinstance(function, Mapping) else None


def set_runtime(text: str, runtime: str) -> str:
    """``text`` (a template) with ``Globals.Function.Runtime`` and the layer's ``CompatibleRuntimes`` set to
    ``runtime``, every other line as it was."""
    changed, found = _GLOBALS_RUNTIME.subn(lambda match: match.group(1) + runtime, text, count=1)
    changed, listed = _LAYER_RUNTIMES.subn(lambda match: f"{match.group(1)}        - {runtime}\n", changed, count=1)
    if found != 1 or listed != 1:
        raise RuntimeChoiceError(f"the template has no {WHERE} or {LAYER} CompatibleRuntimes to set: reinstall cairn")
    return changed


def problems(template: Mapping[str, Any], root: Path | None = None) -> list[str]:
    """What is wrong with the template's runtime, one line each: unset or unsupported, the layer declared
    for another, a function on another, and (``root``: the bundle's folder) a layer build that cannot follow it."""
    runtime = chosen(template)
    if not isinstance(runtime, str):
        return [
            f"{WHERE}: not set: set it to {' or '.join(SUPPORTED)}, the one runtime every function and the "
            "layer's build (layers/Makefile) follow"
        ]
    why = refusal(runtime)
    if why is not None:
        return [f"{WHERE}: {why} (cairn init --runtime writes it, and the layer's CompatibleRuntimes)"]
    found: list[str] = []
    resources = template.get("Resources")
    resources = resources if isinstance(resources, Mapping) else {}
    layer = resources.get(LAYER)
    declared = layer.get("Properties", {}).get("CompatibleRuntimes") if isinstance(layer, Mapping) else None
    if declared is not None and declared != [runtime]:
        listed = ", ".join(map(str, declared)) if isinstance(declared, list) else repr(declared)
        found.append(
            f"{LAYER}.CompatibleRuntimes: {listed}, but the functions run on {runtime} ({WHERE}): the layer's "
            f"compiled dependencies and bytecode are built for {runtime} alone: list it only"
        )
    for logical_id, resource in resources.items():
        own = resource.get("Properties", {}).get("Runtime") if isinstance(resource, Mapping) else None
        if resource_is_function(resource) and own is not None and own != runtime:
            found.append(
                f"{logical_id}.Runtime: {own!r}, but the layer is built for {runtime} ({WHERE}): remove it, the "
                "runtime is chosen once for every function"
            )
    return found + ([] if root is None else makefile_problems(root, runtime))


def makefile_problems(root: Path, runtime: str) -> list[str]:
    """The bundle's ``layers/Makefile`` when it is an older cairn's, which builds for python3.12 whatever the
    template says."""
    try:
        text = (root / "layers" / "Makefile").read_text(encoding="utf-8")
    except OSError:
        return []
    if OLD_MAKEFILE not in text or runtime == "python3.12":
        return []
    return [
        f"layers/Makefile: an older cairn's layer build, for python3.12 alone, but the functions run on {runtime} "
        f"({WHERE}): run cairn init --layer-only . to rewrite layers/ for the template's runtime"
    ]


def resource_is_function(resource: Any) -> bool:
    """Whether ``resource`` is a SAM function (the ones ``Globals.Function`` applies to)."""
    return isinstance(resource, Mapping) and resource.get("Type") == "AWS::Serverless::Function"
