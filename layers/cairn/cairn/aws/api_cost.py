"""A job's cost as the API shows it (``cost`` on the job view; :mod:`cairn.features.cost`)."""

from __future__ import annotations

import logging
import math

from pydantic import Field

from ..core.errors import StorageError
from ..core.models import Job, JobPage, WireModel
from ..core.storage_port import Storage
from ..features.cost import cost_of, job_cost
from ..features.prices import PriceTable

SORT_BY_COST = (
    "cost: every job the filter lets through, dearest first, paged by cursor (page 2 starts where page 1 "
    "ended), each at its cost when its status last changed (a running job's place is a lower bound; its view "
    "has the cost now). Read from the CostListing index, no job read: about 2 read units a page of 50 without "
    "a filter; a filter reads the entries it passes over too (one job in n matching: about n times that, at "
    "most some 160 read units, then a shorter page with a cursor). Jobs whose status has not changed since "
    "the index was added are not in this order. Without sort, each job's cost so far is read with the page "
    "(half a read unit a job)."
)
"""What ``?sort=`` does (the listing's OpenAPI description)."""

logger = logging.getLogger(__name__)


def with_costs(page: JobPage, storage: Storage, prices: PriceTable) -> JobPage:
    """The page with each job's cost so far (``costUsd``), priced as its view prices it: from its usage counters,
    read for the whole page at once (:meth:`~cairn.core.storage_port.Storage.job_usages`), never its view. A job
    whose counters cannot be read keeps no cost (the dashboard shows "-"); so does every job of the page when the
    read fails (the page is listed all the same)."""
    try:
        usages = storage.job_usages([summary.job_id for summary in page.jobs if not summary.corrupt])
    except StorageError as exc:
        logger.warning("Listed a page without its jobs' costs: their usage could not be read: %s", exc)
        return page
    costs = {job_id: cost_of(usage, prices).usd for job_id, usage in usages.items()}
    costed = [
        summary.model_copy(update={"cost_usd": costs[summary.job_id]})
        if math.isfinite(costs.get(summary.job_id, math.nan))
        else summary
        for summary in page.jobs
    ]
    return page.model_copy(update={"jobs": costed})


class CostLineView(WireModel):
    """One meter of a job's cost: the quantity used, the price of one unit and what it came to (USD)."""

    meter: str
    quantity: float
    price: float
    usd: float


class CostView(WireModel):
    """What a job has cost so far, in US dollars, at the deployment's price table (its region and date)."""

    usd: float = Field(description="The job's cost so far: each priced meter of its usage times its price")
    region: str = Field(description="The region of the prices used")
    prices_date: str = Field(description="When the prices used were taken (YYYY-MM-DD)")
    currency: str = "USD"
    lines: list[CostLineView] = Field(default_factory=list, description="The cost meter by meter")
    unpriced: list[str] = Field(
        default_factory=list, description="Meters the job used that the table has no price for (a model id): cost 0"
    )
    phases: list[float] = Field(
        default_factory=list,
        description="What each phase run of the view's phases cost (USD), in the same order; 0 for a run recorded "
        "before runs were metered",
    )

    @classmethod
    def of(cls, job: Job, prices: PriceTable) -> CostView:
        """The cost of ``job`` (with the phase records it was read with) at ``prices``."""
        cost = job_cost(job, prices)
        return cls(
            usd=cost.usd,
            region=prices.region,
            prices_date=prices.date,
            currency=prices.currency,
            lines=[
                CostLineView(meter=line.meter, quantity=line.quantity, price=line.price, usd=line.usd)
                for line in cost.cost.lines
            ],
            unpriced=list(cost.cost.unpriced),
            phases=[run.cost.usd for run in cost.phases],
        )
