"""A job's budget: ``Pipeline(max_cost_usd=...)``, the most a job may cost before it is stopped.

The rule (applied by :mod:`cairn.core.engine.budget` before a claimed run executes its phase): the
job's cost so far plus what that phase is expected to cost must stay within the budget. The expected
cost is what the phase's newest run in this job cost (0 when it has not run yet in the job's recent
history). Else the phase does not run: the job stops in ``error``, the message naming the budget,
the cost so far and the phase not started.

A retry after a budget stop: the budget counts from that stop (its commit records the cost it
stopped at, under :data:`BUDGET_STOP`), so the retry may spend the whole budget again, while the
job's cost keeps counting everything the job ever cost. Any other (re)start continues the count.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .cost import format_usd
from .errors import BudgetExceededError, PipelineError

BUDGET_STOP = "usd_at_budget_stop"
"""The usage counter set to the job's cost (USD) when the budget last stopped it: the budget counts from there."""


def checked_budget(pipeline: str, value: Any) -> float | None:
    """``max_cost_usd`` checked: a positive, finite number of dollars, or None (no budget)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise PipelineError(f"Pipeline {pipeline!r}: max_cost_usd must be a positive number of dollars, got {value!r}")
    return float(value)


def spent(usage: Mapping[str, float], cost_usd: float) -> float:
    """What the budget counts of a job that cost ``cost_usd``: all of it, or what it cost since its last budget stop."""
    return max(0.0, cost_usd - usage.get(BUDGET_STOP, 0.0))


def refused(
    job_id: str, *, budget: float, spent_usd: float, expected_usd: float, phase: str
) -> BudgetExceededError | None:
    """Why the job may not run ``phase`` (it would pass its budget); None: it may."""
    if spent_usd + expected_usd <= budget and spent_usd < budget:
        return None
    message = (
        f'Job "{job_id}" stopped before phase "{phase}": it has cost {format_usd(spent_usd)} so far and the phase '
        f"is expected to cost {format_usd(expected_usd)}, which would pass its budget of {format_usd(budget)} "
        f'(Pipeline(max_cost_usd={budget:g})). Phase "{phase}" was not started. Retry the job to give it its '
        "whole budget again, or raise the budget first."
    )
    return BudgetExceededError(job_id, budget, spent_usd, phase, message)


def stop_usage(usage: Mapping[str, float], cost_usd: float) -> dict[str, float]:
    """The usage a budget stop adds: :data:`BUDGET_STOP` raised to the job's cost, so a retry counts from here."""
    return {BUDGET_STOP: cost_usd - usage.get(BUDGET_STOP, 0.0)}
