"""``cairn init``: what it writes, what it refuses, and how `--force` keeps a user's files (the bundle's own checks,
pytest and ``cairn new`` in it run in tests/template/test_own_bundle.py, from a fresh virtualenv)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from cairn.bundle import init as init_module
from cairn.bundle import python_runtime, wheel
from cairn.bundle.templating import cfnyaml
from tests.bundle.skeleton import ROOT

EXPECTED = (
    "template.yaml",
    "samconfig.toml",
    "pyproject.toml",
    "README.md",
    ".gitignore",
    "functions/pipelines.py",
    "functions/phases.py",
    "functions/api/app.py",
    "functions/scheduler/app.py",
    "layers/Makefile",
    "layers/requirements.txt",
    "layers/arm64/platform.mk",
    "layers/x86_64/platform.mk",
    "statemachine/pipeline.asl.json",
    "events/api/create-job.json",
    "events/api/health.json",
    "events/scheduler/scheduled-sweep.json",
    "events/statemachine/start.json",
    "events/env.json",
    "tests/test_bundle.py",
)


def environment() -> dict[str, str]:
    """A user's shell: the installed cairn only (this checkout's is installed editable in .venv, and named on
    PYTHONPATH so that a second working tree of the repository runs its own)."""
    shell = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    return {**shell, "PYTHONPATH": str(ROOT / "layers" / "cairn")}


def cairn(*arguments: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cairn", *(str(argument) for argument in arguments)]
    return subprocess.run(command, cwd=cwd, env=environment(), capture_output=True, text=True, timeout=300, check=False)


def init(tmp_path: Path, *arguments: str, name: str = "shop") -> Path:
    done = cairn("init", name, *arguments, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp_path / name


def test_init_writes_a_complete_bundle_with_its_example_pipeline(tmp_path: Path) -> None:
    bundle = init(tmp_path)

    for relative in EXPECTED:
        assert (bundle / relative).is_file(), relative
    assert (bundle / "functions" / "example" / "pipeline.py").is_file()
    assert (bundle / "tests" / "pipelines" / "test_example.py").is_file()
    assert {path.name for path in (bundle / "events" / "phases" / "example").iterdir()} == {"start.json", "finish.json"}
    template = cfnyaml.load((bundle / "template.yaml").read_text(encoding="utf-8"))
    assert "ExampleStartFunction" in template["Resources"]
    assert template["Resources"]["PipelineStateMachine"]["Properties"]["DefinitionUri"] == (
        "statemachine/pipeline.asl.json"
    )
    for sample_only in ("DocumentsBucket", "AgentModelId"):
        assert sample_only not in template["Parameters"]
    samconfig = tomllib.loads((bundle / "samconfig.toml").read_text(encoding="utf-8"))
    assert samconfig["default"]["global"]["parameters"]["stack_name"] == "shop"
    assert samconfig["prod"]["global"]["parameters"]["stack_name"] == "shop-prod"
    # cairn installed from this checkout is not a release: the layer pins its version and takes its wheel.
    assert (bundle / "layers" / "requirements.txt").read_text(encoding="utf-8").splitlines()[-1] == (
        f"cairn-lambda=={wheel.installed_version()}"
    )
    (wheel_file,) = (bundle / "layers" / "wheels").glob("cairn_lambda-*-py3-none-any.whl")
    with zipfile.ZipFile(wheel_file) as archive:
        names = archive.namelist()
    assert "cairn/aws/phase_handler.py" in names
    assert f"cairn_lambda-{wheel.installed_version()}.dist-info/METADATA" in names
    assert any(name.endswith(".dist-info/METADATA") for name in names)
    assert not [name for name in names if "__pycache__" in name]


def test_the_driver_and_architecture_are_the_template_s_defaults_and_samconfig_s(tmp_path: Path) -> None:
    bundle = init(tmp_path, "--driver", "stepfunctions", "--arch", "x86_64", "--pipeline", "billing")

    parameters = cfnyaml.load((bundle / "template.yaml").read_text(encoding="utf-8"))["Parameters"]
    assert parameters["Driver"]["Default"] == "stepfunctions"
    assert parameters["Architecture"]["Default"] == "x86_64"
    samconfig = tomllib.loads((bundle / "samconfig.toml").read_text(encoding="utf-8"))
    overrides = {name: samconfig[name]["global"]["parameters"]["parameter_overrides"] for name in ("default", "prod")}
    assert overrides == {"default": "Architecture=x86_64", "prod": "Architecture=x86_64 Stage=prod"}
    assert (bundle / "functions" / "billing" / "pipeline.py").is_file()


@pytest.mark.parametrize(
    ("arguments", "runtime"), [((), python_runtime.DEFAULT), (("--runtime", "python3.12"), "python3.12")]
)
def test_the_runtime_is_written_once_and_the_template_check_passes(
    tmp_path: Path, arguments: tuple[str, ...], runtime: str
) -> None:
    bundle = init(tmp_path, "--no-example", *arguments)

    text = (bundle / "template.yaml").read_text(encoding="utf-8")
    template = cfnyaml.load(text)
    assert template["Globals"]["Function"]["Runtime"] == runtime
    assert template["Resources"]["CairnLayer"]["Properties"]["CompatibleRuntimes"] == [runtime]
    assert re.findall(r"python3\.\d+", text) == [runtime, runtime]  # nowhere else: the layer's build reads it
    readme = (bundle / "README.md").read_text(encoding="utf-8")
    assert f"The runtime, {runtime}, is chosen once" in readme
    assert f"needs python{python_runtime.version(runtime)}" in readme
    checked = cairn("template", "check", cwd=bundle)
    assert checked.returncode == 0, checked.stderr


def test_without_an_example_the_registry_is_empty_and_cairn_new_fills_it(tmp_path: Path) -> None:
    bundle = init(tmp_path, "--no-example")

    assert not (bundle / "tests" / "pipelines").exists()
    assert cairn("template", "check", cwd=bundle).returncode == 0
    added = cairn("new", "orders", cwd=bundle)
    assert added.returncode == 0, added.stderr
    registry = (bundle / "functions" / "pipelines.py").read_text(encoding="utf-8")
    assert "from orders.pipeline import pipeline as orders\n" in registry
    assert cairn("template", "check", cwd=bundle).returncode == 0


def test_a_folder_that_is_not_empty_is_refused_and_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "template.yaml").write_text("mine\n")

    refused = cairn("init", folder, cwd=tmp_path)

    assert refused.returncode == 2
    assert "is not empty" in refused.stderr
    assert "--force" in refused.stderr
    assert [path.name for path in folder.iterdir()] == ["template.yaml"]
    assert (folder / "template.yaml").read_text() == "mine\n"


def test_force_writes_into_a_folder_and_names_every_file_it_replaces(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "template.yaml").write_text("mine\n")
    (folder / "notes.txt").write_text("kept\n")

    done = cairn("init", folder, "--force", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert "replaced template.yaml" in done.stdout
    assert (folder / "notes.txt").read_text() == "kept\n"
    assert cairn("template", "check", cwd=folder).returncode == 0


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder``: a file's bytes, None for a folder."""
    return {
        path.relative_to(folder).as_posix(): None if path.is_dir() else path.read_bytes()
        for path in sorted(folder.rglob("*"))
    }


