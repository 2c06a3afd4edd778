"""X-Ray tracing of the entry points: on where Powertools' Tracer would trace, and the SDK never imported elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools import Tracer

from cairn.aws.observability import tracing_enabled

ROOT = Path(__file__).resolve().parents[2]
TRACE_HEADER = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
LAMBDA = {"LAMBDA_TASK_ROOT": "/var/task"}

CASES = [
    {},
    {"POWERTOOLS_TRACE_DISABLED": "false"},
    LAMBDA,
    {**LAMBDA, "POWERTOOLS_TRACE_DISABLED": "false"},
    {**LAMBDA, "POWERTOOLS_TRACE_DISABLED": "0"},
    {**LAMBDA, "POWERTOOLS_TRACE_DISABLED": "true"},
    {**LAMBDA, "POWERTOOLS_TRACE_DISABLED": "1"},
    {**LAMBDA, "POWERTOOLS_TRACE_DISABLED": "Yes"},
    {**LAMBDA, "AWS_SAM_LOCAL": "true"},
    {**LAMBDA, "AWS_CHALICE_CLI_MODE": "true"},
]
VARIABLES = ("LAMBDA_TASK_ROOT", "POWERTOOLS_TRACE_DISABLED", "AWS_SAM_LOCAL", "AWS_CHALICE_CLI_MODE")


@pytest.mark.parametrize("environ", CASES, ids=lambda environ: ",".join(f"{k}={v}" for k, v in environ.items()))
def test_tracing_is_on_exactly_where_powertools_tracer_would_trace(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)

    assert tracing_enabled() is (not Tracer._is_tracer_disabled())
    assert tracing_enabled(environ) is tracing_enabled()


def test_a_disabled_value_that_is_no_truth_value_is_refused_as_powertools_refuses_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "maybe")
    with pytest.raises(ValueError, match="maybe"):
        Tracer._is_tracer_disabled()
    with pytest.raises(ValueError, match="maybe"):
        tracing_enabled()


def _fresh_process(code: str, tmp_path: Path, **variables: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter with a Lambda function's environment plus ``variables``; its JSON line."""
    env = {key: value for key, value in os.environ.items() if key not in VARIABLES}
    env.update(
        PYTHONPATH=os.pathsep.join([str(ROOT / "functions"), str(ROOT / "layers" / "cairn")]),
        AWS_LAMBDA_FUNCTION_NAME="cairn-document-intake-fetch",
        AWS_XRAY_DAEMON_ADDRESS="127.0.0.1:2000",
        AWS_XRAY_CONTEXT_MISSING="LOG_ERROR",
        POWERTOOLS_SERVICE_NAME="cairn",
        **variables,
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


TRACED = f"""
import json, os
from aws_xray_sdk.core import xray_recorder
from cairn.aws.entry import entry_point
from cairn.testing.invoker import LocalContext

sent = []


class Collect:
    def send_entity(self, entity):
        sent.append({{"name": entity.name, "annotations": dict(entity.annotations)}})

    def set_daemon_address(self, address):
        pass


def handler(event, context):
    return {{"ok": True}}


wrapped = entry_point(handler)
xray_recorder.emitter = Collect()
os.environ["_X_AMZN_TRACE_ID"] = "{TRACE_HEADER}"  # as Lambda sets it for an invocation
answer = wrapped({{}}, LocalContext("cairn-document-intake-fetch"))
print(json.dumps({{"answer": answer, "sent": sent}}))
"""


@pytest.mark.filterwarnings("ignore:No application metrics to publish")
def test_in_lambda_with_tracing_on_each_invocation_is_a_subsegment_as_before(tmp_path: Path) -> None:
    seen = _fresh_process(TRACED, tmp_path, LAMBDA_TASK_ROOT=str(tmp_path))

    assert seen["answer"] == {"ok": True}
    (subsegment,) = [entity for entity in seen["sent"] if entity["name"] == "## handler"]
    assert subsegment["annotations"] == {"ColdStart": True, "Service": "cairn"}


UNTRACED = """
import json, sys
import phases
from cairn.aws.entry import entry_point
from cairn.testing.invoker import LocalContext


def handler(event, context):
    return {"ok": True}


answer = entry_point(handler)({}, LocalContext("cairn-document-intake-fetch"))
loaded = sorted(name for name in sys.modules if name.split(".")[0] in ("aws_xray_sdk", "filelock"))
listing = "cairn.aws.dynamodb.listings" in sys.modules
print(json.dumps({"answer": answer, "loaded": loaded, "listing": listing}))
"""


@pytest.mark.parametrize(
    "variables",
    [
        {"LAMBDA_TASK_ROOT": "{tmp}", "POWERTOOLS_TRACE_DISABLED": "true"},  # as cairn dev's workers run
        {},  # outside Lambda: tests, scripts
    ],
    ids=["tracing-disabled", "outside-lambda"],
)
def test_where_tracing_is_off_the_entry_points_never_import_the_xray_sdk(
    variables: dict[str, str], tmp_path: Path
) -> None:
    given = {name: value.replace("{tmp}", str(tmp_path)) for name, value in variables.items()}
    seen = _fresh_process(UNTRACED, tmp_path, **given)

    assert seen["answer"] == {"ok": True}
    assert seen["loaded"] == []  # nor FileStorage's filelock: a Lambda function stores jobs in DynamoDB
    assert seen["listing"] is False  # a phase function never lists: the listing reads load on first use
