"""``Pipeline(state_version=..., migrations=...)`` is checked when the pipeline is built: bad input is a
PipelineError naming it; what a checkpoint records follows the version."""

from __future__ import annotations

from typing import Any

import pytest

from cairn import Pipeline
from cairn.core.errors import PipelineError
from cairn.core.migrations import StateMigrationError


def same(state: Any) -> Any:
    return state


@pytest.mark.parametrize("version", [0, -1, 1.5, "2", True, None])
def test_a_state_version_that_is_not_a_positive_whole_number_is_refused(version: Any) -> None:
    with pytest.raises(PipelineError, match=r"state_version must be a positive whole number, got"):
        Pipeline("p", state_version=version)


@pytest.mark.parametrize(
    ("migrations", "named"),
    [
        ({3: same}, "migration key 3"),
        ({0: same}, "migration key 0"),
        ({"1": same}, "migration key '1'"),
        ({True: same}, "migration key True"),
        ({1: "v1_to_v2"}, "migration 1 is not callable"),
        ([same], "migrations must map a version to a function"),
    ],
)
def test_bad_migrations_are_refused_naming_what_is_wrong(migrations: Any, named: str) -> None:
    with pytest.raises(PipelineError) as refused:
        Pipeline("p", state_version=3, migrations=migrations)

    assert named in str(refused.value)
    assert "'p'" in str(refused.value)


def test_a_version_1_pipeline_takes_no_migration() -> None:
    with pytest.raises(PipelineError, match=r"valid keys: none \(state_version is 1\)"):
        Pipeline("p", migrations={1: same})


def test_a_checkpoint_records_the_version_only_when_it_is_not_1() -> None:
    assert Pipeline("p").checkpoint("a", {}, 1).state_version is None
    assert "stateVersion" not in Pipeline("p").checkpoint("a", {}, 1).to_wire()
    assert Pipeline("p", state_version=2, migrations={1: same}).checkpoint("a", {}, 1).to_wire()["stateVersion"] == 2


def test_load_state_runs_the_path_in_order_and_refuses_one_with_a_gap() -> None:
    calls: list[int] = []

    def step(version: int) -> Any:
        def migrate(state: dict[str, Any]) -> dict[str, Any]:
            calls.append(version)
            return {**state, "seen": [*state.get("seen", []), version]}

        return migrate

    pipeline: Pipeline[Any] = Pipeline("p", state_version=4, migrations={1: step(1), 2: step(2), 3: step(3)})
    assert pipeline.load_state({}, None) == {"seen": [1, 2, 3]}
    assert pipeline.load_state({}, 3) == {"seen": [3]}
    assert pipeline.load_state({"x": 1}, 4) == {"x": 1}
    assert calls == [1, 2, 3, 3]

    gap: Pipeline[Any] = Pipeline("p", state_version=4, migrations={1: step(1), 3: step(3)})
    with pytest.raises(
        StateMigrationError, match=r"no migration from version 2 \(Pipeline\(migrations=\{2: \.\.\.\}\)\)"
    ):
        gap.load_state({}, 1)
    assert calls == [1, 2, 3, 3]  # nothing ran: the path is checked first


def test_a_migration_returning_what_is_not_json_is_named() -> None:
    pipeline: Pipeline[Any] = Pipeline("p", state_version=2, migrations={1: lambda state: {"when": object()}})

    with pytest.raises(StateMigrationError, match=r"migration 1 \(.*lambda.*\) of pipeline \"p\" failed"):
        pipeline.load_state({}, None)
