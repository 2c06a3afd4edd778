"""Finish a built Lambda layer: check the state models, leave out the local tools, compile the bytecode.

``sam build`` runs the layer's Makefile (``layers/Makefile``), which installs the cairn wheel and the
pinned requirements into ``$(ARTIFACTS_DIR)/python`` and then runs this file *by path* with the
runtime's Python (the template's ``Globals: Function: Runtime``), naming the bundle's folder, the architecture
and the runtime::

    python3.13 python/cairn/bundle/layer.py python BUNDLE arm64 python3.13

It must not import the ``cairn`` package (the layer may hold compiled dependencies of another
architecture than the build machine's), so it uses the standard library only. First it runs the
bundle's state check (:func:`check_states`: ``cairn template check --states --seal``, with the cairn of
the bundle's environment): a state model changed in a way a saved state may not survive stops the build,
with the check's message. Then it removes :data:`LOCAL_ONLY` (this very module among them) and the
installed console scripts, and writes ``.pyc`` files with unchecked hashes: the layer's files never
change once deployed, and Lambda's read-only ``/opt`` could not take a recompiled file, so without them
every cold start would compile every module it imports again. Bytecode is only valid for the Python that wrote
it, so a build run by another Python than the runtime's stops; the layer records its architecture and runtime
(:mod:`cairn.layer_architecture`, :mod:`cairn.layer_runtime`).
"""

from __future__ import annotations

import compileall
import os
import py_compile
import shutil
import subprocess
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
RUNTIME_MARKER = "layer-runtime"
"""The file, in the built cairn package, that names the runtime the layer was built for."""
LEFT_OUT_FOLDERS = ("bin",)
"""What ``pip install --target`` writes beside the packages that a layer has no use for (console scripts)."""
SCHEMAS_FILE = "state-schemas.json"
"""The bundle's recorded state schemas (``cairn template sync`` writes them)."""
STATE_CHECK = ("template", "check", "--states", "--seal")
"""The cairn command a build runs: the state models against their recorded schemas, the provisional ones fixed."""


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


def check_interpreter(runtime: str) -> None:
    """Refuse to build for Lambda runtime ``runtime`` (``python3.13``) with another Python than its version."""
    wanted = runtime.removeprefix("python")
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    if not runtime.startswith("python") or running != wanted:
        raise LayerError(
            f"the layer's bytecode is for the Lambda runtime {runtime}, not Python {sys.version.split()[0]}: "
            f"run this with python{wanted} (the layers/Makefile finds it; RUNTIME_PYTHON chooses one)"
        )


def compile_bytecode(site: Path) -> bool:
    """Write each module's ``.pyc`` (unchecked hash) beside it, for this Python; whether every module compiled."""
    return bool(
        compileall.compile_dir(
            site,
            quiet=1,
            workers=1,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
    )


def cairn_command(bundle: Path) -> str | None:
    """The ``cairn`` command of the bundle's environment: its ``.venv``'s, else the one on PATH; None without."""
    for folder in ("bin", "Scripts"):
        for name in ("cairn", "cairn.exe"):
            own = bundle / ".venv" / folder / name
            if own.is_file() and os.access(own, os.X_OK):
                return str(own)
    return shutil.which("cairn")


def check_states(bundle: Path) -> int:
    """Run the bundle's state check with its cairn: 1 when a state model does not fit its recorded schema.

    The check's own lines say what is wrong (the same as ``cairn template check``). Without the schemas
    file there is nothing to check; without a cairn to run it, or when it cannot run (exit status 2), the
    build goes on with a warning: the job that resumes under a model that does not fit stops anyway, its
    checkpoint kept.
    """
    if not (bundle / SCHEMAS_FILE).is_file():
        return 0
    command = cairn_command(bundle)
    if command is None:
        print(
            f"cairn layer: warning: the state models were not checked against {SCHEMAS_FILE}: no cairn command "
            '(run sam build in the bundle\'s virtualenv, where pip install "cairn-lambda[dev]" put it)',
            file=sys.stderr,
        )
        return 0
    done = subprocess.run([command, *STATE_CHECK, "--root", str(bundle)], cwd=bundle, check=False)
    if done.returncode == 1:
        print(
            f"cairn layer: a state model does not fit {SCHEMAS_FILE} (above): the build stops before a stack "
            "saves states it cannot resume",
            file=sys.stderr,
        )
        return 1
    if done.returncode != 0:
        print(
            f"cairn layer: warning: the state models were not checked against {SCHEMAS_FILE} ({command} "
            f"exited with status {done.returncode}, above): run cairn template check in the bundle",
            file=sys.stderr,
        )
    return 0


def main(argv: list[str]) -> int:
    """``layer.py SITE [BUNDLE [ARCHITECTURE [RUNTIME]]]``: check the bundle's state models, then prune and
    compile the layer's ``python/`` folder, and record the architecture and the runtime it was built for
    (:mod:`cairn.layer_architecture`, :mod:`cairn.layer_runtime`); 1 when a state model does not fit, 2 with one
    line on a bad call or the wrong Python."""
    if len(argv) not in (2, 3, 4, 5):
        print("usage: layer.py LAYER_PYTHON_FOLDER [BUNDLE_FOLDER [ARCHITECTURE [RUNTIME]]]", file=sys.stderr)
        return 2
    site = Path(argv[1])
    try:
        if len(argv) == 5:
            check_interpreter(argv[4])
    except LayerError as exc:
        print(f"cairn layer: {exc}", file=sys.stderr)
        return 2
    if len(argv) >= 3 and check_states(Path(argv[2]).resolve()) != 0:
        return 1
    if len(argv) >= 4:
        if argv[3] not in ("arm64", "x86_64"):
            print(f"cairn layer: unknown architecture {argv[3]!r} (arm64 or x86_64)", file=sys.stderr)
            return 2
        (site / "cairn" / "layer-architecture").write_text(f"{argv[3]}\n", encoding="utf-8")
    if len(argv) == 5:
        (site / "cairn" / RUNTIME_MARKER).write_text(f"{argv[4]}\n", encoding="utf-8")
    try:
        removed = prune(site)
        compiled = compile_bytecode(site)
    except LayerError as exc:
        print(f"cairn layer: {exc}", file=sys.stderr)
        return 2
    runtime = f"python{sys.version_info.major}.{sys.version_info.minor}"
    print(f"cairn layer: left out {', '.join(removed) or 'nothing'}; bytecode compiled for {runtime}")
    return 0 if compiled else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
