"""Lambda on localhost (cairn dev): worker processes, timeouts, dead workers, async failures, the Invoke API."""

from __future__ import annotations

import io
import json
import os
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError

from cairn.bundle import python_runtime
from cairn.dev.aws_endpoint import AwsEndpoint
from cairn.dev.environments import FunctionPool
from cairn.dev.lambda_service import LambdaService
from cairn.dev.logs import DevLog
from cairn.dev.models import FunctionConfig
from cairn.dev.runtimes import RuntimeNotFound, interpreter_for, interpreter_line
from tests.tools import missing

HANDLERS = """
import json, os, time

def echo(event, context):
    print(json.dumps({"level": "INFO", "message": "echo", "jobId": event.get("jobId")}))
    return {"event": event, "pid": os.getpid(), "variable": os.environ.get("GREETING"),
            "remainingMs": context.get_remaining_time_in_millis(), "cwd": os.getcwd()}

def boom(event, context):
    raise ValueError("the phase broke")

def nap(event, moment):
    with open(os.environ["NAPS"], "a") as out:
        out.write(json.dumps({"nap": event.get("nap"), "moment": moment, "pid": os.getpid()}) + "\\n")

def sleepy(event, context):
    nap(event, "asleep")
    time.sleep(event.get("seconds", 30))
    nap(event, "awake")
    return "woke"

def die(event, context):
    os._exit(137)

def record(event, context):
    with open(os.environ["RECORDS"], "a") as out:
        out.write(json.dumps(event) + "\\n")
    return "recorded"

VERSION = 1

def version(event, context):
    return VERSION
"""


def function(code: Path, name: str, handler: str, **settings: object) -> FunctionConfig:
    values: dict[str, object] = {
        "logical_id": name.title(),
        "name": name,
        "handler": handler,
        "code_uri": code,
        "environment": {"GREETING": "hello", "RECORDS": str(code / "records.jsonl"), "NAPS": str(code / "naps.jsonl")},
        "timeout": 60.0,
        "memory": 256,
        "maximum_retry_attempts": 0,
        "on_failure": None,
        "sqs_sources": (),
        "schedules": (),
        "http_routes": (),
        "layers": (),
        **settings,
    }
    return FunctionConfig(**values)  # type: ignore[arg-type]


@pytest.fixture
def code(tmp_path: Path) -> Path:
    (tmp_path / "handlers.py").write_text(HANDLERS)
    return tmp_path


@pytest.fixture
def service(code: Path) -> Iterator[LambdaService]:
    functions = [
        function(code, "echo", "handlers.echo"),
        function(code, "boom", "handlers.boom", on_failure="record"),
        function(code, "sleepy", "handlers.sleepy", timeout=3.0, on_failure="record"),
        function(code, "die", "handlers.die", on_failure="record"),
        function(code, "record", "handlers.record"),
        function(code, "missing", "nowhere.handler"),
        function(code, "version", "handlers.version"),
        function(code, "single", "handlers.sleepy", timeout=60.0),
    ]
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "layers" / "cairn")}
    lambdas = LambdaService(
        {item.name: item for item in functions},
        environment,
        DevLog(io.StringIO()),
        region="us-east-1",
        account="123456789012",
        concurrency=1,
    )
    yield lambdas
    lambdas.close()


HUNG = 120.0
"""Seconds after which a wait below calls the service hung: a safety net, far past anything asked of it."""


def records(code: Path, count: int, timeout: float = HUNG) -> list[dict[str, object]]:
    path = code / "records.jsonl"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            lines = [json.loads(line) for line in path.read_text().splitlines()]
            if len(lines) >= count:
                return lines
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} on-failure records in {timeout:g}s")


def naps(code: Path) -> list[tuple[str, str, int]]:
    """What the ``sleepy`` handler wrote, in order: ``(nap, "asleep" or "awake", worker pid)`` per line."""
    path = code / "naps.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [(line["nap"], line["moment"], line["pid"]) for line in lines]


def test_a_function_runs_in_its_own_warm_process_with_its_environment_and_folder(
    service: LambdaService, code: Path
) -> None:
    first = service.invoke("echo", {"jobId": "j1"})
    second = service.invoke("echo", {"jobId": "j2"})
    assert not first.failed
    assert first.payload["event"] == {"jobId": "j1"}
    assert first.payload["variable"] == "hello"
    assert first.payload["cwd"] == str(code)
    assert 0 < first.payload["remainingMs"] <= 60_000
    assert first.payload["pid"] == second.payload["pid"] != os.getpid()  # warm: the same environment


