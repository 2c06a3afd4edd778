"""A bundle of one's own, as a user makes it: outside this checkout, with only `pip install cairn-lambda[dev]`.

The first test builds the checkout's wheel (``python -m build --wheel``: the distribution cairn-lambda), installs
it with the dev extra into a fresh virtualenv, and in a folder outside the checkout runs ``cairn init --runtime``
(the default runtime, python3.13), ``cairn new orders``; the user then makes ``start`` an ``async def`` phase that
charges once through ``ctx.idempotency_key`` and ``ctx.step``, with its tests on the test kit (a crash after the
step, and one before its result was saved: the charge made once, the key the same), and runs ``cairn template
check``, ``pytest``, ``sam validate --lint`` and plain ``sam build``; then the built artifacts run jobs to
``complete`` on both drivers, their results carrying the step's kept receipt: ``cairn dev`` on the built template
runs the built API, scheduler and phase handlers on the runtime's Python, whose path holds only the built layer
and the function's code folder, against moto. The second test does the same for a fresh
clone of this repository. Each other runtime cairn supports gets the short path: ``cairn init --runtime``, plain
``sam build`` and one job through the built handlers on that runtime's Python (skipped, saying which, where this
machine has no such Python). They need the SAM CLI (.venv-sam) and the runtime's Python, and reach the package
index for the layer's wheels.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
import tomllib
from collections.abc import Mapping
from pathlib import Path

import pytest

from cairn.bundle import python_runtime
from cairn.client.http import ApiClient
from cairn.dev.process import dev_process
from cairn.dev.runtimes import RuntimeNotFound, interpreter_for
from tests.bundle.test_machinery import USER_PART_LIMIT, user_lines
from tests.template.builds import RUNTIME, check_repository_build, interpreter_tag
from tests.template.cfn import ROOT, load_yaml_template
from tests.template.user_code import ORDERS_PIPELINE, ORDERS_TEST_NAMES, ORDERS_TESTS
from tests.tools import missing

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.xdist_group("own-bundle")]
HOST_ARCHITECTURE = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}[
    platform.machine().lower()
]
"""The architecture the built layer must have for this machine's Python to import it."""
LOCAL_ONLY_MODULES = ("testing", "dev", "cli.py", "client", "bundle")
OTHER_RUNTIMES = [runtime for runtime in python_runtime.SUPPORTED if runtime != python_runtime.DEFAULT]
"""The runtimes a bundle may choose besides the default: each gets the short path (a build and one job)."""


def runtime_python(runtime: str) -> str:
    """The Python of Lambda runtime ``runtime`` (which `sam build` compiles the layer with). Without one: the
    default runtime's is a missing tool (a failure where tools are required); another runtime's test is skipped,
    naming it (CI runs each runtime whose Python the machine has)."""
    try:
        return interpreter_for(runtime)
    except RuntimeNotFound as exc:
        reason = f"no Python for {runtime} on this machine to build and run its layer with: {exc}"
        if runtime == python_runtime.DEFAULT:
            missing(reason)
        pytest.skip(reason)


def user_environment(*first: Path) -> dict[str, str]:
    """A shell of a user's: ``first`` folders at the head of PATH, nothing of this checkout on the path."""
    left_out = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYENV_VERSION"}
    environment = {key: value for key, value in os.environ.items() if key not in left_out}
    environment["PATH"] = os.pathsep.join([*(str(folder) for folder in first), environment.get("PATH", "")])
    environment["SAM_CLI_TELEMETRY"] = "0"
    return environment


def run(command: list[str | Path], cwd: Path, environment: dict[str, str], timeout: float = 600) -> str:
    """Run ``command`` as the user would; its output, or the test fails with it."""
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    shown = " ".join(str(part) for part in command)
    assert done.returncode == 0, f"{shown} failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout + done.stderr


def untracked_in_library() -> list[str]:
    """Files in layers/cairn that git does not know, ignored ones included (a build's leftovers)."""
    done = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--untracked-files=all", "layers/cairn"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted(line for line in done.stdout.splitlines() if "__pycache__" not in line)


INSTALLED = """
import json
from importlib import metadata
import cairn
found = metadata.distribution("cairn-lambda")
print(json.dumps({"name": found.metadata["Name"], "url": json.loads(found.read_text("direct_url.json"))["url"],
                  "package": cairn.__file__}))
"""
"""What the user's virtualenv says of the installed cairn: its distribution's name, where it was installed from,
where ``import cairn`` finds it."""


