"""`cairn jobs pull` end to end: a job run on the local stack (moto) behind a real HTTP server, pulled through the
command line into one file, loaded into a fresh local store with `cairn_local.load`, and rerun from its third phase."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn import Done, Next, Pipeline, WaitFor
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.cli import main
from cairn.client import ApiClient, ApiError
from cairn.client import pull as pull_command
from cairn.storage.file import FileStorage
from cairn.testing.plugin import LocalCairns
from cairn.testing.stack import LocalStack
from tests.aws import dynamodb_client, new_bucket, new_table, s3_client
from tests.functional.jobs_server import JobsServer
from tests.functional.stacks import moto_stack
from tests.support import FakeClock

BOB = "arn:aws:iam::123456789012:user/bob"
SECRET = "ada@example.com"

orders: Pipeline[Any] = Pipeline("orders")


@orders.phase(name="receive")
def receive(ctx: Any) -> Next:
    return Next("price", {**ctx.state, "lines": [{"sku": "a", "cents": 250}, {"sku": "b", "cents": 125}]})


@orders.phase(name="price")
def price(ctx: Any) -> Next:
    for line in ctx.state["lines"]:
        ctx.log(f"priced {line['sku']}")
    return Next("charge", {**ctx.state, "total": sum(line["cents"] for line in ctx.state["lines"])})


@orders.phase(name="charge")
def charge(ctx: Any) -> Next:
    return Next("ship", {**ctx.state, "charged": ctx.state["total"] + 99})


@orders.phase(name="ship")
def ship(ctx: Any) -> Done:
    return Done({"to": ctx.state["customer"]["email"], "charged": ctx.state["charged"]})


approvals: Pipeline[Any] = Pipeline("approvals")


@approvals.phase(name="ask")
def ask(ctx: Any) -> WaitFor:
    return WaitFor("approve", "decide", ctx.state)


@approvals.phase(name="decide")
def decide(ctx: Any) -> Done:
    return Done({**ctx.state, "approved_by": ctx.signal["approver"]})


@pytest.fixture
def stack(stack_clock: FakeClock) -> Iterator[LocalStack]:
    """The bundle's pipelines, `orders` and `approvals` on moto."""
    with moto_stack(stack_clock, orders, approvals) as stack:
        yield stack


def pulled_job(jobs: JobsServer, job_id: str = "order-1") -> None:
    """Start an order on the "production" stack and run it to its end."""
    state = json.dumps({"customer": {"email": SECRET, "name": "Ada"}})
    assert main(["jobs", "start", "orders", "--id", job_id, "--state", state]) == 0
    jobs.run()


@pytest.mark.parametrize("store", ["memory", "file"])
def test_a_pulled_job_loads_locally_and_a_rerun_from_its_third_phase_gives_the_same_result(
    jobs: JobsServer, cairn_local: LocalCairns, tmp_path: Path, store: str
) -> None:
    pulled_job(jobs)
    target = tmp_path / "order.cairn-job.json"

    assert main(["jobs", "pull", "order-1", "--api", jobs.url, "-o", str(target)]) == 0

    saved = json.loads(target.read_text(encoding="utf-8"))
    assert (saved["format"], saved["version"], saved["pulledFrom"]) == ("cairn-job", 1, jobs.url)
    assert saved["job"]["status"] == "complete"
    assert saved["job"]["input"] == {"customer": {"email": SECRET, "name": "Ada"}}
    original = saved["job"]["result"]
    assert original == {"to": SECRET, "charged": 474}
    records = [write["record"]["phase"] for write in saved["history"] if write["record"]]
    assert records == ["receive", "price", "charge", "ship"]
    entered = {write["entry"]["nextPhase"]: write["entry"]["state"] for write in saved["history"] if write["entry"]}
    assert entered["charge"]["total"] == 375
    assert set(saved["codeVersions"]) == {"receive", "price", "charge", "ship"}

    job_id = cairn_local.load(target, storage=FileStorage(tmp_path / "jobs") if store == "file" else None)
    # on memory, the Cairn made without storage= works on the store the job was loaded into
    app = cairn_local(orders) if store == "memory" else cairn_local(orders, storage=FileStorage(tmp_path / "jobs"))
    loaded = app.get(job_id)
    assert (loaded.status.value, loaded.result, loaded.input) == ("complete", original, saved["job"]["input"])
    assert [record.phase for record in loaded.phases] == records
    assert loaded.log[-1].message.startswith(f"Loaded from {target.name}, pulled from {jobs.url} at ")

    app.retry(job_id, mode="from", phase="charge")
    app.run_until_idle()

    rerun = app.get(job_id)
    assert rerun.status.value == "complete"
    assert rerun.result == original
    assert [record.phase for record in rerun.phases] == [*records, "charge", "ship"]
    page = app.storage.history_page(job_id, limit=3)
    assert page is not None
    assert page.cursor is not None
    assert app.storage.log_page(job_id) is not None