def test_an_exception_is_lambdas_error_payload(service: LambdaService) -> None:
    outcome = service.invoke("boom", {})
    assert outcome.error == "Unhandled"
    assert outcome.payload["errorType"] == "ValueError"
    assert outcome.payload["errorMessage"] == "the phase broke"


def test_a_phase_past_its_timeout_is_killed(service: LambdaService, code: Path) -> None:
    outcome = service.invoke("sleepy", {"seconds": 3600, "nap": "long"})
    assert outcome.payload["errorType"] == "Sandbox.Timedout"
    assert "Task timed out after 3.00 seconds" in outcome.payload["errorMessage"]
    [(_, _, killed)] = naps(code)  # it fell asleep, and never woke: its worker was killed mid-sleep
    assert naps(code) == [("long", "asleep", killed)]
    assert not Path(f"/proc/{killed}").exists(), "the timed-out invocation's worker still runs"
    assert service.invoke("sleepy", {"seconds": 0, "nap": "short"}).payload == "woke"
    fresh = naps(code)[1][2]
    assert naps(code) == [("long", "asleep", killed), ("short", "asleep", fresh), ("short", "awake", fresh)]
    assert fresh != killed  # a fresh environment serves the next


def test_a_dying_worker_fails_its_invocation_and_not_the_service(service: LambdaService) -> None:
    outcome = service.invoke("die", {})
    assert outcome.payload["errorType"] == "Runtime.ExitError"
    assert "exit status 137" in outcome.payload["errorMessage"]
    assert not service.invoke("echo", {}).failed


def test_a_handler_that_does_not_import_is_an_import_error(service: LambdaService) -> None:
    outcome = service.invoke("missing", {})
    assert outcome.payload["errorType"] == "Runtime.ImportModuleError"
    assert "nowhere" in outcome.payload["errorMessage"]


def test_failed_async_invocations_send_their_on_failure_record(service: LambdaService, code: Path) -> None:
    service.invoke_async("boom", {"jobId": "a"})
    service.invoke_async("sleepy", {"jobId": "b", "seconds": 30})
    service.invoke_async("die", {"jobId": "c"})
    found = {record["requestPayload"]["jobId"]: record for record in records(code, 3)}  # type: ignore[index]
    assert found["a"]["responsePayload"]["errorType"] == "ValueError"  # type: ignore[index]
    assert found["b"]["responsePayload"]["errorType"] == "Sandbox.Timedout"  # type: ignore[index]
    assert found["c"]["responsePayload"]["errorType"] == "Runtime.ExitError"  # type: ignore[index]
    for record in found.values():
        assert record["requestContext"]["condition"] == "RetriesExhausted"  # type: ignore[index]
        assert record["requestContext"]["functionArn"].startswith("arn:aws:lambda:us-east-1:123456789012:function:")  # type: ignore[index]


def test_a_function_runs_no_more_than_its_concurrency_at_once(service: LambdaService, code: Path) -> None:
    for nap in ("first", "second"):
        service.invoke_async("single", {"seconds": 0.5, "nap": nap})
    deadline = time.monotonic() + HUNG
    while service.pending() and time.monotonic() < deadline:
        assert len([item for item in service.running() if item["function"] == "single"]) <= 1
        time.sleep(0.02)
    assert service.pending() == 0, f"still running after {HUNG:g}s"
    moments = [(nap, moment) for nap, moment, _ in naps(code)]
    assert moments in (  # one after the other: the second fell asleep only once the first woke
        [("first", "asleep"), ("first", "awake"), ("second", "asleep"), ("second", "awake")],
        [("second", "asleep"), ("second", "awake"), ("first", "asleep"), ("first", "awake")],
    )


def test_retire_makes_the_next_invocation_import_the_new_code(service: LambdaService, code: Path) -> None:
    assert service.invoke("version", {}).payload == 1
    (code / "handlers.py").write_text(HANDLERS.replace("VERSION = 1", "VERSION = 2"))
    assert service.invoke("version", {}).payload == 1  # the warm environment keeps the code it loaded
    service.retire()
    assert service.invoke("version", {}).payload == 2


def test_a_held_pool_waits_for_a_warm_environment_rather_than_start_one_on_the_new_code(code: Path) -> None:
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "layers" / "cairn")}
    pool = FunctionPool(
        function(code, "version", "handlers.version"), environment, lambda name, line: None, concurrency=3
    )
    try:
        assert pool.invoke({}).payload == 1
        (code / "handlers.py").write_text(HANDLERS.replace("VERSION = 1", "VERSION = 2"))
        pool.hold()  # what cairn dev does with a change it refuses

        with ThreadPoolExecutor(max_workers=4) as invokers:
            seen = list(invokers.map(lambda _: pool.invoke({}).payload, range(8)))

        assert seen == [1] * 8
        pool.retire()
        assert pool.invoke({}).payload == 2
    finally:
        pool.close()


