"""The entry points' EMF metrics: one compact blob per invocation when on, nothing ever printed when off."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn.aws.entry import entry_point
from cairn.aws.observability import metrics
from cairn.testing.invoker import LocalContext

INVOCATIONS = 150  # past Powertools' 100 values per metric, where it prints whatever the switch says


def counting_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """A handler that adds one metric value per invocation, as the phase and API handlers do."""
    metrics.add_metric(name="Counted", unit=MetricUnit.Count, value=1)
    return {"ok": True}


def invoke_many(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Invoke the wrapped handler INVOCATIONS times; the lines it printed to stdout."""
    handler = entry_point(counting_handler)
    capsys.readouterr()
    for _ in range(INVOCATIONS):
        assert handler({}, cast(LambdaContext, LocalContext("metered"))) == {"ok": True}
    return [line for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_with_metrics_off_a_long_lived_process_never_prints_a_blob(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")

    assert invoke_many(capsys) == []


def test_with_metrics_on_each_invocation_prints_its_own_values_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)

    blobs = [json.loads(line) for line in invoke_many(capsys)]

    assert len(blobs) == INVOCATIONS
    assert all(blob["Counted"] == [1.0] for blob in blobs)
