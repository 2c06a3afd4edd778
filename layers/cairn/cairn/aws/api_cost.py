"""A job's cost as the API shows it (``cost`` on the job view; :mod:`cairn.core.cost`)."""

from __future__ import annotations

from pydantic import Field

from ..core.cost import job_cost
from ..core.models import Job, WireModel
from ..core.prices import PriceTable


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