def test_loading_over_an_existing_job_is_refused_unless_replaced(
    jobs: JobsServer, cairn_local: LocalCairns, tmp_path: Path
) -> None:
    pulled_job(jobs)
    target = tmp_path / "order.json"
    assert main(["jobs", "pull", "order-1", "-o", str(target)]) == 0
    cairn_local.load(target)

    with pytest.raises(Exception, match='job "order-1" already exists here; load it with replace'):
        cairn_local.load(target)
    assert cairn_local.load(target, replace=True) == "order-1"


def test_another_owners_job_is_refused_and_nothing_is_written(
    jobs: JobsServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pulled_job(jobs)
    target = tmp_path / "theirs.json"
    capsys.readouterr()

    status = main(["jobs", "pull", "order-1", "--as", BOB, "-o", str(target)])

    _out, err = capsys.readouterr()
    assert status == 1
    assert err.startswith('cairn: error: cannot read job "order-1" as this caller: the API answered 404')
    assert len(err.splitlines()) == 1  # no traceback
    assert list(tmp_path.iterdir()) == []  # not even a temporary file


def test_redact_removes_the_field_everywhere_and_records_the_path(
    jobs: JobsServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pulled_job(jobs)
    target = tmp_path / "redacted.json"

    status = main(["jobs", "pull", "order-1", "-o", str(target), "--redact", "state.customer.email", "--redact", "to"])

    assert status == 0
    text = target.read_text(encoding="utf-8")
    assert SECRET not in text
    saved = json.loads(text)
    assert saved["redacted"] == ["state.customer.email", "to"]
    assert saved["job"]["input"]["customer"] == {"email": "[redacted]", "name": "Ada"}
    assert saved["job"]["result"] == {"to": "[redacted]", "charged": 474}
    states = [write["entry"]["state"] for write in saved["history"] if write["entry"]]
    assert states
    assert all(state["customer"]["email"] == "[redacted]" for state in states)


def test_a_redact_path_that_matches_nothing_is_named_and_no_file_is_written(
    jobs: JobsServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pulled_job(jobs)
    target = tmp_path / "mistyped.json"
    capsys.readouterr()

    status = main(
        ["jobs", "pull", "order-1", "-o", str(target), "--redact", "state.customer.email", "--redact", "state.custmer"]
    )

    _, err = capsys.readouterr()
    assert status == 1
    assert err.splitlines() == [
        'cairn: error: --redact state.custmer matched no field of job "order-1" (its input, states, result or maps): '
        "nothing was redacted by it, so nothing was written; check the path"
    ]
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_is_kept_unless_forced(
    jobs: JobsServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pulled_job(jobs)
    target = tmp_path / "order.json"
    target.write_text("mine", encoding="utf-8")
    capsys.readouterr()

    assert main(["jobs", "pull", "order-1", "-o", str(target)]) == 2
    assert "exists; add --force to overwrite it" in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == "mine"
    assert main(["jobs", "pull", "order-1", "-o", str(target), "--force"]) == 0
    assert json.loads(target.read_text(encoding="utf-8"))["job"]["jobId"] == "order-1"


def test_the_default_file_is_named_after_the_job(
    jobs: JobsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pulled_job(jobs)
    monkeypatch.chdir(tmp_path)

    assert main(["jobs", "pull", "order-1"]) == 0
    assert [path.name for path in tmp_path.iterdir()] == ["order-1.cairn-job.json"]


def test_a_pulled_job_loads_into_dynamodb_and_reads_and_reruns_as_any_other(
    jobs: JobsServer, cairn_local: LocalCairns, tmp_path: Path
) -> None:
    pulled_job(jobs)
    target = tmp_path / "order.json"
    assert main(["jobs", "pull", "order-1", "-o", str(target)]) == 0
    dynamodb, s3 = dynamodb_client(), s3_client()
    store = DynamoDBStorage(new_table(dynamodb), client=dynamodb, bucket=new_bucket(s3), s3_client=s3)

    job_id = cairn_local.load(target, storage=store)

    loaded = store.get_job(job_id)
    assert loaded is not None
    assert (loaded.status.value, loaded.sequence, loaded.input["customer"]["name"]) == ("complete", 6, "Ada")
    page = store.history_page(job_id, limit=2)
    assert page is not None
    assert page.cursor is not None
    older = store.history_page(job_id, page.cursor, limit=10)
    assert older is not None
    assert older.cursor is None
    assert len(page.items) + len(older.items) == 6
    assert store.entered(job_id, "charge") is not None
    with pytest.raises(Exception, match="already exists here"):
        cairn_local.load(target, storage=store)

    app = cairn_local(orders, storage=store)
    app.retry(job_id, mode="from", phase="charge")
    app.run_until_idle()
    rerun = store.get_job(job_id)
    assert rerun is not None
    assert (rerun.status.value, rerun.result) == ("complete", loaded.result)

    assert cairn_local.load(target, storage=store, replace=True) == job_id
    again = store.get_job(job_id)
    assert again is not None
    assert [record.phase for record in again.phases] == ["receive", "price", "charge", "ship"]


def test_the_state_a_phase_was_entered_with_before_a_rerun_is_still_read(
    jobs: JobsServer, stack_clock: FakeClock
) -> None:
    pulled_job(jobs)
    stack_clock.advance(60)
    client = ApiClient(jobs.url)
    first = client.entered_state("order-1", "charge")
    rerun_state = {**first["state"], "total": 1}
    assert main(["jobs", "rerun", "order-1", "--from", "charge", "--state", json.dumps(rerun_state)]) == 0
    jobs.run()

    newest = client.entered_state("order-1", "charge")
    earlier = client.entered_state("order-1", "charge", before=newest["enteredAt"] - 1)

    assert newest["state"]["total"] == 1
    assert earlier == first
    assert client.entered_state("order-1", "charge", before=first["enteredAt"]) == first
    with pytest.raises(ApiError) as missing:
        client.entered_state("order-1", "charge", before=first["enteredAt"] - 1)
    assert missing.value.status == 404
    with pytest.raises(ApiError) as negative:
        client.entered_state("order-1", "charge", before=-1)
    assert negative.value.status == 400


def test_the_signals_delivered_are_in_the_file_and_a_secret_the_state_kept_from_one_is_redacted(
    jobs: JobsServer, tmp_path: Path
) -> None:
    assert main(["jobs", "start", "approvals", "--id", "approval-1", "--state", '{"amount": 5}']) == 0
    jobs.run()
    assert main(["jobs", "signal", "approval-1", "approve", "--payload", json.dumps({"approver": SECRET})]) == 0
    jobs.run()
    target = tmp_path / "approval.json"

    assert main(["jobs", "pull", "approval-1", "-o", str(target), "--redact", "state.approved_by"]) == 0

    text = target.read_text(encoding="utf-8")
    saved = json.loads(text)
    [signal] = saved["signals"]
    assert signal["name"] == "approve"
    assert signal["deliveredAt"] > 0
    assert saved["job"]["result"] == {"amount": 5, "approved_by": "[redacted]"}
    assert SECRET not in text


def test_a_job_waiting_to_enter_its_next_phase_is_pulled_with_that_phases_entry(
    jobs: JobsServer, tmp_path: Path
) -> None:
    assert main(["jobs", "start", "approvals", "--id", "approval-2", "--state", '{"amount": 7}']) == 0
    jobs.run()  # waits for approve: decide is next and has not run
    target = tmp_path / "waiting.json"

    assert main(["jobs", "pull", "approval-2", "-o", str(target)]) == 0

    saved = json.loads(target.read_text(encoding="utf-8"))
    assert saved["job"]["status"] == "waiting"
    entered = {write["entry"]["nextPhase"]: write["entry"]["state"] for write in saved["history"] if write["entry"]}
    assert entered == {"ask": {"amount": 7}, "decide": {"amount": 7}}


def test_the_history_and_the_log_are_read_a_page_at_a_time_and_whole(
    jobs: JobsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pulled_job(jobs)
    monkeypatch.setattr(pull_command, "LOG_PAGE", 2)
    target = tmp_path / "order.json"

    assert main(["jobs", "pull", "order-1", "-o", str(target)]) == 0

    assert len(jobs.requests_to("/order-1/log")) == 2  # three entries, two a page
    whole = ApiClient(jobs.url).log("order-1")["entries"]
    saved = json.loads(target.read_text(encoding="utf-8"))
    assert [entry for write in saved["history"] for entry in write["log"]] == whole
