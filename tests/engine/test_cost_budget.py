"""Prices (shipped, overridden per region and contract) and a job's budget, through the public API."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cairn import (
    Cairn,
    ConfigurationError,
    Done,
    InlineScheduler,
    JobStatus,
    Next,
    PhaseContext,
    Pipeline,
    PipelineError,
)
from cairn.core.budgets import BUDGET_STOP
from cairn.core.prices import load_prices
from cairn.core.settings import PRICE_REGION, PRICES
from tests.support import FakeClock

JOB = "job-1"
#: Each phase run costs exactly $1: its Lambda request; nothing else is priced.
DOLLAR_A_RUN = {
    "prices": {
        "lambda_requests": 1.0,
        "lambda_gb_seconds:arm64": 0,
        "lambda_gb_seconds:x86_64": 0,
        "dynamodb_write_units": 0,
    }
}


@pytest.fixture(autouse=True)
def _no_price_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PRICES, raising=False)
    monkeypatch.delenv(PRICE_REGION, raising=False)


def one_phase() -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("single")

    @pipeline.phase
    def only(ctx: PhaseContext[Any]) -> Done:
        return Done()

    return pipeline


def ran(prices: Any = None) -> Cairn:
    pipeline = one_phase()
    app = Cairn(pipeline, prices=prices)
    app.start(pipeline, JOB, state={})
    app.run_until_idle()
    return app


def test_an_override_file_changes_the_price(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = ran().cost(JOB)
    overrides = tmp_path / "contract.json"
    overrides.write_text(json.dumps({"date": "2026-11-15", "prices": {"lambda_requests": 1.0}}))

    given = ran(overrides).cost(JOB)
    assert given.usd == pytest.approx(shipped.usd - 2e-07 + 1.0)
    assert (given.prices.date, given.prices.sources) == ("2026-11-15", ("shipped", str(overrides)))

    monkeypatch.setenv(PRICES, str(overrides))  # the same through the environment
    assert ran().cost(JOB).usd == pytest.approx(given.usd)


def test_a_region_change_changes_the_prices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    regions = tmp_path / "regions.json"
    table = {"date": "2026-10-01", "prices": {"lambda_requests": 3e-07, "dynamodb_write_units": 7.0e-07}}
    regions.write_text(json.dumps({"regions": {"eu-west-1": table}}))
    monkeypatch.setenv(PRICES, str(regions))
    monkeypatch.setenv(PRICE_REGION, "eu-west-1")

    app = ran()
    cost = app.cost(JOB)
    usage = app.get(JOB).usage
    assert (cost.prices.region, cost.prices.date) == ("eu-west-1", "2026-10-01")
    assert cost.usd == pytest.approx(usage["lambda_requests"] * 3e-07 + usage["dynamodb_write_units"] * 7.0e-07)
    assert load_prices(region="us-east-1").region == "us-east-1"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "are not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"prices": {"lambda_requests": -1}}', 'the price of "lambda_requests" must be a number of dollars >= 0'),
        ('{"prices": {"lambda_requests": "cheap"}}', "must be a number of dollars"),
        ('{"pricez": {}}', "unknown keys ['pricez']"),
        ('{"models": {"m": {"tokens": 1}}}', 'the model "m" prices only'),
    ],
)
def test_a_bad_override_file_is_a_clear_configuration_error(tmp_path: Path, content: str, says: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(ConfigurationError, match="price overrides") as raised:
        Cairn(one_phase(), prices=bad)
    assert says in str(raised.value)
    assert str(bad) in str(raised.value)


def test_a_missing_file_or_an_unknown_region_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigurationError, match="Cannot read the price overrides"):
        load_prices(overrides=tmp_path / "absent.json")
    monkeypatch.setenv(PRICE_REGION, "mars-north-1")
    with pytest.raises(ConfigurationError, match='No prices for region "mars-north-1"'):
        load_prices()


@pytest.mark.parametrize("bad", [0, -1.5, float("nan"), True, "1"])
def test_a_budget_is_a_positive_number(bad: Any) -> None:
    with pytest.raises(PipelineError, match="max_cost_usd must be a positive number"):
        Pipeline("p", max_cost_usd=bad)


def looping(runs: Counter[str], budget: float) -> Pipeline[Any]:
    """``tick`` loops to itself ten times, then ``tock`` ends the job."""
    pipeline: Pipeline[Any] = Pipeline("clock", max_cost_usd=budget)

    @pipeline.phase
    def tick(ctx: PhaseContext[Any]) -> Next:
        runs["tick"] += 1
        return Next("tick" if ctx.state["n"] < 10 else "tock", {"n": ctx.state["n"] + 1})

    @pipeline.phase
    def tock(ctx: PhaseContext[Any]) -> Done:
        runs["tock"] += 1
        return Done()

    return pipeline


def test_a_budget_stops_the_job_before_the_phase_that_would_pass_it() -> None:
    runs: Counter[str] = Counter()
    pipeline = looping(runs, 2.5)
    app = Cairn(pipeline, prices=DOLLAR_A_RUN, scheduler=InlineScheduler(now=FakeClock().monotonic))
    app.start(pipeline, JOB, state={"n": 0})
    app.run_until_idle()

    job = app.get(JOB)
    # $1 spent, the next tick expected to cost $1: fits; $2 spent + $1 expected passes $2.50: not started
    assert runs == Counter({"tick": 2})
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert 'stopped before phase "tick"' in job.error
    assert "it has cost $2.00 so far" in job.error
    assert "Pipeline(max_cost_usd=2.5)" in job.error
    assert 'Phase "tick" was not started' in job.error
    assert job.checkpoint is not None
    assert job.checkpoint.state == {"n": 2}  # a retry goes on from there
    assert job.usage[BUDGET_STOP] == 2.0
    assert app.cost(JOB).usd == 3.0  # the run that stopped it was an invocation too

    app.retry(JOB)  # the budget counts from the stop: the retry may spend it again
    app.run_until_idle()
    job = app.get(JOB)
    assert job.status == JobStatus.ERROR
    # the stop's own invocation ($1) counts against the retry: one more tick, then the next would pass
    assert runs == Counter({"tick": 3})


def test_a_job_within_its_budget_runs_to_the_end() -> None:
    runs: Counter[str] = Counter()
    pipeline = looping(runs, 100)
    app = Cairn(pipeline, prices=DOLLAR_A_RUN)
    app.start(pipeline, JOB, state={"n": 0})
    app.run_until_idle()
    assert app.get(JOB).status == JobStatus.COMPLETE
    assert runs == Counter({"tick": 11, "tock": 1})
    assert app.cost(JOB).usd == 12.0
