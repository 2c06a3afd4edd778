"""The stack's ceiling on a map's concurrency (``CAIRN_MAX_MAP_CONCURRENCY``, the template's ``MaxMapConcurrency``)
lowers what a ``Map`` asks for, on every store; a map asking for less keeps its own; a bad value is refused."""

from __future__ import annotations

from typing import Any

import pytest

from cairn import Cairn, Done, InlineScheduler, JobStatus, Map, PhaseContext, Pipeline
from cairn.core.errors import ConfigurationError
from cairn.core.storage_port import Storage
from cairn.maps.fan_out import map_concurrency
from tests.support import FakeClock

ITEMS = 6


def fanning(asked: int) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("fan")

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        return Map(list(range(ITEMS)), phase="item", then="total", max_concurrency=asked)

    @pipeline.phase
    def item(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.item)

    @pipeline.phase
    def total(ctx: PhaseContext[Any]) -> Done:
        assert ctx.results is not None
        return Done(sum(ctx.results))

    return pipeline


@pytest.mark.parametrize(("ceiling", "asked", "running"), [("2", 5, 2), ("", 5, 5), ("8", 3, 3)])
def test_a_map_runs_at_most_the_stack_ceiling_of_items_at_once(
    storage: Storage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, ceiling: str, asked: int, running: int
) -> None:
    monkeypatch.setenv("CAIRN_MAX_MAP_CONCURRENCY", ceiling)
    jobs = Cairn(fanning(asked), storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    jobs.start("fan", "fan-1", state={})
    jobs.run_until_idle(max_steps=1)
    mapping = jobs.get("fan-1")
    assert mapping.fan_out is not None
    assert mapping.fan_out.max_concurrency == running
    assert jobs._inline is not None
    assert jobs._inline.pending() == running
    jobs.run_until_idle()
    done = jobs.get("fan-1")
    assert done.status == JobStatus.COMPLETE
    assert done.result == sum(range(ITEMS))


@pytest.mark.parametrize("bad", ["0", "-3", "many"])
def test_a_bad_ceiling_is_a_configuration_error_naming_the_variable(bad: str) -> None:
    with pytest.raises(ConfigurationError, match="CAIRN_MAX_MAP_CONCURRENCY"):
        map_concurrency(5, {"CAIRN_MAX_MAP_CONCURRENCY": bad})
