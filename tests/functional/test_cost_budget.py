"""A job's budget on both AWS drivers, through the HTTP API: the phase that would pass it never runs.

The prices come from a ``CAIRN_PRICES`` file, as a deployment's would: each phase run costs $1 (its
Lambda request), nothing else is priced, so the figures are exact whatever the run's timing.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn import JobStatus, Next, PhaseContext, Pipeline
from cairn.core.settings import PRICE_REGION, PRICES
from tests.functional.test_waits_drivers import DRIVERS, Deploy

JOB = "job-spend"
FREE = ("lambda_gb_seconds:arm64", "lambda_gb_seconds:x86_64", "dynamodb_write_units", "stepfunctions_transitions")


@pytest.fixture(params=sorted(DRIVERS))
def deploy(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Deploy]:
    """Deploys one pipeline on each driver in turn, with prices of $1 a phase run."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"prices": {"lambda_requests": 1.0, **dict.fromkeys(FREE, 0)}}))
    monkeypatch.setenv(PRICES, str(prices))
    monkeypatch.delenv(PRICE_REGION, raising=False)
    with DRIVERS[request.param]() as make:
        yield make


def spender(runs: Counter[str]) -> Pipeline[Any]:
    """``spend`` returns Next to itself, for ever: $1 a turn, with a budget of $3.50."""
    pipeline: Pipeline[Any] = Pipeline("spender", max_cost_usd=3.5)

    @pipeline.phase
    def spend(ctx: PhaseContext[Any]) -> Next:
        runs["spend"] += 1
        return Next("spend", {"turns": ctx.state["turns"] + 1})

    return pipeline


def test_a_budget_stops_a_job_before_the_phase_that_would_pass_it(deploy: Deploy) -> None:
    runs: Counter[str] = Counter()
    deployment = deploy(spender(runs))

    deployment.start("spender", JOB, {"turns": 0})
    deployment.settle(timeout=60)

    view = deployment.view(JOB)
    # $0+0, $1+1, $2+1 fit in $3.50; $3 spent and $1 expected would pass it: the fourth turn never starts
    assert runs["spend"] == 3
    assert view["status"] == JobStatus.ERROR.value, view
    assert 'stopped before phase "spend": it has cost $3.00 so far' in view["error"]
    assert "Pipeline(max_cost_usd=3.5)" in view["error"]
    assert view["cost"]["usd"] == 4.0  # three turns and the run that stopped the job: four invocations
    assert view["cost"]["phases"] == [1.0] * 4
    assert view["usage"]["lambda_requests"] == 4
