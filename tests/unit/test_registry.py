"""The registry of a deployment's pipelines: phase functions named by pipeline, and real clashes refused."""

from __future__ import annotations

from typing import Any

import pytest

from cairn import Done, PhaseContext, Pipeline
from cairn.core.errors import PipelineError
from cairn.core.naming import MAX_FUNCTION_NAME, MAX_STACK_NAME
from cairn.core.registry import PipelineRegistry
from cairn.core.settings import Settings


def pipeline_with(name: str, *phases: str) -> Pipeline[Any]:
    """A pipeline called ``name`` whose phases (each simply done) are ``phases``."""
    pipeline: Pipeline[Any] = Pipeline(name)
    for phase in phases:

        def run(ctx: PhaseContext[Any]) -> Done:
            return Done()

        pipeline.phase(name=phase)(run)
    return pipeline


def test_two_pipelines_may_share_phase_names() -> None:
    registry = PipelineRegistry(
        [pipeline_with("document-intake", "fetch", "publish"), pipeline_with("invoice-review", "fetch", "publish")]
    )
    assert registry.names == ["document-intake", "invoice-review"]


@pytest.mark.parametrize(
    ("first", "second", "shared"),
    [
        (("a-b", "c"), ("a", "b-c"), 'function name "a-b-c"'),
        (("doc-intake", "fetch"), ("docIntake", "fetch"), 'template resource name "DocIntakeFetch"'),
        (("orders", "load.v2"), ("orders", "load_v2"), 'function name "orders-load_v2"'),
    ],
)
def test_phases_whose_functions_or_resources_would_meet_are_refused_naming_both(
    first: tuple[str, str], second: tuple[str, str], shared: str
) -> None:
    pipelines = (
        [pipeline_with(first[0], first[1], second[1])]
        if first[0] == second[0]
        else [pipeline_with(*first), pipeline_with(*second)]
    )
    with pytest.raises(PipelineError) as raised:
        PipelineRegistry(pipelines)
    message = str(raised.value)
    assert f'phase "{first[1]}" of pipeline "{first[0]}"' in message
    assert f'phase "{second[1]}" of pipeline "{second[0]}"' in message
    assert shared in message


def test_two_pipelines_with_one_name_are_refused() -> None:
    with pytest.raises(PipelineError, match='Two pipelines are named "orders"'):
        PipelineRegistry([pipeline_with("orders", "load"), pipeline_with("orders", "ship")])


def test_a_phase_function_is_named_by_the_prefix_the_pipeline_and_the_phase() -> None:
    settings = Settings(function_prefix="prod-")
    assert settings.phase_function("document-intake", "fetch") == "prod-document-intake-fetch"
    assert settings.phase_function("invoice-review", "fetch") == "prod-invoice-review-fetch"
    assert settings.phase_function("orders", "load.v2") == "prod-orders-load_v2"


def test_long_names_are_shortened_distinctly_and_always_fit_a_lambda_function_name() -> None:
    settings = Settings(function_prefix="s" * MAX_STACK_NAME + "-")
    pipeline, phases = "quarterly-financial-statement-reconciliation", ["extract-ledger-lines", "extract-ledger-totals"]
    names = [settings.phase_function(pipeline, phase) for phase in phases]
    assert len(set(names)) == 2
    assert all(len(name) <= MAX_FUNCTION_NAME for name in names)
    assert all(name.startswith(settings.function_prefix + "quarterly-financial") for name in names)
    assert names == [settings.phase_function(pipeline, phase) for phase in phases]  # the same every time
