"""The budget as a run-level feature (:mod:`cairn.core.run_features`): the check before a phase runs, and the stop.

The rule is :mod:`cairn.features.budgets`; this module applies it to a claimed run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..core.history_pages import VIEW_HISTORY
from ..core.models import Job
from ..core.pipeline import Pipeline
from ..core.run_features import Run, RunHooks
from ..core.scheduler_port import Scheduler
from ..core.transitions import merge_usage
from .budgets import expected_cost, refused, spent, stop_failure, stop_usage
from .cost import cost_of
from .metering import budgeted_usage
from .prices import PriceTable, load_prices

logger = logging.getLogger("cairn")


@dataclass(frozen=True)
class Budget:
    """Stops a job of a budgeted pipeline before a phase that would pass its budget.

    ``prices``: what the runs are checked at (default: the environment's, :func:`~cairn.features.prices.load_prices`).
    """

    prices: PriceTable | None = None
    name: str = "budget"

    def open(self, pipeline: Pipeline[Any]) -> RunHooks | None:
        """The check for one run (None: no budget); prices read now, so a bad ``CAIRN_PRICES`` writes nothing."""
        if pipeline.max_cost_usd is None:
            return None
        return BudgetHooks(pipeline.max_cost_usd, self.prices if self.prices is not None else load_prices())


@dataclass(frozen=True)
class BudgetHooks(RunHooks):
    """The budget check of one run."""

    budget: float
    prices: PriceTable

    def before_phase(self, run: Run, scheduler: Scheduler) -> Job | None:
        """Stop the job in ``error`` when its phase would pass its budget; None: it may run.

        The job's cost counts what the run's next write adds too: the usage of the map's items, joined by
        the phase after the map (:func:`cairn.maps.map_items.join_map`), is counted before that phase runs.
        """
        job = run.job
        usage = merge_usage(job.usage, run.journal.peek().usage)
        cost_usd = cost_of(budgeted_usage(usage), self.prices).exact  # waiting for the owner's share is not counted
        view = run.storage.get_job_view(job.job_id, history=VIEW_HISTORY)
        records = view.job.phases if view is not None else job.phases
        expected = expected_cost(records, run.phase_name, self.prices)
        error = refused(
            job.job_id,
            budget=self.budget,
            spent_usd=spent(usage, cost_usd),
            expected_usd=expected,
            phase=run.phase_name,
        )
        if error is None:
            return None
        logger.error("Job %s: %s", job.job_id, error.message)
        run.journal.add_usage(stop_usage(usage, cost_usd))
        return run.fail(error.message, failure=stop_failure())
