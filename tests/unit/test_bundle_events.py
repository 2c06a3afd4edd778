"""cairn.bundle.events: the one renderer of a bundle's generic sample events, and this bundle's events/ against it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cairn.aws.api_models import PipelineView
from cairn.bundle import events
from cairn.bundle.events import PipelineOutline, dump, phase_events, sample_events
from cairn.bundle.scaffold import PHASES, plan
from cairn.core.naming import function_name
from pipelines import PIPELINES
from tests.functional.api_client import JOB

ROOT = Path(__file__).resolve().parents[2]
RENDERED_FOLDERS = ("api", "scheduler", "statemachine")
#: This bundle's own cases beside the rendered ones: a state its state model refuses, an id its tests quote, a
#: JWT caller whose document its tests know.
EXTRAS = {
    "events/api/create-job-bad-state.json",
    "events/api/create-job-bad-id.json",
    "events/api/create-job-jwt.json",
}
DEMO = [PipelineOutline("demo", PHASES)]


def this_bundle() -> list[PipelineOutline]:
    """This bundle's pipelines as the renderer takes them: the sample state is the one GET /pipelines offers."""
    return [PipelineOutline(p.name, p.phase_names, PipelineView.of(p).sample) for p in PIPELINES]


def rendered(pipelines: list[PipelineOutline], **options: str) -> dict[str, Any]:
    """What the renderer gives for ``pipelines``, as tests read it (plain JSON values)."""
    return sample_events(pipelines, **options)


def rendered_here() -> dict[str, Any]:
    """What the renderer gives for this bundle's pipelines; its API samples address the API tests' job."""
    return rendered(this_bundle(), api_job=JOB)


def event_files(*folders: str) -> set[str]:
    return {
        path.relative_to(ROOT).as_posix() for folder in folders for path in (ROOT / "events" / folder).rglob("*.json")
    }


@pytest.mark.parametrize(
    "path", sorted(path for path in rendered_here() if path.split("/")[1] in RENDERED_FOLDERS), ids=str
)
def test_this_bundles_event_file_is_exactly_what_the_renderer_gives(path: str) -> None:
    file = ROOT / path
    assert file.is_file(), f"{path} is a case the renderer covers: write it with cairn.bundle.events.dump"
    assert file.read_text(encoding="utf-8") == dump(rendered_here()[path])


def test_every_other_event_file_of_these_folders_is_one_of_this_bundles_own_cases() -> None:
    assert event_files(*RENDERED_FOLDERS) - set(rendered_here()) == EXTRAS


UNUSED_NAME = "events-probe"
"""A pipeline name no bundle here has (``cairn new demo-two`` may have run in this checkout)."""


def test_cairn_new_writes_the_renderers_phase_events() -> None:
    prepared = plan(UNUSED_NAME, ROOT)

    written = {
        path.relative_to(ROOT).as_posix(): text for path, text in prepared.files.items() if "events" in path.parts
    }

    expected = phase_events(PipelineOutline(UNUSED_NAME, PHASES))
    assert written == {path: dump(event) for path, event in expected.items()}
    assert [json.loads(written[f"events/phases/{UNUSED_NAME}/{phase}.json"])["sequence"] for phase in PHASES] == [1, 3]


def test_a_new_bundles_events_name_its_own_pipeline_phases_and_functions() -> None:
    events_of = rendered([*DEMO, PipelineOutline("other", ["only"], {"x": 1})])

    assert {path for path in events_of if path.startswith("events/phases/")} == {
        "events/phases/demo/start.json",
        "events/phases/demo/finish.json",
        "events/phases/other/only.json",
    }
    assert events_of["events/phases/other/only.json"]["sequence"] == 1
    create = json.loads(events_of["events/api/create-job.json"]["body"])
    assert create == {"pipeline": "demo", "jobId": events.SAMPLE_JOB, "state": {}}
    timeout = events_of["events/scheduler/on-failure-timeout.json"]
    assert timeout["requestContext"]["functionArn"].endswith(f":{function_name('cairn-', 'demo', 'finish')}:$LATEST")
    assert timeout["requestPayload"] == events_of["events/phases/demo/finish.json"]
    delayed = json.loads(events_of["events/scheduler/delayed-advance.json"]["Records"][0]["body"])
    assert delayed == {**events_of["events/phases/demo/start.json"], "notBefore": events.NOT_BEFORE}
    retry_from = json.loads(events_of["events/api/retry-job-from.json"]["body"])
    assert retry_from == {"mode": "from", "phase": "finish"}
    assert events_of["events/statemachine/start.json"]["pipeline"] == "demo"


def test_the_unknown_pipeline_and_phase_of_the_samples_are_never_registered_ones() -> None:
    crowded = [
        PipelineOutline("demo", ["start", events.UNKNOWN_PHASE]),
        PipelineOutline(events.UNKNOWN_PIPELINE, ["a"]),
    ]

    events_of = rendered(crowded)

    unknown = json.loads(events_of["events/api/create-job-unknown-pipeline.json"]["body"])["pipeline"]
    assert unknown == f"{events.UNKNOWN_PIPELINE}-2"
    assert events_of["events/scheduler/advance-unknown-phase.json"]["phase"] == f"{events.UNKNOWN_PHASE}-2"


def test_api_events_are_consistent_requests() -> None:
    api = {path: event for path, event in rendered(DEMO).items() if path.startswith("events/api/")}

    request_ids = [event["requestContext"]["requestId"] for event in api.values()]
    assert len(set(request_ids)) == len(request_ids)
    for path, event in api.items():
        headers, http = event["headers"], event["requestContext"]["http"]
        assert event["routeKey"] == event["requestContext"]["routeKey"]
        assert event["routeKey"].split(" ")[0] == http["method"]
        assert event["rawPath"] == http["path"]
        if "body" in event:
            assert headers["content-length"] == str(len(event["body"].encode())), path
        signed = "authorizer" in event["requestContext"]
        assert ("authorization" in headers) is signed, path


def test_rendering_twice_gives_the_same_files_and_every_value_is_plain_json() -> None:
    first, second = rendered(this_bundle()), rendered(this_bundle())

    assert {path: dump(event) for path, event in first.items()} == {path: dump(event) for path, event in second.items()}
    assert all(json.loads(dump(event)) == event for event in first.values())


@pytest.mark.parametrize(
    ("pipelines", "message"),
    [([], "at least one pipeline"), ([PipelineOutline("empty", [])], 'Pipeline "empty" has no phases')],
)
def test_it_needs_pipelines_with_phases(pipelines: list[PipelineOutline], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        sample_events(pipelines)


def imports_of(path: Path) -> set[str]:
    """The top-level modules ``path`` imports, relative imports as ``cairn.<module>``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add(f"cairn.{node.module}" if node.level else (node.module or "").split(".")[0])
    return found


def test_the_renderer_uses_the_standard_library_only() -> None:
    module = Path(events.__file__)
    assert imports_of(module) - set(sys.stdlib_module_names) == {"cairn.core.naming"}
    assert imports_of(module.parents[1] / "core" / "naming.py") <= set(sys.stdlib_module_names)

    code = (
        "import sys, cairn.bundle.events\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "layers" / "cairn"), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    assert done.stdout.strip() == "[]"
