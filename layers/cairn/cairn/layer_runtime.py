"""The layer's runtime against the running Python: a layer built for another one refuses to load, saying so.

The layer build (``sam build``; :mod:`cairn.bundle.layer`) writes the Lambda runtime it installed compiled
dependencies and wrote bytecode for beside this module (:data:`MARKER`). On Lambda (``AWS_LAMBDA_FUNCTION_NAME``
set), importing cairn on another Python raises ImportError naming both and the fix, before a compiled dependency
(pydantic_core) fails with an error that names neither. Elsewhere, and without the marker, it checks nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

MARKER = "layer-runtime"
"""The file, beside this module in the built layer, that names the runtime it was built for (``python3.13``)."""


def check(
    environ: Mapping[str, str] = os.environ,
    running: str = f"python{sys.version_info.major}.{sys.version_info.minor}",
    folder: Path = Path(__file__).parent,
) -> None:
    """Raise ImportError when this is a Lambda function whose layer was built for another runtime."""
    if not environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        return
    try:
        built = (folder / MARKER).read_text(encoding="utf-8").strip()
    except OSError:
        return
    if not built.startswith("python") or built == running:
        return
    raise ImportError(
        f"The cairn layer was built for {built}, but this function runs on {running}: the layer's compiled "
        "dependencies and bytecode are for one Python. Choose the runtime once, in template.yaml's Globals: "
        f"Function: Runtime (cairn template check refuses a function that sets its own), then sam build again."
    )


check()
