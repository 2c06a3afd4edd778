"""``cairn new NAME`` on a copy of the bundle: the files it writes, the registry entry, the refusals.

The copy holds the bundle with document-intake as its only pipeline (a pipeline already scaffolded in
this checkout is left out), and the tests around it; ``cairn new`` runs in a subprocess, as a user runs it.
``make scaffold-check`` runs ``cairn new`` in a clone and checks what it can change there: ruff and mypy on the
files it wrote, the template checks, the registry-driven tests (the sample events through their phase
functions) and the new pipeline's own tests; they are not repeated here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cairn import Cairn, InlineScheduler
from cairn.bundle.scaffold import ScaffoldError, add_to_registry, new_pipeline

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "layers" / "cairn"
REGISTRY = '''\
"""The pipelines this bundle deploys, by name."""

from __future__ import annotations

from cairn.core.registry import PipelineRegistry
from document_intake.pipeline import pipeline as document_intake

PIPELINES = PipelineRegistry(
    [
        document_intake,
    ]
)
'''
CREATED = [
    "events/phases/demo-two/finish.json",
    "events/phases/demo-two/start.json",
    "functions/demo_two/__init__.py",
    "functions/demo_two/pipeline.py",
    "tests/pipelines/__init__.py",
    "tests/pipelines/test_demo_two.py",
]


def run(cwd: Path, *command: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``command`` in ``cwd`` with the copy's code and the library on PYTHONPATH, as the Makefile sets it."""
    path = os.pathsep.join(str(part) for part in (cwd / "functions", LIBRARY, cwd))
    env = {**os.environ, "PYTHONPATH": path, "MYPYPATH": str(LIBRARY)}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def cairn(cwd: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``python -m cairn ARGUMENTS`` in ``cwd``."""
    return run(cwd, sys.executable, "-m", "cairn", *arguments)


def _is_other_pipeline(path: Path) -> bool:
    """A pipeline package or event folder other than document-intake's (one this checkout may have scaffolded)."""
    if path.parent.name == "functions":
        return path.is_dir() and (path / "pipeline.py").exists() and path.name != "document_intake"
    return path.parent.name == "phases" and path.is_dir() and path.name != "document-intake"


def copy_bundle(destination: Path) -> Path:
    """The bundle's files ``cairn new`` and the tests need, with document-intake as the only pipeline."""

    def left_out(directory: str, names: list[str]) -> set[str]:
        return {name for name in names if name == "__pycache__" or _is_other_pipeline(Path(directory) / name)}

    for folder in ("functions", "events"):
        shutil.copytree(ROOT / folder, destination / folder, ignore=left_out)
    shutil.copytree(
        ROOT / "tests", destination / "tests", ignore=shutil.ignore_patterns("__pycache__", "pipelines", "template")
    )
    for name in ("template.yaml", "state-schemas.json", "samconfig.toml", "pyproject.toml"):
        shutil.copy2(ROOT / name, destination / name)
    for shared in ("layers", "statemachine"):  # the layer's build and the state machine, as the template names them
        (destination / shared).symlink_to(ROOT / shared, target_is_directory=True)
    (destination / "functions" / "pipelines.py").write_text(REGISTRY)
    _keep_document_intake_variables(destination / "events" / "env.json")
    if any(_is_other_pipeline(path) for path in (ROOT / "functions").iterdir()):
        # This checkout has more pipelines than the copy: its template goes back to document-intake's.
        synced = cairn(destination, "template", "sync", "--root", str(destination))
        assert synced.returncode == 0, synced.stderr
    return destination


def _keep_document_intake_variables(env_file: Path) -> None:
    """Drop the ``events/env.json`` entries of pipelines other than document-intake (ones this checkout scaffolded)."""
    variables = json.loads(env_file.read_text())
    kept = {
        name: entry
        for name, entry in variables.items()
        if not isinstance(entry, dict) or entry.get("CAIRN_PIPELINE", "document-intake") == "document-intake"
    }
    if kept != variables:
        env_file.write_text(json.dumps(kept, indent=2) + "\n")


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (caches left out) and its text."""
    return {
        path.relative_to(root).as_posix(): path.read_text(errors="replace")
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and ".mypy_cache" not in path.parts
    }


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the bundle on which ``cairn new demo-two`` has run (once for the module)."""
    return copy_bundle(tmp_path_factory.mktemp("bundle"))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the bundle ``cairn new`` only refuses to change (each refusal checks it is left as it was)."""
    return copy_bundle(tmp_path_factory.mktemp("pristine"))


@pytest.fixture(scope="module")
def scaffolded(bundle: Path) -> tuple[Path, dict[str, str], subprocess.CompletedProcess[str]]:
    """The copy after ``cairn new demo-two``: its folder, its files before, and the command's result."""
    before = snapshot(bundle)
    done = cairn(bundle, "new", "demo-two", "--root", str(bundle))
    assert done.returncode == 0, done.stderr
    return bundle, before, done


def test_cairn_new_creates_the_module_test_and_events_and_says_what_next(
    scaffolded: tuple[Path, dict[str, str], subprocess.CompletedProcess[str]],
) -> None:
    root, before, done = scaffolded
    after = snapshot(root)
    assert sorted(set(after) - set(before)) == CREATED
    changed = sorted(name for name in set(before) & set(after) if before[name] != after[name])
    assert changed == ["events/env.json", "functions/pipelines.py", "state-schemas.json", "template.yaml"]
    env = json.loads(after["events/env.json"])
    assert {key: env[key] for key in set(env) - set(json.loads(before["events/env.json"]))} == {
        f"DemoTwo{phase.title()}Function": {"CAIRN_PIPELINE": "demo-two", "CAIRN_PHASE": phase}
        for phase in ("start", "finish")
    }
    for path in CREATED:
        assert f"  {path}" in done.stdout
    for step in ("pytest", "cairn template check", "sam build && sam deploy"):
        assert step in done.stdout
    assert json.loads(after["events/phases/demo-two/start.json"])["pipeline"] == "demo-two"


def test_the_registry_gets_one_import_line_and_one_entry(
    scaffolded: tuple[Path, dict[str, str], subprocess.CompletedProcess[str]],
) -> None:
    root, before, _ = scaffolded
    old = before["functions/pipelines.py"].splitlines()
    new = (root / "functions" / "pipelines.py").read_text().splitlines()
    added = [line for line in new if line not in old]
    assert added == ["from demo_two.pipeline import pipeline as demo_two", "        demo_two,"]
    assert [line for line in old if line not in new] == []

    code = "import pipelines\nfor p in pipelines.PIPELINES:\n    print(p.name, *p.phase_names)\n"
    listed = run(root, sys.executable, "-c", code)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "document-intake fetch split extract extract_page publish",
        "demo-two start finish",
    ]


