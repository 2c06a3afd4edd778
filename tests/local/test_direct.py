"""``cairn dev`` with the direct driver, driven over HTTP with the CLI, an API client and boto3."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import pytest

from cairn.bundle.templating import cfnyaml
from tests.local.devstack import HUNG, ROOT, DevStack, cairn

pytestmark = pytest.mark.xdist_group("local-direct")

FIFTY_JOBS_HUNG = 300.0
"""Seconds a job of the fifty may take (they queue behind one another) before the stack is called hung."""


def jobs(stack: DevStack, *arguments: str, identity: str | None = None) -> subprocess.CompletedProcess[str]:
    """``cairn jobs ...`` against the stack's API."""
    variables = {"CAIRN_API": stack.base_url, **({"CAIRN_IDENTITY": identity} if identity else {})}
    return cairn("jobs", *arguments, variables=variables)


def test_a_job_started_with_the_cli_completes_and_shows_its_phases(direct_stack: DevStack, tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"document": "invoice.txt"}))
    started = jobs(direct_stack, "start", "document-intake", "--state", f"@{state}", "--id", "cli-invoice", "--json")
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout)["jobId"] == "cli-invoice"
    view = direct_stack.wait_for("cli-invoice")
    assert view["status"] == "complete"
    assert view["result"]["document"]["kind"] == "invoice"
    assert [record["phase"] for record in view["phases"]] == ["fetch", "split", "extract", "publish"]
    shown = jobs(direct_stack, "show", "cli-invoice")
    assert shown.returncode == 0, shown.stderr
    for phase in ("fetch", "split", "extract", "publish"):
        assert phase in shown.stdout
    listed = jobs(direct_stack, "list", "--status", "complete", "--json")
    assert "cli-invoice" in listed.stdout


def test_cairn_jobs_count_reads_the_counts_the_tables_stream_keeps(direct_stack: DevStack) -> None:
    owner = "arn:aws:iam::123456789012:user/counted"  # an owner of its own: the stack's other tests start jobs
    for job_id in ("counted-a", "counted-b"):
        started = jobs(
            direct_stack,
            "start",
            "document-intake",
            "--state",
            '{"document": "invoice.txt"}',
            "--id",
            job_id,
            identity=owner,
        )
        assert started.returncode == 0, started.stderr
    deadline = time.monotonic() + HUNG
    while True:
        answer = jobs(direct_stack, "count", "--json", identity=owner)
        assert answer.returncode == 0, answer.stderr
        counts = json.loads(answer.stdout)
        if counts["counts"]["complete"] == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert counts["maintained"] is True  # one read of the counts item, kept by the scheduler from the stream
    assert (counts["counts"]["complete"], counts["total"], counts["exact"]) == (2, 2, True)


def test_the_stack_is_real_aws_on_its_moto_endpoint(direct_stack: DevStack) -> None:
    direct_stack.api.start("document-intake", state={"document": "report.txt"}, job_id="boto3-visible")
    direct_stack.wait_for("boto3-visible")
    info = direct_stack.admin("info")
    assert (info["clock"]["skipWaits"], info["clock"]["offsetMs"]) == (False, 0)  # real time without --skip-waits
    session = boto3.Session(aws_access_key_id="local", aws_secret_access_key="local", region_name="us-east-1")
    dynamodb = session.client("dynamodb", endpoint_url=info["awsEndpoint"])
    described = dynamodb.describe_table(TableName=info["table"])["Table"]
    assert {index["IndexName"] for index in described["GlobalSecondaryIndexes"]} == {
        "Listing",
        "StatusListing",
        "CostListing",
        "PipelineListing",
        "Stalled",
    }
    ttl = dynamodb.describe_time_to_live(TableName=info["table"])["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expiresAt"}
    items = dynamodb.scan(TableName=info["table"])["Items"]
    assert any("boto3-visible" in item["pk"]["S"] for item in items)