@pytest.fixture(scope="module")
def user_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv where the wheel of the checkout's layers/cairn was installed with its dev extra
    (``pip install "cairn_lambda-X.Y.Z-py3-none-any.whl[dev]"``); the checkout is left clean."""
    venv = tmp_path_factory.mktemp("user") / "venv"
    wheels = venv.parent / "dist"
    environment = user_environment()
    before = untracked_in_library()
    library = ROOT / "layers" / "cairn"
    build: list[str | Path] = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", wheels, library]
    run(build, venv.parent, environment)
    (wheel,) = wheels.glob("cairn_lambda-*-py3-none-any.whl")
    run([sys.executable, "-m", "venv", venv], venv.parent, environment)
    python = venv / "bin" / "python"
    pip: list[str | Path] = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    run([*pip, f"{wheel}[dev]"], venv.parent, environment, timeout=900)
    assert untracked_in_library() == before, "building and installing the wheel left files in the checkout"
    installed = json.loads(run([python, "-c", INSTALLED], venv.parent, environment))
    assert installed["name"] == "cairn-lambda"
    assert installed["url"] == wheel.as_uri()  # from the wheel, not the source folder
    assert Path(installed["package"]).is_relative_to(venv)
    return venv


def wait_complete(api: ApiClient, job_id: str, timeout: float = 90.0) -> dict[str, object]:
    """The job once it ends; it must end ``complete``."""
    deadline = time.monotonic() + timeout
    while True:
        job = api.get(job_id)
        if job["status"] in ("complete", "error", "cancelled") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert job["status"] == "complete", job
    return job


def built_layer(bundle: Path, runtime: str) -> Path:
    """The built layer's ``python/`` folder, checked: cairn and its pins for this machine and ``runtime``, bytecode,
    no local tools."""
    tag = interpreter_tag(runtime)
    built = load_yaml_template(bundle / ".aws-sam" / "build" / "template.yaml")
    layer: Path = bundle / ".aws-sam" / "build" / str(built["Resources"]["CairnLayer"]["Properties"]["ContentUri"])
    layer /= "python"
    assert (layer / "cairn" / "aws" / "phase_handler.py").is_file()
    assert list((layer / "cairn" / "core" / "engine" / "__pycache__").glob(f"advancing.{tag}.pyc"))
    assert (layer / "cairn" / "layer-runtime").read_text(encoding="utf-8") == f"{runtime}\n"
    for module in LOCAL_ONLY_MODULES:
        assert not (layer / "cairn" / module).exists(), f"the layer holds the local tool cairn/{module}"
    assert not (layer / "moto").exists()
    assert not (layer / "bin").exists()
    (extension,) = layer.glob("pydantic_core/_pydantic_core.*.so")
    assert f"{tag}-{ {'arm64': 'aarch64'}.get(HOST_ARCHITECTURE, HOST_ARCHITECTURE) }" in extension.name
    return layer


def run_jobs_on_the_built_stack(
    bundle: Path,
    python: Path,
    environment: dict[str, str],
    pipeline: str,
    state: Mapping[str, object],
    log: Path,
    drivers: tuple[str, ...] = ("direct", "stepfunctions"),
) -> list[dict[str, object]]:
    """``cairn dev`` on the built template, each driver: a job of ``pipeline`` completes; the jobs, by driver."""
    jobs = []
    for driver in drivers:
        arguments = ("--template", ".aws-sam/build/template.yaml", "--driver", driver, "--no-reload")
        with dev_process(log / f"{driver}.log", *arguments, cwd=bundle, env=environment, python=python) as dev:
            api = ApiClient(dev.base_url)
            api.start(pipeline, state=state, job_id=f"built-{driver}")
            jobs.append(wait_complete(api, f"built-{driver}"))
    return jobs


def shell(user_venv: Path, runtime: str) -> tuple[Path, dict[str, str]]:
    """The user's virtualenv's bin folder, and a shell with it and the Python of ``runtime`` on PATH."""
    bin_folder = user_venv / "bin"
    return bin_folder, user_environment(bin_folder, Path(runtime_python(runtime)).parent)


def test_a_users_bundle_from_cairn_init_builds_with_plain_sam_build_and_runs(
    user_venv: Path, sam_cli: Path, tmp_path: Path
) -> None:
    runtime = python_runtime.DEFAULT
    bin_folder, environment = shell(user_venv, runtime)
    cairn = bin_folder / "cairn"
    work = tmp_path / "work"
    work.mkdir()

    run([cairn, "init", "my-bundle", "--arch", HOST_ARCHITECTURE, "--runtime", runtime], work, environment)
    bundle = work / "my-bundle"
    run([cairn, "new", "orders"], bundle, environment)
    (bundle / "functions" / "orders" / "pipeline.py").write_text(ORDERS_PIPELINE, encoding="utf-8")
    (bundle / "tests" / "pipelines" / "test_orders.py").write_text(ORDERS_TESTS, encoding="utf-8")
    run([cairn, "template", "check"], bundle, environment)
    own = user_lines((bundle / "template.yaml").read_text(encoding="utf-8"))
    assert len(own) <= USER_PART_LIMIT, "the part of the template the user edits stays short"
    tests = run([bin_folder / "pytest", "-v"], bundle, environment)
    assert "5 passed" in tests  # two tests per pipeline (the example's and orders') and the template check
    assert "failed" not in tests
    for name in ORDERS_TEST_NAMES:
        assert f"tests/pipelines/test_orders.py::{name} PASSED" in tests
    run([sam_cli, "validate", "--lint"], bundle, environment)
    run([sam_cli, "build"], bundle, environment)

    # A cairn installed from the checkout is not a release: the layer pins its version and installs its wheel.
    version = tomllib.loads((ROOT / "layers" / "cairn" / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "version"
    ]
    pinned = f"cairn-lambda=={version}"
    assert (bundle / "layers" / "requirements.txt").read_text(encoding="utf-8").splitlines()[-1] == pinned
    assert [path.name for path in (bundle / "layers" / "wheels").iterdir()] == [
        f"cairn_lambda-{version}-py3-none-any.whl"
    ]
    layer = built_layer(bundle, runtime)
    assert (layer / f"cairn_lambda-{version}.dist-info" / "METADATA").is_file()
    state = {"items": ["a", " ", "b"]}
    for job in run_jobs_on_the_built_stack(bundle, bin_folder / "python", environment, "orders", state, tmp_path):
        result = job["result"]
        assert isinstance(result, dict)
        assert result["results"] == ["A", "B"]
        receipt = result["receipt"]  # what ctx.step kept in the async phase, carried to the job's result
        assert receipt == {"charge": "ch_1", "amount": 2, "key": receipt["key"]}
        assert re.fullmatch(r"cairn-[0-9a-f]{32}", receipt["key"])


@pytest.mark.parametrize("runtime", OTHER_RUNTIMES)
def test_a_bundle_on_each_other_runtime_builds_and_runs_a_job_through_its_built_handlers(
    user_venv: Path, sam_cli: Path, tmp_path: Path, runtime: str
) -> None:
    bin_folder, environment = shell(user_venv, runtime)
    work = tmp_path / "work"
    work.mkdir()

    run([bin_folder / "cairn", "init", "shop", "--arch", HOST_ARCHITECTURE, "--runtime", runtime], work, environment)
    bundle = work / "shop"
    run([sam_cli, "build"], bundle, environment)

    built_layer(bundle, runtime)
    state = {"items": ["a"]}
    run_jobs_on_the_built_stack(bundle, bin_folder / "python", environment, "example", state, tmp_path, ("direct",))


def test_a_fresh_clone_of_this_repository_builds_with_plain_sam_build_and_runs(
    user_venv: Path, sam_cli: Path, tmp_path: Path
) -> None:
    bin_folder, environment = shell(user_venv, RUNTIME)
    clone = tmp_path / "cairn"
    run(["git", "clone", "--quiet", ROOT, clone], tmp_path, environment)

    run([sam_cli, "build", "--parameter-overrides", f"Architecture={HOST_ARCHITECTURE}"], clone, environment)

    built_layer(clone, RUNTIME)
    check_repository_build(clone / ".aws-sam" / "build", HOST_ARCHITECTURE)
    state = {"text": "Invoice 1042\nTotal: 99.50 EUR\n"}
    run_jobs_on_the_built_stack(clone, bin_folder / "python", environment, "document-intake", state, tmp_path)
