"""Finish a built Lambda layer: leave out the local tools, then compile its bytecode for the runtime.

``sam build`` runs the layer's Makefile (``layers/Makefile``), which installs the cairn wheel and the
pinned requirements into ``$(ARTIFACTS_DIR)/python`` and then runs this file *by path* with the
runtime's Python (3.12)::

    python3.12 python/cairn/bundle/layer.py python

It must not import the ``cairn`` package (the layer may hold compiled dependencies of another
architecture than the build machine's), so it uses the standard library only. It removes
:data:`LOCAL_ONLY` (this very module among them) and the installed console scripts, then writes
``.pyc`` files with unchecked hashes: the layer's files never change once deployed, and Lambda's
read-only ``/opt`` could not take a recompiled file, so without them every cold start would compile
every module it imports again.
"""

from __future__ import annotations

import compileall
import py_compile
import shutil
import sys
from pathlib import Path

LOCAL_ONLY = (
    "testing",
    "cli.py",
    "__main__.py",
    "client",
    "dev",
    "bundle",
)
"""Parts of the cairn package (paths inside it) that never go into the layer: the ``dev`` extra's tools.
The dashboard's files stay (the deployed API serves them); its local proxy (``cairn dashboard``, in ``client``)
does not."""
RUNTIME = (3, 12)
"""The Lambda runtime's Python: the bytecode is only valid for the interpreter that wrote it."""
LEFT_OUT_FOLDERS = ("bin",)
"""What ``pip install --target`` writes beside the packages that a layer has no use for (console scripts)."""


class LayerError(Exception):
    """The layer cannot be finished (not a layer folder, or the wrong Python)."""


def prune(site: Path) -> list[str]:
    """Remove the local tools from the cairn package installed in ``site``; the paths removed."""
    package = site / "cairn"
    if not (package / "__init__.py").is_file():
        raise LayerError(f"{site} holds no cairn package (expected {package / '__init__.py'})")
    removed: list[str] = []
    for relative in LOCAL_ONLY:
        path = package / relative
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        else:
            continue
        removed.append(f"cairn/{relative}")
    for folder in LEFT_OUT_FOLDERS:
        if (site / folder).is_dir():
            shutil.rmtree(site / folder)
    for cache in list(site.rglob("__pycache__")):
        shutil.rmtree(cache)
    return removed


def compile_bytecode(site: Path) -> bool:
    """Write each module's ``.pyc`` (unchecked hash) beside it; whether every module compiled."""
    if sys.version_info[:2] != RUNTIME:
        wanted = ".".join(map(str, RUNTIME))
        raise LayerError(
            f"the layer's bytecode is for the Lambda runtime, Python {wanted}, not {sys.version.split()[0]}: "
            f"run this with python{wanted}"
        )
    return bool(
        compileall.compile_dir(
            site,
            quiet=1,
            workers=1,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
    )


def main(argv: list[str]) -> int:
    """``layer.py SITE``: prune and compile the layer's ``python/`` folder; 2 with one line on a bad call."""
    if len(argv) != 2:
        print("usage: python3.12 layer.py LAYER_PYTHON_FOLDER", file=sys.stderr)
        return 2
    site = Path(argv[1])
    try:
        removed = prune(site)
        compiled = compile_bytecode(site)
    except LayerError as exc:
        print(f"cairn layer: {exc}", file=sys.stderr)
        return 2
    print(f"cairn layer: left out {', '.join(removed) or 'nothing'}; bytecode compiled for the runtime")
    return 0 if compiled else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
