"""A job's cost on every store: its metered usage times the shipped prices, per job and per phase run."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import cairn.features
from cairn import Cairn, Done, InlineScheduler, Next, PhaseContext, Pipeline
from cairn.agents import ScriptedModel, Usage
from cairn.core.storage_port import Storage
from cairn.features.metering import gb_seconds_meter
from tests.support import FakeClock

JOB = "job-1"
HAIKU = "anthropic.claude-3-5-haiku-20241022-v1:0"


def shipped() -> dict[str, Any]:
    """The shipped table, read here from the package's file (not through cairn's loader)."""
    table: dict[str, Any] = json.loads((Path(cairn.features.__file__).parent / "prices.json").read_text())
    region: dict[str, Any] = table["regions"]["us-east-1"]
    return region


def priced(usage: dict[str, float], table: dict[str, Any]) -> float:
    """The cost of ``usage`` computed in the test: each meter with a price, times it."""
    total = 0.0
    for meter, quantity in usage.items():
        if meter in table["prices"]:
            total += quantity * table["prices"][meter]
        kind, _, model = meter.partition(":")
        if kind in ("input_tokens", "output_tokens") and model in table["models"]:
            total += quantity * table["models"][model][kind]
    return total


def two_phases(clock: FakeClock) -> Pipeline[Any]:
    """``fetch`` (1024 MB) runs 2 s and saves a 3 KB state once; ``write`` (512 MB) runs 0.5 s."""
    pipeline: Pipeline[Any] = Pipeline("costed")

    @pipeline.phase(memory=1024)
    def fetch(ctx: PhaseContext[Any]) -> Next:
        clock.advance(1)
        ctx.save_state({"text": "x" * 3000})
        clock.advance(1)
        return Next("write", {"text": "x" * 3000})

    @pipeline.phase
    def write(ctx: PhaseContext[Any]) -> Done:
        clock.advance(0.5)
        return Done({"ok": True})

    return pipeline


def test_a_jobs_cost_is_its_metered_usage_times_the_shipped_prices(storage: Storage, clock: FakeClock) -> None:
    pipeline = two_phases(clock)
    app = Cairn(pipeline, storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    app.start(pipeline, JOB, state={})
    app.run_until_idle()

    job = app.get(JOB)
    assert job.usage["lambda_requests"] == 2
    assert job.usage[gb_seconds_meter()] == 2.0 * 1024 / 1024 + 0.5 * 512 / 1024
    assert job.usage["dynamodb_write_units"] > 0
    table = shipped()
    cost = app.cost(JOB)
    assert cost.usd == pytest.approx(priced(job.usage, table), rel=1e-12)
    assert cost.usd > 0
    assert (cost.prices.region, cost.prices.date) == ("us-east-1", shipped()["date"])
    # per phase: each run's own usage, at the same prices; the runs add up to the job
    view = app.storage.get_job_view(JOB)
    assert view is not None
    records = {record.phase: record for record in view.job.phases}
    assert [run.phase for run in cost.phases] == ["fetch", "write"]
    for run in cost.phases:
        assert run.cost.usd == pytest.approx(priced(records[run.phase].usage, table), rel=1e-12)
    assert records["fetch"].usage["lambda_requests"] == 1
    assert records["fetch"].usage[gb_seconds_meter()] == 2.0
    assert sum(run.cost.usd for run in cost.phases) == pytest.approx(cost.usd, rel=1e-12)


def test_a_models_tokens_are_priced_by_its_id_and_an_unknown_model_is_unpriced(
    storage: Storage, clock: FakeClock
) -> None:
    pipeline: Pipeline[Any] = Pipeline("agents")
    pipeline.agent_phase(
        "ask",
        model=ScriptedModel([ScriptedModel.reply("Yes.", usage=Usage(input_tokens=1000, output_tokens=200))], HAIKU),
        prompt="Well?",
        next="ask_again",
    )
    pipeline.agent_phase(
        "ask_again",
        model=ScriptedModel([ScriptedModel.reply("No.", usage=Usage(input_tokens=50, output_tokens=5))], "in-house"),
        prompt="Really?",
    )
    app = Cairn(pipeline, storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    app.start(pipeline, JOB, state={})
    app.run_until_idle()

    job = app.get(JOB)
    assert (job.usage[f"input_tokens:{HAIKU}"], job.usage[f"output_tokens:{HAIKU}"]) == (1000, 200)
    assert (job.usage["input_tokens"], job.usage["output_tokens"]) == (1050, 205)  # the totals are kept
    cost = app.cost(JOB)
    lines = {line.meter: line for line in cost.cost.lines}
    models = shipped()["models"]
    # each line is the exact product, as a float: 1000 x 8e-07 is 0.0008, not binary floats' 0.0007999999999999999
    assert lines[f"input_tokens:{HAIKU}"].usd == float(1000 * Decimal(repr(models[HAIKU]["input_tokens"])))
    assert lines[f"output_tokens:{HAIKU}"].usd == float(200 * Decimal(repr(models[HAIKU]["output_tokens"])))
    assert cost.cost.unpriced == ("input_tokens:in-house", "output_tokens:in-house")
    assert cost.usd == pytest.approx(priced(job.usage, shipped()), rel=1e-12)