def test_the_sample_events_are_the_messages_the_sample_job_sends(
    scaffolded: tuple[Path, dict[str, str], subprocess.CompletedProcess[str]],
) -> None:
    root, _, _ = scaffolded
    code = (root / "functions" / "demo_two" / "pipeline.py").read_text()
    namespace: dict[str, Any] = {"__name__": "scaffolded_demo_two"}
    exec(compile(code, "pipeline.py", "exec"), namespace)
    pipeline = namespace["pipeline"]
    sent: list[tuple[str, int | None]] = []

    class Recording(InlineScheduler):
        def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
            sent.append((phase, sequence))
            super().schedule_advance(job_id, phase=phase, sequence=sequence, delay=delay)

    scheduler = Recording()
    app = Cairn(pipeline, scheduler=scheduler)
    scheduler.bind(app.advance)
    app.start(pipeline, "job-0001", state={"items": ["x", "y"]})
    scheduler.drain()

    events = [json.loads(path.read_text()) for path in sorted((root / "events" / "phases" / "demo-two").glob("*.json"))]
    assert sorted((event["phase"], event["sequence"]) for event in events) == sorted(sent)
    assert {(event["pipeline"], event["jobId"]) for event in events} == {("demo-two", "job-0001")}
    assert app.get("job-0001").result == {"results": ["X", "Y"]}


def test_a_second_cairn_new_of_the_same_name_is_refused(
    scaffolded: tuple[Path, dict[str, str], subprocess.CompletedProcess[str]],
) -> None:
    root, _, _ = scaffolded
    before = snapshot(root)
    done = cairn(root, "new", "demo-two", "--root", str(root))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["cairn: error: functions/demo_two already exists: choose another name"]
    assert snapshot(root) == before


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("Demo", "invalid pipeline name"),
        ("2demo", "invalid pipeline name"),
        ("demo_two", "invalid pipeline name"),
        ("demo--two", "invalid pipeline name"),
        ("demo-", "invalid pipeline name"),
        ("demo two", "invalid pipeline name"),
        ("d" * 41, "invalid pipeline name"),
        ("class", "is a Python keyword"),
        ("json", "functions/json/ would hide the module 'json'"),
        ("pydantic", "would hide the module 'pydantic'"),
        ("document-intake", "functions/document_intake already exists"),
    ],
)
def test_a_bad_name_is_refused_in_one_line_and_nothing_is_written(pristine: Path, name: str, why: str) -> None:
    fresh = pristine
    before = snapshot(fresh)
    done = cairn(fresh, "new", name, "--root", str(fresh))
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert why in done.stderr
    assert done.stdout == ""
    assert snapshot(fresh) == before


OTHER = """\
from cairn import Done, Pipeline

pipeline = Pipeline("taken")


@pipeline.phase(name="x-start")
def first(ctx):
    return Done()
"""


