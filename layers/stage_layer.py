"""Stage the Lambda layer's source: the cairn package as it runs in Lambda, without the local tools.

The ``cairn`` distribution (``layers/cairn``) also ships what runs only on a laptop or in tests: the
test kit and local stack (``cairn.testing``), the command line (``cairn.cli``), ``cairn new``'s
scaffold (``cairn.scaffold``) and ``cairn template``'s tools (``cairn.templating``). ``sam build``
copies a layer's whole source folder, so the layer is built from a staged copy that leaves them out.
Run: ``python layers/stage_layer.py build/layer`` (``make build`` and the build test do).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "cairn"
#: Parts of the cairn package (paths inside it) that never go into the layer (the dev extra's tools). The
#: dashboard's files stay in the layer; its local server (``cairn dashboard``) does not.
LOCAL_ONLY = (
    "testing",
    "cli.py",
    "__main__.py",
    "scaffold.py",
    "templating",
    "dev",
    "client",
    "dashboard/proxy.py",
    "dashboard/command.py",
)


def _left_out(directory: str, names: list[str]) -> set[str]:
    package = (SOURCE / "cairn").resolve()
    folder = Path(directory).resolve()
    inside = folder.relative_to(package).as_posix() if folder.is_relative_to(package) else None
    local = {name for name in names if inside is not None and (Path(inside) / name).as_posix() in LOCAL_ONLY}
    return local | {name for name in names if name == "__pycache__" or name.endswith(".pyc")}


def stage(destination: Path) -> Path:
    """Copy the layer's source (requirements.txt and the runtime package) into ``destination``, afresh."""
    if destination.exists():
        shutil.rmtree(destination)
    destination.mkdir(parents=True)
    shutil.copy2(SOURCE / "requirements.txt", destination / "requirements.txt")
    shutil.copytree(SOURCE / "cairn", destination / "cairn", ignore=_left_out)
    return destination


def main(argv: list[str]) -> int:
    """Stage into the folder given (default: build/layer beside the template)."""
    target = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "build" / "layer"
    print(f"staged the cairn layer in {stage(target)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