def users_folder(tmp_path: Path) -> Path:
    """A folder of the user's own files, some of which cairn init writes too."""
    folder = tmp_path / "mine"
    (folder / "functions").mkdir(parents=True)
    (folder / "README.md").write_text("my notes\n")
    (folder / "template.yaml").write_text("mine\n")
    (folder / "functions" / "pipelines.py").write_text("# mine\n")
    return folder


@pytest.mark.parametrize(
    ("in_the_way", "message"),
    [
        ("events/env.json", "events/env.json is a folder where cairn init writes a file"),
        ("events", "events is a file where cairn init needs a folder"),
    ],
)
def test_force_checks_every_path_first_and_a_refusal_leaves_the_folder_as_it_was(
    tmp_path: Path, in_the_way: str, message: str
) -> None:
    folder = users_folder(tmp_path)
    if in_the_way == "events":
        (folder / "events").write_text("not a folder\n")
    else:
        (folder / in_the_way / "kept").mkdir(parents=True)
    before = snapshot(folder)

    refused = cairn("init", folder, "--force", cwd=tmp_path)

    assert refused.returncode == 2
    assert message in refused.stderr
    assert "Traceback" not in refused.stderr
    assert snapshot(folder) == before


def stopped_while_writing(tmp_path: Path, ready: Callable[[Path, dict[str, bytes | None]], bool]) -> None:
    """``cairn init --force`` sent SIGTERM once ``ready`` says so: it stops, and the folder is as it was."""
    folder = users_folder(tmp_path)
    before = snapshot(folder)
    command = [sys.executable, "-m", "cairn", "init", str(folder), "--force"]
    env = {**environment(), "CAIRN_INIT_PAUSE": "1"}  # a test hook: a pause before each file is moved in
    with subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as init:
        deadline = time.monotonic() + 120
        while not ready(folder, before):
            assert init.poll() is None, init.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.01)
        init.send_signal(signal.SIGTERM)
        _, stderr = init.communicate(timeout=60)

    assert init.returncode == 128 + signal.SIGTERM, stderr
    assert b"stopped" in stderr
    assert b"Traceback" not in stderr
    assert snapshot(folder) == before