@pytest.fixture
def crowded(tmp_path: Path) -> Path:
    """A copy whose registry also holds pipeline "taken" (package ``other``) with a phase "x-start"."""
    root = copy_bundle(tmp_path / "crowded")
    (root / "functions" / "other").mkdir()
    (root / "functions" / "other" / "__init__.py").write_text("")
    (root / "functions" / "other" / "pipeline.py").write_text(OTHER)
    registry = root / "functions" / "pipelines.py"
    registry.write_text(add_to_registry(registry.read_text(), "other"))
    return root


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("taken", 'a pipeline named "taken" is already registered'),
        ("taken-x", 'would clash with a registered one: phase "start" of pipeline "taken-x"'),
    ],
)
def test_a_registered_name_or_a_clashing_one_is_refused(crowded: Path, name: str, why: str) -> None:
    before = snapshot(crowded)
    done = cairn(crowded, "new", name, "--root", str(crowded))
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert why in done.stderr
    assert snapshot(crowded) == before


def test_a_registry_in_another_layout_is_refused(tmp_path: Path) -> None:
    root = copy_bundle(tmp_path / "bundle")
    registry = root / "functions" / "pipelines.py"
    registry.write_text(REGISTRY.replace("(\n    [\n        document_intake,\n    ]\n)", "([document_intake])"))
    before = snapshot(root)
    done = cairn(root, "new", "demo-two", "--root", str(root))
    assert done.returncode == 2
    assert "functions/pipelines.py does not have the layout cairn new edits" in done.stderr
    assert snapshot(root) == before


def test_a_failed_template_sync_puts_every_file_back(tmp_path: Path) -> None:
    root = copy_bundle(tmp_path / "bundle")
    before = snapshot(root)

    def failing_sync(where: Path) -> None:
        (where / "template.yaml").write_text("half-written")
        (where / "state-schemas.json").write_text("half-written")  # the sync records the state schemas too
        raise ScaffoldError("cairn template sync failed")

    with pytest.raises(ScaffoldError, match="template sync failed"):
        new_pipeline("demo-two", root, failing_sync)
    assert snapshot(root) == before
    assert not (root / "functions" / "demo_two").exists()
    assert not (root / "tests" / "pipelines").exists()


def test_outside_a_bundle_cairn_new_says_so(tmp_path: Path) -> None:
    done = cairn(tmp_path, "new", "demo-two")
    assert done.returncode == 2
    assert "is not a cairn bundle" in done.stderr
    assert list(tmp_path.iterdir()) == []


SORTED = """\
from __future__ import annotations

from alpha.pipeline import pipeline as alpha
from cairn.core.registry import PipelineRegistry
from omega.pipeline import pipeline as omega

PIPELINES = PipelineRegistry(
    [
        omega,
        alpha,
    ]
)
"""


@pytest.mark.parametrize(
    ("module", "import_after"),
    [
        ("aardvark", "from __future__ import annotations"),
        ("beta", "from alpha.pipeline import pipeline as alpha"),
        ("zulu", "from omega.pipeline import pipeline as omega"),
    ],
)
def test_the_import_goes_in_sorted_order_and_the_entry_last(module: str, import_after: str) -> None:
    lines = add_to_registry(SORTED, module).splitlines()
    line = f"from {module}.pipeline import pipeline as {module}"
    if module == "aardvark":
        assert lines[lines.index(line) - 1] == ""
    else:
        assert lines[lines.index(line) - 1] == import_after
    assert lines[lines.index("        alpha,") + 1] == f"        {module},"
    assert len(lines) == len(SORTED.splitlines()) + 2


@pytest.mark.parametrize(
    "source",
    [
        SORTED.replace("        alpha,\n", ""),  # imported, not listed
        SORTED.replace("        omega,\n        alpha,\n", "        omega, alpha,\n"),  # two on a line
        SORTED.replace("PipelineRegistry(", "make_registry("),  # not a PipelineRegistry
        SORTED + "PIPELINES = PipelineRegistry([])\n",  # assigned twice
        SORTED.replace("as omega", "as other"),  # not the package's name
        SORTED.replace("        alpha,\n", "        *extra,\n"),  # not a name
        "PIPELINES = {}\n",
        "def broken(:\n",
    ],
)
def test_a_registry_layout_it_does_not_know_is_refused(source: str) -> None:
    with pytest.raises(ScaffoldError, match=re.escape("functions/pipelines.py")):
        add_to_registry(source, "beta")


def test_a_package_already_imported_is_refused() -> None:
    with pytest.raises(ScaffoldError, match="already imports a pipeline package 'alpha'"):
        add_to_registry(SORTED, "alpha")


def test_the_scaffolded_pipeline_reads_as_documented() -> None:
    from cairn.bundle.scaffold import render_pipeline

    text = render_pipeline("demo-two")
    assert 'pipeline = Pipeline("demo-two", state=DemoTwoState)' in text
    for api in ("ctx.log(", "ctx.save_state(", "return Next(", "return Done(", "@pipeline.phase(timeout="):
        assert api in text
