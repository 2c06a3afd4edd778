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
    Map,
    Next,
    PhaseContext,
    Pipeline,
    RetryPolicy,
)
from cairn.core.errors import PipelineError
from cairn.core.settings import PRICE_REGION, PRICES
from cairn.features.budgets import BUDGET_STOP
from cairn.features.prices import load_prices, shipped_table
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
        ('{"prices": {"lambda_requests": -1}}', '"prices.lambda_requests" must be a number of dollars from 0 to 1000'),
        ('{"prices": {"lambda_requests": "cheap"}}', "must be a number of dollars"),
        ('{"pricez": {}}', "unknown keys ['pricez']"),
        ('{"models": {"m": {"tokens": 1}}}', '"models.m" prices only'),
        ('{"date": "15/11/2026"}', '"date" must be the date the prices were taken, YYYY-MM-DD'),
        ('{"currency": "EUR"}', '"currency" must be "USD"'),
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


def cents_a_request(usd: float) -> dict[str, Any]:
    """Prices where each run (a phase's or a map item's) costs exactly ``usd``: its Lambda request, nothing else."""
    return {"prices": {**DOLLAR_A_RUN["prices"], "lambda_requests": usd}}


def mapping(runs: Counter[str], budget: float, items: int) -> Pipeline[Any]:
    """``split`` maps ``items`` items over ``page`` (item 0 fails once, so it finishes last), then ``merge``."""
    pipeline: Pipeline[Any] = Pipeline("pages", max_cost_usd=budget)

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        runs["split"] += 1
        return Map(list(range(items)), phase="page", then="merge", max_concurrency=3)

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=1.0))
    def page(ctx: PhaseContext[Any]) -> Done:
        runs["page"] += 1
        if ctx.item == 0 and ctx.attempt == 1:
            raise ValueError("a blurred scan")
        return Done(ctx.state)

    @pipeline.phase
    def merge(ctx: PhaseContext[Any]) -> Done:
        runs["merge"] += 1
        return Done(len(ctx.results or []))

    return pipeline


def test_a_budget_counts_a_maps_items_before_the_phase_after_the_map() -> None:
    runs: Counter[str] = Counter()
    clock = FakeClock()
    pipeline = mapping(runs, 0.50, items=40)
    app = Cairn(
        pipeline, prices=cents_a_request(0.05), scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep)
    )
    app.start(pipeline, JOB, state={})
    app.run_until_idle()

    job = app.get(JOB)
    # split ($0.05) and 41 item runs ($2.05) have passed $0.50: merge is not started
    assert runs == Counter({"split": 1, "page": 41})
    assert job.status == JobStatus.ERROR, job.error
    assert job.error is not None
    assert 'stopped before phase "merge": it has cost $2.10 so far' in job.error
    assert job.usage["lambda_requests"] == 1 + 41 + 1  # the items' usage joined the job's, with the stop's
    assert app.cost(JOB).usd == pytest.approx(2.15)

    app.retry(JOB)  # the items' usage is joined once: the retry's budget counts from the stop
    app.run_until_idle()
    assert app.get(JOB).status == JobStatus.COMPLETE
    assert runs["merge"] == 1
    assert app.get(JOB).usage["lambda_requests"] == 1 + 41 + 1 + 1


def endless(runs: Counter[str], budget: float) -> Pipeline[Any]:
    """``spend`` returns Next to itself for ever."""
    pipeline: Pipeline[Any] = Pipeline("spender", max_cost_usd=budget)

    @pipeline.phase
    def spend(ctx: PhaseContext[Any]) -> Next:
        runs["spend"] += 1
        return Next("spend", ctx.state)

    return pipeline


def test_a_phase_that_fits_the_budget_exactly_runs() -> None:
    runs: Counter[str] = Counter()
    pipeline = endless(runs, 0.30)
    app = Cairn(pipeline, prices=cents_a_request(0.10), scheduler=InlineScheduler(now=FakeClock().monotonic))
    app.start(pipeline, JOB, state={})
    app.run_until_idle()

    job = app.get(JOB)
    # $0.20 spent + $0.10 expected is $0.30: within the budget, whatever binary floats make of the sum
    assert runs == Counter({"spend": 3})
    assert job.error is not None
    assert "it has cost $0.300000 so far and the phase is expected to cost $0.100000" in job.error
    # each retry spends its whole budget again: the stop's run and two more; the cost each stop records is a
    # float sum (0.6 + 0.30000000000000004...), read back as the dollars it stands for
    for retries in range(1, 13):
        app.retry(JOB)
        app.run_until_idle()
        assert app.get(JOB).status == JobStatus.ERROR
        assert runs["spend"] == 3 + 2 * retries, retries


