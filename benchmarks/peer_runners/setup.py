"""Create the peers' virtualenvs for ``benchmarks/peers.py``: ``.bench/venvs/<peer>``, from ``requirements-<peer>.txt``.

Idempotent: a virtualenv whose stamp names the same requirements and Python is left as it is; any other is
made anew, the peers in parallel (pip's downloads dominate). Progress goes to standard error; standard output
gets one line of JSON, ``{peer: {"ok": true, "python": ..., "cached": ..., "seconds": ...}}`` or
``{peer: {"ok": false, "reason": ...}}``. Nothing is ever installed into the test suite's ``.venv``.
Run: ``.venv/bin/python benchmarks/peer_runners/setup.py [--only dbos,aws,temporal]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VENVS = ROOT / ".bench" / "venvs"
PEERS = ("dbos", "aws", "temporal")
INSTALL_TIMEOUT = 420.0
STAMP = ".peers-installed"


def requirements(peer: str) -> Path:
    """The pinned requirements of ``peer``."""
    return HERE / f"requirements-{peer}.txt"


def python_of(venv: Path) -> Path:
    """The interpreter of a virtualenv."""
    return venv / "bin" / "python"


def _stamp(peer: str, base: str) -> str:
    return json.dumps({"python": base, "requirements": requirements(peer).read_text()}, sort_keys=True)


def _reason(log: Path, fallback: str) -> str:
    """The lines of pip's output that say what went wrong (its warnings about local indexes left out)."""
    lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if "Location 'file:" not in line and not line.startswith("WARNING: Retrying")]
    wanted = [line for line in errors if line.startswith("ERROR")] or errors[-3:]
    return " / ".join(wanted[-3:])[:600] or fallback


def _run(command: list[str], log: Path, timeout: float) -> None:
    with log.open("a") as output:
        output.write("$ " + " ".join(command) + "\n")
        output.flush()
        subprocess.run(
            command, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=timeout, check=True
        )


def install(peer: str, base: str, venvs: Path) -> dict[str, Any]:
    """Make ``peer``'s virtualenv unless it is already there with the pinned versions; what happened."""
    venv = venvs / peer
    stamp = venv / STAMP
    wanted = _stamp(peer, base)
    if python_of(venv).exists() and stamp.exists() and stamp.read_text() == wanted:
        print(f"peers: {peer}: {venv} is ready", file=sys.stderr)
        return {"ok": True, "python": str(python_of(venv)), "cached": True, "seconds": 0.0}
    started = time.perf_counter()
    shutil.rmtree(venv, ignore_errors=True)
    venvs.mkdir(parents=True, exist_ok=True)
    log = venvs / f"{peer}.log"
    log.write_text("")
    print(f"peers: {peer}: installing {requirements(peer).name} into {venv} (log: {log})", file=sys.stderr)
    try:
        _run([base, "-m", "venv", str(venv)], log, 120)
        pip = [str(python_of(venv)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        _run([*pip, "-r", str(requirements(peer))], log, INSTALL_TIMEOUT)
    except subprocess.TimeoutExpired as error:
        reason = f"pip install of {requirements(peer).name} timed out after {error.timeout:.0f} s"
        return {"ok": False, "reason": reason}
    except (OSError, subprocess.CalledProcessError) as error:
        return {"ok": False, "reason": f"installing {requirements(peer).name} failed: " + _reason(log, str(error))}
    stamp.write_text(wanted)
    seconds = time.perf_counter() - started
    print(f"peers: {peer}: installed in {seconds:.0f} s", file=sys.stderr)
    return {"ok": True, "python": str(python_of(venv)), "cached": False, "seconds": round(seconds, 1)}


def _base_python() -> str:
    """The interpreter the virtualenvs are made from: this one's base (not a virtualenv's own copy)."""
    candidate = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    return str(candidate) if candidate.exists() else sys.executable


def setup(peers: list[str], venvs: Path = VENVS) -> dict[str, dict[str, Any]]:
    """Every peer's virtualenv, made in parallel where missing; what happened to each."""
    base = _base_python()
    with ThreadPoolExecutor(max_workers=len(peers) or 1) as pool:
        futures = {peer: pool.submit(install, peer, base, venvs) for peer in peers}
    return {peer: future.result() for peer, future in futures.items()}


def main(argv: list[str] | None = None) -> int:
    """Set up the virtualenvs, print the outcome as JSON; 1 when one could not be made."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default=",".join(PEERS), help="comma-separated peers (default: all)")
    parser.add_argument("--venvs", type=Path, default=VENVS)
    arguments = parser.parse_args(argv)
    peers = [peer for peer in arguments.only.split(",") if peer]
    unknown = sorted(set(peers) - set(PEERS))
    if unknown:
        parser.error(f"unknown peers {unknown}; known: {', '.join(PEERS)}")
    outcome = setup(peers, arguments.venvs)
    print(json.dumps(outcome))
    return 0 if all(item["ok"] for item in outcome.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
