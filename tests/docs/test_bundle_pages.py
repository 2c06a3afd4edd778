"""The getting-started pages' commands run as a bundle's user types them: from an empty folder outside this
checkout, the ```bash blocks of the own-bundle page (``cairn init my-bundle && cd my-bundle``, ``cairn new``,
``pytest``, ``sam validate --lint``...), then those of the first-deploy page in the bundle they made (``cairn
template check``, ``sam validate --lint``, ``pytest -q``, one plain ``sam build``). A block that needs AWS or runs
until stopped carries ``<!-- not run: the reason -->`` above its fence, except the local stack page's ``cairn dev``
lines (``<!-- each line serves until stopped -->``): each is started in the bundle, on a free port, until its API
answers, then stopped with Ctrl-C as a user stops it.

The shell is a user's with this checkout's cairn: the repository's virtualenv first on PATH (its ``cairn`` and
``pytest``) with this working tree's library on PYTHONPATH, the SAM CLI of ``.venv-sam``, and the runtime's Python
(``sam build`` compiles the layer with it and reaches the package index for the layer's wheels). Each block runs in
its own ``bash -e``, where the one before left off (a ``cd`` carries over).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
            return int(response.status) == 200
    except (OSError, urllib.error.URLError):
        return False


def serve_line(command: str, where: str, cwd: Path, environment: dict[str, str], log: Path) -> None:
    """Start ``command`` (a ``cairn dev`` line) in ``cwd`` on a free port (argparse takes the last ``--port``), wait
    until its API answers, then stop it with Ctrl-C: it must exit 0. Its output goes to ``log``."""
    port = free_port()
    with log.open("w", encoding="utf-8") as output:
        server = subprocess.Popen(
            ["bash", "-c", f"exec {command} --port {port}"],
            cwd=cwd,
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def said() -> str:
        return log.read_text(encoding="utf-8", errors="replace")[-4000:]

    try:
        deadline = time.monotonic() + 120
        while not answers(port):
            assert server.poll() is None, f"{where}: {command!r} exited {server.returncode}:\n{said()}"
            assert time.monotonic() < deadline, f"{where}: {command!r} did not answer on port {port}:\n{said()}"
            time.sleep(0.5)
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
        assert server.returncode == 0, f"{where}: {command!r} stopped with {server.returncode}:\n{said()}"
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


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
    served: list[str] = []
    for page in BUNDLE_PAGES:
        for block in shell_blocks(page):
            commands = [line.split("#", 1)[0].strip() for line in block.code.splitlines()]
            if block.serves:
                where = f"{page.relative_to(ROOT)}:{block.line}"
                for command in filter(None, commands):
                    serve_line(command, where, folder, environment, tmp_path / "dev.log")
                    served.append(command)
            elif block.not_run is None:
                folder = run_block(block, folder, environment, left_at)
                ran.extend(commands)
    bundle = tmp_path / "work" / "my-bundle"
    assert folder == bundle, "the pages' commands end in the bundle the first one made"
    assert (bundle / "functions" / "orders" / "pipeline.py").is_file()
    assert (bundle / "functions" / "demo_two" / "pipeline.py").is_file()
    assert (bundle / ".aws-sam" / "build" / "template.yaml").is_file(), "sam build built the bundle"
    assert not (bundle / "Makefile").exists()
    for needed in ("cairn template check", "sam validate --lint", "pytest -q", "sam build"):
        assert needed in ran, f"no page runs {needed!r}"
    assert ran.count("sam build") == 1, "one sam build is enough (it is the slow one)"
    assert "cairn dev" in served, "the local stack page's cairn dev ran in the bundle"