def test_the_stack_is_the_transformed_templates_on_cloudformation_and_lambda(direct_stack: DevStack) -> None:
    info = direct_stack.admin("info")
    session = boto3.Session(aws_access_key_id="local", aws_secret_access_key="local", region_name="us-east-1")
    (stack,) = session.client("cloudformation", endpoint_url=info["awsEndpoint"]).describe_stacks(
        StackName=info["stack"]
    )["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    outputs = {item["OutputKey"]: item["OutputValue"] for item in stack["Outputs"]}
    declared = cfnyaml.load((ROOT / "template.yaml").read_text(encoding="utf-8"))["Outputs"]
    assert set(outputs) == {name for name, output in declared.items() if "Condition" not in output}
    assert outputs == info["outputs"]
    assert outputs["TableName"] == info["table"]
    listed = session.client("lambda", endpoint_url=info["awsEndpoint"]).list_functions()["Functions"]
    assert sorted(function["FunctionName"] for function in listed) == info["functions"]
    banner = direct_stack.output().split("Ready.", 1)[0]
    assert "the SAM transform, then CloudFormation (moto)" in banner
    for kind in ("AWS::ApiGatewayV2::Api", "AWS::Lambda::EventInvokeConfig"):
        assert f"local runner  {kind} (" in banner
    queues = session.client("sqs", endpoint_url=info["awsEndpoint"]).list_queues()["QueueUrls"]
    assert any("DelayQueue" in url for url in queues)
    assert any("-DeadLetterQueue" in url for url in queues)
    assert any("SchedulerDeadLetterQueue" in url for url in queues)
    # the production signals are created with the stack: the alarms, the dashboard, each phase's live alias
    cloudwatch = session.client("cloudwatch", endpoint_url=info["awsEndpoint"])
    alarms = [alarm["AlarmName"] for alarm in cloudwatch.describe_alarms()["MetricAlarms"]]
    for alarm in ("StalledJobsAlarm", "SchedulerDeadLetterAlarm", "DocumentIntakeThrottlesAlarm"):
        assert any(f"-{alarm}-" in name for name in alarms), alarm
    assert outputs["DashboardName"] in [
        item["DashboardName"] for item in cloudwatch.list_dashboards()["DashboardEntries"]
    ]
    aliases = session.client("lambda", endpoint_url=info["awsEndpoint"]).list_aliases(
        FunctionName=f"{info['stack']}-document-intake-fetch"
    )["Aliases"]
    assert [alias["Name"] for alias in aliases] == ["live"]


def test_a_killed_worker_leaves_the_job_in_error_with_its_checkpoint_and_resume_finishes_it(
    direct_stack: DevStack,
) -> None:
    state = {"document": "contract.txt", "page_seconds": 1.0}
    direct_stack.api.start("document-intake", state=state, job_id="killed-contract")
    direct_stack.wait_until("killed-contract", lambda view: len((view.get("state") or {}).get("results") or []) >= 1)
    invocation = direct_stack.running("killed-contract", "extract")
    os.kill(invocation["pid"], signal.SIGKILL)
    errored = direct_stack.wait_for("killed-contract", ("error", "complete"))
    assert errored["status"] == "error"
    assert "signal: killed" in errored["error"]
    assert errored["nextPhase"] == "extract"
    saved = len(errored["state"]["results"])
    assert 1 <= saved < len(errored["state"]["pages"])
    retried = jobs(direct_stack, "retry", "killed-contract")
    assert retried.returncode == 0, retried.stderr
    done = direct_stack.wait_for("killed-contract")
    assert done["status"] == "complete"
    assert done["usage"]["pages"] == done["result"]["document"]["pages"]  # the pages saved before the kill ran once
    assert direct_stack.api.health()["status"] == "ok"


def test_fifty_concurrent_jobs_all_complete_with_their_own_results(direct_stack: DevStack) -> None:
    samples = ["invoice", "contract", "report"]
    job_ids = {f"many-{index:02d}": samples[index % 3] for index in range(50)}
    with ThreadPoolExecutor(max_workers=10) as pool:
        list(
            pool.map(
                lambda item: direct_stack.api.start(
                    "document-intake", state={"document": f"{item[1]}.txt"}, job_id=item[0]
                ),
                job_ids.items(),
            )
        )
    expected = {}
    for sample in samples:
        view = direct_stack.wait_for(f"many-{samples.index(sample):02d}", timeout=FIFTY_JOBS_HUNG)
        expected[sample] = view["result"]
    for job_id, sample in job_ids.items():
        view = direct_stack.wait_for(job_id, timeout=FIFTY_JOBS_HUNG)
        assert view["status"] == "complete", view
        assert view["result"] == expected[sample]
        assert view["result"]["document"]["source"] == f"{sample}.txt"
        assert [record["phase"] for record in view["phases"]] == ["fetch", "split", "extract", "publish"]


def test_the_identity_header_scopes_the_jobs(direct_stack: DevStack) -> None:
    alice, bob = "arn:aws:iam::123456789012:user/alice", "arn:aws:iam::123456789012:user/bob"
    started = jobs(direct_stack, "start", "document-intake", "--state", '{"document": "invoice.txt"}', "--id", "alices")
    assert started.returncode == 0, started.stderr
    mine = jobs(direct_stack, "start", "document-intake", "--state", "{}", "--id", "alice-own", identity=alice)
    assert mine.returncode == 0, mine.stderr
    seen_by_bob = jobs(direct_stack, "show", "alice-own", identity=bob)
    assert seen_by_bob.returncode == 1
    assert "alice-own" in seen_by_bob.stderr
    assert "404" in seen_by_bob.stderr


def answer(request: urllib.request.Request | str) -> tuple[int, Any]:
    """The status and the parsed body of a request, whatever the status."""
    try:
        with urllib.request.urlopen(request, timeout=HUNG) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_errors_come_back_as_api_gateway_and_the_api_answer_them(direct_stack: DevStack) -> None:
    assert answer(f"{direct_stack.base_url}/health")[0] == 200
    assert answer(f"{direct_stack.base_url}/nowhere") == (404, {"message": "Not Found"})
    status, body = answer(f"{direct_stack.base_url}/jobs/unknown-job")
    assert status == 404
    assert body["error"]["code"] == "not_found"
    bad = urllib.request.Request(f"{direct_stack.base_url}/jobs", data=b"{not json", method="POST")
    bad.add_header("Content-Type", "application/json")
    assert answer(bad)[0] == 400
    host, port = direct_stack.base_url.removeprefix("http://").split(":")
    for length in ("nonsense", "-5", str(11 * 1024 * 1024)):
        connection = http.client.HTTPConnection(host, int(port), timeout=HUNG)
        connection.putrequest("POST", "/jobs")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", length)
        connection.endheaders()
        reply = connection.getresponse()
        assert reply.status == (413 if length.isdigit() else 400)
        connection.close()
    unknown = jobs(direct_stack, "start", "no-such-pipeline", "--state", "{}")
    assert unknown.returncode == 1
    assert "no-such-pipeline" in unknown.stderr


def test_a_second_server_on_a_taken_port_says_so(direct_stack: DevStack) -> None:
    port = direct_stack.base_url.rsplit(":", 1)[1]
    second = cairn("dev", "--port", port, "--no-reload")
    assert second.returncode == 2
    assert f"127.0.0.1:{port} is already in use" in second.stderr
    assert "Traceback" not in second.stderr


def test_the_research_brief_runs_offline_waits_for_its_reviewer_and_publishes(direct_stack: DevStack) -> None:
    question = json.dumps({"question": "Why do long jobs need checkpoints?"})
    started = jobs(direct_stack, "start", "research-brief", "--state", question, "--id", "local-brief")
    assert started.returncode == 0, started.stderr
    waiting = direct_stack.wait_for("local-brief", statuses=("waiting", "error"))
    assert waiting["status"] == "waiting", waiting.get("error")
    assert waiting["waitingFor"] == "approval"
    assert waiting["usage"]["model_calls"] == 4  # two scripted turns for the plan, two for the brief

    approved = jobs(direct_stack, "signal", "local-brief", "approval", "--payload", '{"approved": true}')
    assert approved.returncode == 0, approved.stderr
    done = direct_stack.wait_for("local-brief")
    assert done["status"] == "complete", done.get("error")
    assert done["result"]["sources"] == ["cairns.md", "checkpoints.md", "costs.md"]
    assert [record["phase"] for record in direct_stack.phases("local-brief")] == [
        "plan",
        "gather",
        "write",
        "review",
        "publish",
    ]
    assert done["phases"] == direct_stack.phases("local-brief")[-len(done["phases"]) :]  # the view: the newest
