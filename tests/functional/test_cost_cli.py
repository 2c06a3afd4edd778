"""`cairn jobs show` prints a job's cost, per job and per phase run; `cairn jobs list --sort cost` sorts by it."""

from __future__ import annotations

import re

import pytest

from cairn.testing.api import ApiClient
from cairn.testing.stack import LocalStack
from tests.functional.api_client import ALICE
from tests.functional.jobs_server import JobsServer
from tests.functional.test_jobs_cli import INVOICE, cli, run_cli, show_json, start


def test_show_prints_the_cost_of_the_job_and_of_each_phase_run(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    start(capsys, "costed")
    jobs.run()
    view = show_json(capsys, "costed")
    assert view["cost"]["usd"] > 0
    assert len(view["cost"]["phases"]) == len(view["phases"])

    status, out, err = run_cli(capsys, "show", "costed")
    assert (status, err) == (0, "")
    fields = dict(re.findall(r"^(\w[\w ]*):\s+(.*)$", out, flags=re.MULTILINE))
    usd = view["cost"]["usd"]
    assert fields["Cost"] == f"${usd:.6f} (at us-east-1 prices of {view['cost']['pricesDate']})"
    lines = out.splitlines()
    header = lines[lines.index("Phases:") + 1]
    assert "COST" in header.split()
    rows = lines[lines.index("Phases:") + 2 :][: len(view["phases"])]
    for row, record, cost in zip(rows, view["phases"], view["cost"]["phases"], strict=True):
        assert row.split()[0] == record["phase"]
        assert f"${cost:.6f}" in row.split()


def test_list_sort_cost_puts_the_dearest_job_first_with_its_cost(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    start(capsys, "ran-first", INVOICE)
    jobs.run()
    start(capsys, "not-run-yet", INVOICE)  # newest, but it has cost nothing yet

    status, out, err = run_cli(capsys, "list")
    assert status == 0, err
    header, *rows = out.splitlines()
    listed = {row.split()[0]: row.split()[-1] for row in rows}
    assert sorted(listed) == ["not-run-yet", "ran-first"]
    assert header.split()[-1] == "COST"  # each job's cost so far, unsorted too
    ran = show_json(capsys, "ran-first")["cost"]["usd"]
    assert listed == {"ran-first": f"${ran:.6f}", "not-run-yet": "$0.000000"}

    status, out, err = run_cli(capsys, "list", "--sort", "cost")
    assert status == 0, err
    header, *rows = out.splitlines()
    assert header.split()[-1] == "COST"
    assert [row.split()[0] for row in rows] == ["ran-first", "not-run-yet"]
    assert rows[1].split()[-1] == "$0.000000"
    assert rows[0].split()[-1] == f"${ran:.6f}"

    with pytest.raises(SystemExit) as exited:
        cli("list", "--sort", "price")
    assert exited.value.code == 2
    assert "invalid choice: 'price'" in capsys.readouterr().err


def test_the_api_lists_by_cost_only_when_asked_and_refuses_another_sort(stack: LocalStack) -> None:
    api = ApiClient(stack, owner=ALICE)
    for job_id, document in (("api-dear", "invoice.txt"), ("api-cheap", "missing.txt")):
        assert (
            api.post("/jobs", {"pipeline": "document-intake", "jobId": job_id, "state": {"document": document}}).status
            < 300
        )
    stack.run_until_idle()

    plain = api.get("/jobs")
    assert plain.status == 200, plain.body
    assert all("costUsd" not in job for job in plain.body["jobs"])  # no job item read unless asked
    costed = api.get("/jobs", query={"costs": "true"})
    assert costed.status == 200, costed.body
    for job in costed.body["jobs"]:  # newest first, each with its cost so far
        assert job["costUsd"] == api.get(f"/jobs/{job['jobId']}").body["cost"]["usd"]
    assert api.get("/jobs", query={"costs": "maybe"}).status == 400
    by_cost = api.get("/jobs", query={"sort": "cost"})
    assert by_cost.status == 200, by_cost.body
    listed = [(job["jobId"], job["costUsd"]) for job in by_cost.body["jobs"]]
    assert [job_id for job_id, _ in listed] == ["api-dear", "api-cheap"]
    for job_id, usd in listed:
        assert usd == api.get(f"/jobs/{job_id}").body["cost"]["usd"]

    refused = api.get("/jobs", query={"sort": "price"})
    assert refused.status == 400, refused.body
