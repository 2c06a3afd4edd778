"""The getting-started pages' commands run as a bundle's user types them: from an empty folder outside this
checkout, the ```bash blocks of the own-bundle page (``cairn init my-bundle && cd my-bundle``, ``cairn new``,
``pytest``, ``sam validate --lint``...), then those of the first-deploy page in the bundle they made (``cairn
template check``, ``sam validate --lint``, ``pytest -q``, one plain ``sam build``). A block that needs AWS or runs
until stopped carries ``<!-- not run: the reason -->`` above its fence.

The shell is a user's with this checkout's cairn: the repository's virtualenv first on PATH (its ``cairn`` and
``pytest``) with this working tree's library on PYTHONPATH, the SAM CLI of ``.venv-sam``, and the runtime's Python
(``sam build`` compiles the layer with it and reaches the package index for the layer's wheels). Each block runs in
its own ``bash -e``, where the one before left off (a ``cd`` carries over).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.docs.examples import BUNDLE_PAGES, ROOT, Example, shell_blocks
from tests.tools import missing

pytestmark = pytest.mark.xdist_group("own-bundle")
SAM_BIN = ROOT / ".venv-sam" / "bin"
VENV_BIN = ROOT / ".venv" / "bin"


def shell() -> dict[str, str]:
    """A user's shell with this checkout's cairn and nothing of the test run (no pytest or coverage variables)."""
    left_out = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYENV_VERSION"}
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in left_out and not key.startswith(("PYTEST_", "COV_CORE_"))
    }
    environment["PATH"] = os.pathsep.join([str(VENV_BIN), str(SAM_BIN), environment.get("PATH", "")])
    environment["PYTHONPATH"] = str(ROOT / "layers" / "cairn")
    environment["SAM_CLI_TELEMETRY"] = "0"
    return environment


def run_block(block: Example, cwd: Path, environment: dict[str, str], left_at: Path) -> Path:
    """Run ``block`` in ``cwd`` as ``bash -e``; the folder it ends in, or the test fails with its output."""
    script = f"{block.code}\npwd > {left_at}\n"
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    where = f"{block.page.relative_to(ROOT)}:{block.line}"
    assert done.returncode == 0, f"{where} failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return Path(left_at.read_text().strip())


def test_the_getting_started_commands_run_in_a_fresh_bundle(tmp_path: Path) -> None:
    if not (SAM_BIN / "sam").exists():
        missing(f"the SAM CLI ({SAM_BIN / 'sam'}): make test installs it")
    if shutil.which("bash") is None:
        missing("bash, to run the pages' shell blocks")
    environment = shell()
    folder = tmp_path / "work"
    folder.mkdir()
    left_at = tmp_path / "cwd"
    ran: list[str] = []
    for page in BUNDLE_PAGES:
        for block in shell_blocks(page):
            if block.not_run is None:
                folder = run_block(block, folder, environment, left_at)
                ran.extend(line.split("#", 1)[0].strip() for line in block.code.splitlines())
    bundle = tmp_path / "work" / "my-bundle"
    assert folder == bundle, "the pages' commands end in the bundle the first one made"
    assert (bundle / "functions" / "orders" / "pipeline.py").is_file()
    assert (bundle / "functions" / "demo_two" / "pipeline.py").is_file()
    assert (bundle / ".aws-sam" / "build" / "template.yaml").is_file(), "sam build built the bundle"
    assert not (bundle / "Makefile").exists()
    for needed in ("cairn template check", "sam validate --lint", "pytest -q", "sam build"):
        assert needed in ran, f"no page runs {needed!r}"
    assert ran.count("sam build") == 1, "one sam build is enough (it is the slow one)"
