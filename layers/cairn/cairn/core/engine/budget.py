"""The budget check of a claimed run (:mod:`cairn.core.budgets`): before its phase runs, and the stop it makes."""

from __future__ import annotations

from ..budgets import expected_cost, refused, spent, stop_failure, stop_usage
from ..cost import cost_of
from ..history_pages import VIEW_HISTORY
from ..metering import budgeted_usage
from ..models import Job
from ..prices import PriceTable, load_prices
from ..transitions import merge_usage
from .claimed_run import ClaimedRun
from .writes import logger


def prices_for_budget(pipeline_budget: float | None, prices: PriceTable | None) -> PriceTable | None:
    """The prices a budgeted pipeline's runs are checked at (``prices``, else the environment's); None: no budget.

    Read before the claim: a bad ``CAIRN_PRICES`` is refused before anything is written.
    """
    if pipeline_budget is None:
        return None
    return prices if prices is not None else load_prices()


def over_budget(run: ClaimedRun, prices: PriceTable | None) -> Job | None:
    """Stop the job in ``error`` when its phase would pass its budget; None: it may run (or has no budget).

    The job's cost counts what the run's next write adds too: the usage of the map's items, joined by
    the phase after the map (:func:`cairn.core.engine.map_items.join_map`), is counted before that phase runs.
    """
    budget = run.pipeline.max_cost_usd
    if budget is None or prices is None:
        return None
    job = run.job
    usage = merge_usage(job.usage, run.journal.peek().usage)
    cost_usd = cost_of(budgeted_usage(usage), prices).exact  # waiting for the owner's share is not counted
    view = run.storage.get_job_view(job.job_id, history=VIEW_HISTORY)
    records = view.job.phases if view is not None else job.phases
    expected = expected_cost(records, run.phase_name, prices)
    error = refused(
        job.job_id, budget=budget, spent_usd=spent(usage, cost_usd), expected_usd=expected, phase=run.phase_name
    )
    if error is None:
        return None
    run.entry(error.message, level="error", kind="error")
    logger.error("Job %s: %s", job.job_id, error.message)
    run.journal.add_usage(stop_usage(usage, cost_usd))
    return run.commit("error", error=error.message, failure=stop_failure())
