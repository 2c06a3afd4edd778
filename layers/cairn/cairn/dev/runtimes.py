"""Which Python runs a function's workers, and on which path: this one with this cairn, or the runtime's on the
built layers alone.

A function of the source template runs on the interpreter of ``cairn dev`` with this cairn on the path (the
banner says so when that is not the template's runtime, :func:`interpreter_line`). A function of a built template
(``cairn dev --template .aws-sam/build/template.yaml``) runs as Lambda runs it: on its runtime's Python (the
template's ``Globals: Function: Runtime``, ``python3.13`` say: on PATH, else the newest pyenv has), with nothing on
the path but the standard library, its code folder and its built layers' ``python/`` folders (``-S``: not that
Python's own site-packages), so what ``sam build`` produced is what answers; a layer built for another runtime
refuses to load, naming both (:mod:`cairn.layer_runtime`).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Collection, Mapping
from pathlib import Path

from ..core.errors import CairnError
from .models import FunctionConfig

WORKER = Path(__file__).resolve().with_name("worker.py")
"""The worker, run by path (``-P``: its folder is not put on the path): it imports nothing of cairn."""
_PYTHON_RUNTIME = re.compile(r"python(3\.\d+)")


class RuntimeNotFound(CairnError):
    """No interpreter of a built function's runtime is installed."""


def _version_of(candidate: str) -> str | None:
    done = subprocess.run(
        [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else None


@functools.cache
def interpreter_for(runtime: str) -> str:
    """The path of a Python for Lambda runtime ``runtime`` (``python3.13``): on PATH, else the newest pyenv has."""
    match = _PYTHON_RUNTIME.fullmatch(runtime)
    if match is None:
        raise RuntimeNotFound(f"cairn dev runs built Python functions only, not runtime {runtime!r}")
    version = match.group(1)
    candidates = [shutil.which(f"python{version}")]
    pyenv = shutil.which("pyenv")
    if pyenv is not None:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True, timeout=30, check=False).stdout.strip()
        if root:
            found = sorted(Path(root, "versions").glob(f"{version}.*/bin/python{version}"), reverse=True)
            candidates += [str(path) for path in found]
    for candidate in candidates:
        if candidate is not None and _version_of(candidate) == version:
            return candidate
    raise RuntimeNotFound(
        f"the built functions run on {runtime}: install Python {version} so that python{version} is on PATH "
        "(or run the source template, which runs on this Python)"
    )


def worker_launch(function: FunctionConfig, environment: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The command line (without the worker's arguments) and the environment of one of ``function``'s workers.

    Workers write no bytecode (``-B``): a worker started after a reload must import the code as saved, and bytecode
    a worker wrote for the old code passes for the new when an edit keeps the file's size within the same second.
    """
    variables = dict(environment)
    if not function.built_layers:
        return [sys.executable, "-B", "-P", str(WORKER)], variables
    variables["PYTHONPATH"] = os.pathsep.join(str(folder) for folder in function.built_layers)
    return [interpreter_for(function.runtime), "-B", "-S", "-P", str(WORKER)], variables


def interpreter_line(functions: Collection[FunctionConfig]) -> str:
    """The banner's line on which Python runs the functions: their runtime's for a built template; else this one,
    saying so when the template's runtime is another."""
    runtimes = sorted({function.runtime for function in functions if function.runtime})
    built = sorted({function.runtime for function in functions if function.built_layers and function.runtime})
    if built:
        shown = ", ".join(f"{runtime} ({interpreter_for(runtime)})" for runtime in built)
        return f"  python        {shown}: the runtime's, with only the built layers on the path"
    running = f"python{sys.version_info.major}.{sys.version_info.minor}"
    if not runtimes or runtimes == [running]:
        return f"  python        {running} ({sys.executable}), the template's runtime"
    return (
        f"  python        {running} ({sys.executable}), this cairn's; the template's runtime is "
        f"{', '.join(runtimes)}: cairn dev --template .aws-sam/build/template.yaml runs the built functions on it"
    )
