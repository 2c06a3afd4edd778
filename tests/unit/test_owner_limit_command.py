"""``cairn ops owner-limit``: one owner's fair share set, shown and cleared in a table, through the CLI's main."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from moto import mock_aws

from cairn.aws.dynamodb import DynamoDBStorage
from cairn.cli import main
from cairn.features.owner_share import MAX_OWNER_LIMIT
from tests.aws import dynamodb_client, new_table


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        yield new_table(dynamodb_client())


def test_an_owners_limit_is_set_shown_and_cleared(table: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ops", "owner-limit", "tenant-7", "3", "--table", table]) == 0
    assert "tenant-7: at most 3 phases at once; 0 running now" in capsys.readouterr().out
    store = DynamoDBStorage(table, owner="tenant-7", client=dynamodb_client())
    assert store.limit_for("tenant-7") == 0  # the stack has no share: owners' limits are not read
    store.owner_concurrency = 1  # a stack with a share of 1: the owner's own limit replaces it
    assert store.limit_for("tenant-7") == 3
    assert main(["ops", "owner-limit", "tenant-7", "--table", table, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"owner": "tenant-7", "limit": 3, "running": 0}
    assert main(["ops", "owner-limit", "tenant-7", "--clear", "--table", table]) == 0
    assert "no limit of its own" in capsys.readouterr().out
    assert store.owner_limit("tenant-7") is None


def test_bad_input_is_a_usage_error(table: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ops", "owner-limit", "tenant-7", "3"]) == 2
    assert "--stack-name NAME, or --table NAME" in capsys.readouterr().err
    assert main(["ops", "owner-limit", "bad#owner", "3", "--table", table]) == 2
    assert "Invalid owner" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["-1", "1.5", "two", str(MAX_OWNER_LIMIT + 1)])
def test_a_limit_out_of_range_is_refused_before_the_table_is_touched(
    bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["ops", "owner-limit", "tenant-7", bad, "--table", "no-such-table"])
    assert stopped.value.code == 2
    said = f"argument N: must be a whole number from 0 (no limit) to {MAX_OWNER_LIMIT}, got {bad!r}"
    assert said in capsys.readouterr().err


def test_jobs_show_says_why_a_job_waits_for_its_owners_share() -> None:
    from cairn.client.render import job_details

    view = {
        "jobId": "j",
        "pipeline": "p",
        "status": "running",
        "attempt": 1,
        "createdAt": 0,
        "updatedAt": 0,
        "shareWait": "waiting for its owner's share: 2 of 2 phases running",
        "wakeAt": 3_000,
    }
    shown = job_details(view, 1_000)
    assert "waiting for its owner's share: 2 of 2 phases running" in shown
    assert "waiting for its owner's share" not in job_details({**view, "shareWait": None}, 1_000)