def test_a_budget_stop_shows_enough_digits_to_be_true() -> None:
    runs: Counter[str] = Counter()
    pipeline = looping(runs, 0.30)
    app = Cairn(pipeline, prices=cents_a_request(0.1000002), scheduler=InlineScheduler(now=FakeClock().monotonic))
    app.start(pipeline, JOB, state={"n": 0})
    app.run_until_idle()

    job = app.get(JOB)
    assert runs == Counter({"tick": 2})
    assert job.error is not None
    # at six decimals, $0.200000 + $0.100000 would not pass $0.300000: the figures show the digit that does
    assert "it has cost $0.2000004 so far and the phase is expected to cost $0.1000002" in job.error
    assert "which would pass its budget of $0.3000000 (Pipeline(max_cost_usd=0.3))" in job.error


def test_a_job_that_has_spent_its_whole_budget_starts_no_new_phase() -> None:
    pipeline: Pipeline[Any] = Pipeline("steps", max_cost_usd=0.30)
    for name, following in (("one", "two"), ("two", "three"), ("three", "four"), ("four", None)):

        def step(ctx: PhaseContext[Any], following: str | None = following) -> Next | Done:
            return Next(following, ctx.state) if following else Done()

        pipeline.phase(name=name)(step)
    app = Cairn(pipeline, prices=cents_a_request(0.10))
    app.start(pipeline, JOB, state={})
    app.run_until_idle()

    job = app.get(JOB)
    # "four" has not run (expected $0), but $0.30 is all of the budget: no figure shown claims to pass it
    assert job.status == JobStatus.ERROR
    assert job.error is not None
    assert 'stopped before phase "four": it has cost $0.300000 so far, all of its budget of $0.300000' in job.error
    assert job.phases[-1].failure is not None
    assert job.phases[-1].failure.type == "cairn.core.errors.BudgetExceededError"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (
            '{"prices": {"lambda_request": 1e-07}}',
            '"prices.lambda_request": no such meter (did you mean "lambda_requests"?',
        ),
        (
            '{"regions": {"eu-west-1": {"date": "2026-10-01", "prices": {"dynamodb_write_unit": 7e-07}}}}',
            '"regions.eu-west-1.prices.dynamodb_write_unit": no such meter (did you mean "dynamodb_write_units"?',
        ),
        ('{"prices": {"input_tokens:my-model": 1e-06}}', 'a model\'s tokens are priced under "models"'),
        (
            '{"prices": {"lambda_requests": 1e308}}',
            '"prices.lambda_requests" must be a number of dollars from 0 to 1000',
        ),
        ('{"prices": {"lambda_requests": 1' + "0" * 400 + "}}", '"prices.lambda_requests" must be a number of dollars'),
        ('{"prices": {"lambda_requests": NaN}}', '"prices.lambda_requests" must be a number of dollars'),
        (
            '{"models": {"my-model": {"output_tokens": 1e300}}}',
            '"models.my-model.output_tokens" must be a number of dollars from 0 to 1000',
        ),
    ],
)
def test_a_price_table_is_checked_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, says: str
) -> None:
    bad = tmp_path / "contract.json"
    bad.write_text(content)
    monkeypatch.setenv(PRICES, str(bad))
    with pytest.raises(ConfigurationError) as raised:
        Cairn(one_phase())
    assert says in str(raised.value)
    assert f"{PRICES}={bad}" in str(raised.value)


def test_a_price_file_that_is_not_utf8_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "latin1.json"
    bad.write_bytes('{"note": "prix négociés", "prices": {}}'.encode("latin-1"))
    monkeypatch.setenv(PRICES, str(bad))
    with pytest.raises(ConfigurationError, match="not UTF-8 text") as raised:
        Cairn(one_phase())
    assert f"{PRICES}={bad}" in str(raised.value)
    assert "byte 0xe9 at offset 16" in str(raised.value)


def test_the_shipped_table_passes_the_checks_an_override_gets() -> None:
    shipped = load_prices(environ={})
    assert load_prices(overrides=shipped_table(), environ={}).prices == shipped.prices
