"""A job's cost as the API shows it (``cost`` on the job view; :mod:`cairn.features.cost`)."""

from __future__ import annotations

from pydantic import Field

from ..app import Cairn
from ..core.models import Job, JobPage, WireModel
from ..features.cost import cost_of, job_cost
from ..features.prices import PriceTable

SORT_BY_COST = (
    "cost: the page's jobs with their cost so far (costUsd), dearest first; each job of the page is read for it, "
    "and the page is sorted, not the whole listing"
)
"""What ``?sort=`` does (the listing's OpenAPI description)."""


def sorted_by_cost(page: JobPage, jobs: Cairn) -> JobPage:
    """``GET /jobs?sort=cost``: the page's jobs with their cost, dearest first (one small read per job of the page).

    The listing index holds no usage (a phase transition never writes it), so each job of the page is read as
    it is now; the page is sorted, not the whole listing: ``cairn jobs list --all --sort cost`` sorts every page.
    """
    costed = []
    for summary in page.jobs:
        view = jobs.storage.get_job_view(summary.job_id, history=1)
        usd = cost_of(view.job.usage, jobs.prices).usd if view is not None else 0.0
        costed.append(summary.model_copy(update={"cost_usd": usd}))
    costed.sort(key=lambda summary: -(summary.cost_usd or 0.0))
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