def test_sigterm_once_a_file_is_replaced_puts_it_back_and_leaves_the_folder_as_it_was(tmp_path: Path) -> None:
    stopped_while_writing(tmp_path, lambda folder, before: (folder / "README.md").read_bytes() != before["README.md"])


def test_sigterm_while_the_bundle_is_made_leaves_the_folder_as_it_was(tmp_path: Path) -> None:
    stopped_while_writing(tmp_path, lambda folder, before: any(folder.glob(".cairn-init-*")))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("--pipeline", "Bad_Name"), "invalid pipeline name 'Bad_Name'"),
        (("--pipeline", "json"), "would hide the module 'json'"),
        (("--driver", "lambda"), "invalid choice: 'lambda'"),
        (("--arch", "riscv64"), "invalid choice: 'riscv64'"),
        (("--runtime", "python3.11"), "'python3.11' is not a runtime cairn supports: choose python3.12 or python3.13"),
        (("--runtime", python_runtime.NEXT), f"{python_runtime.NEXT} is not supported yet"),
        (("--runtime", "nodejs22.x"), "'nodejs22.x' is not a runtime cairn supports"),
    ],
)
def test_bad_options_are_refused_in_one_line_and_write_nothing(
    tmp_path: Path, arguments: tuple[str, ...], message: str
) -> None:
    done = cairn("init", "shop", *arguments, cwd=tmp_path)

    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "shop").exists()


def test_layer_only_rewrites_the_layer_s_build_of_an_existing_bundle(tmp_path: Path) -> None:
    bundle = init(tmp_path)
    (bundle / "layers" / "Makefile").write_text("stale\n")
    template = (bundle / "template.yaml").read_text(encoding="utf-8")

    done = cairn("init", "--layer-only", bundle, cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert "replaced layers/Makefile" in done.stdout
    assert (bundle / "layers" / "Makefile").read_bytes() == (ROOT / "layers" / "Makefile").read_bytes()
    assert (bundle / "template.yaml").read_text(encoding="utf-8") == template
    assert len(list((bundle / "layers" / "wheels").glob("cairn_lambda-*.whl"))) == 1

    outside = cairn("init", "--layer-only", tmp_path / "nowhere", cwd=tmp_path)
    assert outside.returncode == 2
    assert "no template.yaml" in outside.stderr


@pytest.mark.parametrize(
    ("folder", "stack"),
    [("shop", "shop"), ("my bundle!", "my-bundle"), ("2024-orders", "cairn-2024-orders"), ("___", "cairn")],
)
def test_the_stack_name_comes_from_the_folder_and_is_always_valid(tmp_path: Path, folder: str, stack: str) -> None:
    assert init_module.stack_name(tmp_path / folder) == stack


def test_a_wheel_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    built = wheel.build_wheel(tmp_path)
    assert [path.name for path in tmp_path.iterdir()] == [built.name]
    with zipfile.ZipFile(built) as archive:
        assert archive.testzip() is None
