"""Registries the template tools are tried on (``--registry tests.template.registries:NAME``).

Each is the bundle's registry changed one way: a second pipeline whose phase names overlap
document-intake's, a phase added, a phase removed, a setting changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cairn import Done, Next, PhaseContext, Pipeline
from cairn.core.registry import PipelineRegistry
from pipelines import PIPELINES

INTAKE = PIPELINES.get("document-intake")

invoice_review: Pipeline[Any] = Pipeline("invoice-review")


@invoice_review.phase(name="fetch", timeout=60, memory=256, environment={"REVIEW_LIMIT": "1000"})
def fetch_invoice(ctx: PhaseContext[Any]) -> Next:
    """Take the invoice from the input."""
    return Next("publish", ctx.state)


@invoice_review.phase(name="publish")
def publish_review(ctx: PhaseContext[Any]) -> Done:
    """Approve invoices under 1000."""
    return Done({"approved": ctx.state["amount"] < 1000})


def intake_variant(
    keep: Callable[[str], bool] = lambda name: True,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    extra: tuple[str, ...] = (),
) -> Pipeline[Any]:
    """document-intake with the phases ``keep`` keeps, ``settings`` changed by phase, and ``extra`` phases after."""
    variant: Pipeline[Any] = Pipeline(INTAKE.name, state=INTAKE.state_model)
    for name in INTAKE.phase_names:
        phase = INTAKE.get_phase(name)
        if not keep(name):
            continue
        declared = {
            "timeout": phase.function.timeout,
            "memory": phase.function.memory,
            "environment": phase.function.environment,
            "statements": phase.function.statements,
            **(settings or {}).get(name, {}),
        }
        variant.phase(name=name, retry=phase.retry, **declared)(phase.run)
    for name in extra:
        variant.phase(name=name)(publish_review)
    return variant


TWO_PIPELINES = PipelineRegistry([*PIPELINES, invoice_review])
WITH_ANOTHER_PHASE = PipelineRegistry([intake_variant(extra=("archive",))])
WITHOUT_PUBLISH = PipelineRegistry([intake_variant(keep=lambda name: name != "publish")])
LONGER_EXTRACT = PipelineRegistry([intake_variant(settings={"extract": {"timeout": 600, "memory": 2048}})])
OTHER_FETCH_ENVIRONMENT = PipelineRegistry(
    [intake_variant(settings={"fetch": {"environment": {"DOCUMENTS_BUCKET": "a-fixed-bucket"}, "statements": ()}})]
)
