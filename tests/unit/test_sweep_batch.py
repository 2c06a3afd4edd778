"""The sweep: at most CAIRN_SWEEP_BATCH stalled jobs a run, and the StalledJobs metric (0 included) in its EMF blob."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn.aws.dynamodb.stalled import StalledJob
from cairn.aws.runtime import Runtime
from cairn.aws.scheduler_handler import scheduler_handler
from cairn.core.errors import ConfigurationError
from cairn.core.settings import SWEEP_BATCH, Settings
from cairn.testing.invoker import LocalContext
from pipelines import PIPELINES

SWEEP = {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}


@dataclass
class Advances:
    """A scheduler that notes each advance it is asked for."""

    sent: list[tuple[str, str, int | None]] = field(default_factory=list)

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        self.sent.append((job_id, phase, sequence))


@dataclass
class Store:
    """The DynamoDB store's ``stalled_jobs``, over a list; notes the limits it was asked for."""

    stalled: list[StalledJob]
    limits: list[int] = field(default_factory=list)

    def stalled_jobs(self, *, idle_seconds: float, limit: int = 100) -> list[StalledJob]:
        self.limits.append(limit)
        return self.stalled[:limit]


@dataclass
class SweepRuntime:
    """What the sweep reads of a runtime: settings, the store, a scheduler per job."""

    settings: Settings
    store: Store
    advances: Advances = field(default_factory=Advances)

    def storage(self, owner: str) -> Store:
        return self.store

    def start_scheduler(self, owner: str, pipeline: Any) -> Advances:
        return self.advances


def stalled(count: int) -> list[StalledJob]:
    return [StalledJob("alice", f"job-{index}", "document-intake", "split", 0, 3) for index in range(count)]


def sweep(runtime: SweepRuntime, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run the scheduler's handler on the sweep event; its answer and the EMF blobs it printed."""
    handler = scheduler_handler(PIPELINES, runtime=cast(Runtime, runtime))
    capsys.readouterr()
    answer = handler(SWEEP, cast(LambdaContext, LocalContext("cairn-scheduler")))
    blobs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    return answer, blobs


@pytest.fixture(autouse=True)
def metrics_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)


def stalled_jobs_metric(blobs: list[dict[str, Any]]) -> list[float]:
    """The StalledJobs values of the blobs, after checking each one declares it as a Count."""
    values: list[float] = []
    for blob in blobs:
        declared = {item["Name"]: item["Unit"] for item in blob["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
        if "StalledJobs" in declared:
            assert declared["StalledJobs"] == "Count"
            assert blob["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]
            values.extend(blob["StalledJobs"])
    return values


def test_one_stalled_job_is_revived_and_counted(capsys: pytest.CaptureFixture[str]) -> None:
    runtime = SweepRuntime(Settings(), Store(stalled(1)))

    answer, blobs = sweep(runtime, capsys)

    assert answer == {"revived": ["job-0"]}
    assert runtime.advances.sent == [("job-0", "split", 3)]
    assert stalled_jobs_metric(blobs) == [1.0]


def test_a_sweep_revives_at_most_its_batch_and_leaves_the_rest_for_the_next(capsys: pytest.CaptureFixture[str]) -> None:
    runtime = SweepRuntime(Settings(sweep_batch=2), Store(stalled(5)))

    answer, blobs = sweep(runtime, capsys)

    assert runtime.store.limits == [2]
    assert answer == {"revived": ["job-0", "job-1"]}
    assert [job_id for job_id, _, _ in runtime.advances.sent] == ["job-0", "job-1"]
    assert stalled_jobs_metric(blobs) == [2.0]


def test_a_sweep_that_finds_nothing_still_reports_zero(capsys: pytest.CaptureFixture[str]) -> None:
    runtime = SweepRuntime(Settings(), Store([]))

    answer, blobs = sweep(runtime, capsys)

    assert answer == {"revived": []}
    assert runtime.store.limits == [100]  # the default batch
    assert stalled_jobs_metric(blobs) == [0.0]


def test_the_batch_comes_from_cairn_sweep_batch() -> None:
    assert Settings.from_env({}).sweep_batch == 100
    assert Settings.from_env({SWEEP_BATCH: ""}).sweep_batch == 100
    assert Settings.from_env({SWEEP_BATCH: "25"}).sweep_batch == 25


@pytest.mark.parametrize(
    ("raw", "said"), [("0", "must be positive"), ("-3", "must be positive"), ("ten", "must be a whole number")]
)
def test_a_bad_batch_is_named(raw: str, said: str) -> None:
    with pytest.raises(ConfigurationError, match=f"CAIRN_SWEEP_BATCH {said}"):
        Settings.from_env({SWEEP_BATCH: raw})
