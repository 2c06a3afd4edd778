"""The layer's architecture against the machine's: a layer built for the other one refuses to load, saying so.

The layer build (``sam build``; :mod:`cairn.bundle.layer`) writes the architecture it installed compiled
dependencies for beside this module (:data:`MARKER`). On Lambda (``AWS_LAMBDA_FUNCTION_NAME`` set), importing
cairn on the other architecture raises ImportError naming both and the command that fixes it, before a
compiled dependency (pydantic_core) fails with an error that names neither. Elsewhere, and without the marker
(cairn installed from PyPI, the source tree), it checks nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

MARKER = "layer-architecture"
"""The file, beside this module in the built layer, that names the architecture it was built for."""
ARCHITECTURES = {"x86_64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}
"""Lambda's name for each machine ``uname`` reports."""


def _machine() -> str:
    return os.uname().machine


def check(
    environ: Mapping[str, str] = os.environ,
    machine: Callable[[], str] = _machine,
    folder: Path = Path(__file__).parent,
) -> None:
    """Raise ImportError when this is a Lambda function whose layer was built for another architecture."""
    if not environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        return
    try:
        built = (folder / MARKER).read_text(encoding="utf-8").strip()
    except OSError:
        return
    running = ARCHITECTURES.get(machine())
    if running is None or built not in ARCHITECTURES.values() or built == running:
        return
    raise ImportError(
        f"The cairn layer was built for {built}, but this function runs on {running}: the layer's compiled "
        f"dependencies cannot load. Build and deploy with one Architecture: set it once in template.yaml and "
        f"samconfig.toml (cairn init --arch {running} writes both), or pass the same "
        f"--parameter-overrides Architecture={running} to both sam build and sam deploy."
    )


check()