@pytest.fixture
def endpoint(service: LambdaService) -> Iterator[AwsEndpoint]:
    aws = AwsEndpoint()
    aws.lambdas.service = service
    aws.start(execute_state_machines=False)
    yield aws
    aws.stop()


def lambda_client(endpoint: AwsEndpoint) -> object:
    return boto3.client(
        "lambda",
        endpoint_url=endpoint.url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


def test_boto3_invokes_through_the_local_invoke_api(endpoint: AwsEndpoint, code: Path) -> None:
    client = lambda_client(endpoint)
    reply = client.invoke(FunctionName="echo", Payload=json.dumps({"jobId": "x"}))  # type: ignore[attr-defined]
    assert reply["StatusCode"] == 200
    assert json.loads(reply["Payload"].read())["event"] == {"jobId": "x"}
    failed = client.invoke(FunctionName="arn:aws:lambda:us-east-1:123456789012:function:boom")  # type: ignore[attr-defined]
    assert failed["FunctionError"] == "Unhandled"
    assert json.loads(failed["Payload"].read())["errorMessage"] == "the phase broke"
    queued = client.invoke(FunctionName="boom", InvocationType="Event", Payload=b'{"jobId": "q"}')  # type: ignore[attr-defined]
    assert queued["StatusCode"] == 202
    assert records(code, 1)[0]["requestPayload"] == {"jobId": "q"}


def test_the_invoke_api_refuses_what_lambda_refuses(endpoint: AwsEndpoint) -> None:
    client = lambda_client(endpoint)
    with pytest.raises(ClientError) as missing:
        client.invoke(FunctionName="nobody")  # type: ignore[attr-defined]
    assert missing.value.response["Error"]["Code"] == "ResourceNotFoundException"
    too_big = json.dumps({"blob": "x" * 300_000})
    with pytest.raises(ClientError) as large:
        client.invoke(FunctionName="echo", InvocationType="Event", Payload=too_big)  # type: ignore[attr-defined]
    assert large.value.response["Error"]["Code"] == "RequestEntityTooLargeException"
    with pytest.raises(ClientError) as malformed:
        client.invoke(FunctionName="echo", Payload=b"{not json")  # type: ignore[attr-defined]
    assert malformed.value.response["Error"]["Code"] == "InvalidRequestContentException"


PATH_PROBE = """
import sys

def handler(event, context):
    return {"path": sys.path, "version": list(sys.version_info[:2]), "has_site": "site" in sys.modules}
"""


@pytest.mark.parametrize("runtime", python_runtime.SUPPORTED)
def test_a_built_function_runs_on_its_runtime_with_only_its_layers_on_the_path(tmp_path: Path, runtime: str) -> None:
    """A built template's function: the runtime's Python, its code folder and built layers, nothing of cairn dev's."""
    try:
        interpreter_for(runtime)
    except RuntimeNotFound as exc:
        missing(str(exc))
    code = tmp_path / "code"
    code.mkdir()
    (code / "probe.py").write_text(PATH_PROBE)
    layer = tmp_path / "layer" / "python"
    layer.mkdir(parents=True)
    built = function(code, "probe", "probe.handler", runtime=runtime, built_layers=(layer,))
    service = LambdaService({"probe": built}, dict(os.environ), DevLog(), region="us-east-1", account="123456789012")
    try:
        outcome = service.invoke("probe", {})
    finally:
        service.close()
    assert not outcome.failed, outcome.payload
    answer = outcome.payload
    assert answer["version"] == [int(part) for part in python_runtime.version(runtime).split(".")]
    assert answer["path"][0] == str(code)
    assert str(layer) in answer["path"]
    assert not [entry for entry in answer["path"] if "site-packages" in entry or "layers/cairn" in entry]
    assert interpreter_line([built]).startswith(f"  python        {runtime} ({interpreter_for(runtime)})")


def test_the_banner_says_when_the_source_template_s_functions_run_on_another_python_than_its_runtime(
    tmp_path: Path,
) -> None:
    running = f"python{sys.version_info.major}.{sys.version_info.minor}"
    other = next(runtime for runtime in (*python_runtime.SUPPORTED, python_runtime.NEXT) if runtime != running)
    same = interpreter_line([function(tmp_path, "api", "app.handler", runtime=running)])
    assert same == f"  python        {running} ({sys.executable}), the template's runtime"
    differs = interpreter_line([function(tmp_path, "api", "app.handler", runtime=other)])
    assert f"{running} ({sys.executable}), this cairn's; the template's runtime is {other}" in differs
    assert "--template .aws-sam/build/template.yaml" in differs
