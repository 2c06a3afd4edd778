"""What a job costs: its metered usage times the price table's prices, in US dollars, per job and per phase run.

A job's ``usage`` sums what every write that committed it metered (:mod:`cairn.features.metering`); each
phase record keeps what its own run metered (``PhaseRecord.usage``). A meter the table prices costs
``quantity x price``; a model's tokens without a price cost 0 and are listed as unpriced; counters
that are not money (``transitions``, ``tool_calls``, the token totals) are left out.

The sums are exact: each quantity and price is taken as the decimal its float stands for (a float
holds 15 significant digits: ``0.1`` is one tenth, and a counter that binary floats summed to
``0.30000000000000004`` is 0.3), multiplied and added in decimal arithmetic without rounding
(:data:`EXACT`), so $0.20 and $0.10 make $0.30. ``Cost.exact`` keeps that figure (what a budget
compares); ``Cost.usd`` is the float nearest it.

A store keeps a job's cost as a figure (:func:`stored_cost`: dollars to 34 digits at its environment's
prices) that a listing shows and sorts by without reading the job.
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from functools import cache, reduce

from ..core.errors import ConfigurationError
from ..core.models import Job, PhaseRecord
from ..core.settings import PRICE_REGION, PRICES, price_settings
from .prices import PriceTable, is_metered, load_prices

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CostLine:
    """One meter of a cost: how much was used, at what price per unit, and what it came to (USD)."""

    meter: str
    quantity: float
    price: float
    usd: float


EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN, traps=[])
"""Decimal arithmetic that never rounds a sum or a product (and, as floats do, gives NaN rather than raise)."""
ZERO = Decimal(0)
FLOAT_DIGITS = sys.float_info.dig
"""The significant decimal digits a float holds (15): past them, a float sum's last bits are noise, not money."""


def exact(value: float | Decimal) -> Decimal:
    """A figure as the decimal it stands for: an int as it is, a float to the 15 significant digits it holds."""
    if isinstance(value, Decimal | int):
        return Decimal(value)
    return Decimal(f"{float(value):.{FLOAT_DIGITS}g}")


def total(amounts: Sequence[Decimal]) -> Decimal:
    """The exact sum of ``amounts``."""
    return reduce(EXACT.add, amounts, ZERO)


@dataclass(frozen=True)
class Cost:
    """A cost in US dollars, meter by meter; ``unpriced`` names the meters used that the table has no price for.

    ``exact`` is the cost as an exact decimal (what a budget compares); ``usd`` the float nearest it.
    """

    usd: float
    lines: tuple[CostLine, ...] = ()
    unpriced: tuple[str, ...] = ()
    exact: Decimal = ZERO


@dataclass(frozen=True)
class PhaseCost:
    """What one phase run cost: the phase, its attempt, when it started, and its cost."""

    phase: str
    attempt: int
    started_at: int
    cost: Cost


@dataclass(frozen=True)
class JobCost:
    """A job's cost at a price table (its region and date): in all, meter by meter, and per phase run."""

    job_id: str
    cost: Cost
    phases: tuple[PhaseCost, ...]
    prices: PriceTable

    @property
    def usd(self) -> float:
        """The job's cost in US dollars."""
        return self.cost.usd

    def to_json(self) -> dict[str, object]:
        """The cost as the API and the CLI show it."""
        return {
            "usd": self.cost.usd,
            "region": self.prices.region,
            "pricesDate": self.prices.date,
            "currency": self.prices.currency,
            "lines": [
                {"meter": line.meter, "quantity": line.quantity, "price": line.price, "usd": line.usd}
                for line in self.cost.lines
            ],
            "unpriced": list(self.cost.unpriced),
            "phases": [
                {"phase": run.phase, "attempt": run.attempt, "startedAt": run.started_at, "usd": run.cost.usd}
                for run in self.phases
            ],
        }


def format_usd(usd: float | Decimal, *, extra: int = 0) -> str:
    """Dollars as shown: cents from a dollar up (``$1.25``), six decimals below (``$0.000415``); ``extra`` more."""
    places = (2 if math.isfinite(usd) and usd >= 1 else 6) + extra
    return f"${usd:,.{places}f}"


def cost_of(usage: Mapping[str, float], prices: PriceTable) -> Cost:
    """The cost of ``usage`` at ``prices``: the exact sum of each priced meter's quantity times its price."""
    lines: list[CostLine] = []
    amounts: list[Decimal] = []
    unpriced: list[str] = []
    for meter in sorted(usage):
        quantity = usage[meter]
        price = prices.price(meter)
        if price is None:
            if is_metered(meter) and quantity:
                unpriced.append(meter)
            continue
        amount = EXACT.multiply(exact(quantity), exact(price))
        amounts.append(amount)
        lines.append(CostLine(meter, float(quantity), price, float(amount)))
    cost = total(amounts)
    return Cost(float(cost), tuple(lines), tuple(unpriced), cost)


def phase_costs(records: Sequence[PhaseRecord], prices: PriceTable) -> tuple[PhaseCost, ...]:
    """The cost of each phase run in ``records`` (a run recorded before runs were metered costs 0)."""
    return tuple(
        PhaseCost(record.phase, record.attempt, record.started_at, cost_of(record.usage, prices)) for record in records
    )


def job_cost(job: Job, prices: PriceTable) -> JobCost:
    """The job's cost: its usage at ``prices``, with the cost of each phase run its record holds."""
    return JobCost(job.job_id, cost_of(job.usage, prices), phase_costs(job.phases, prices), prices)


FIGURE = Context(prec=34, traps=[])
"""A stored cost figure's digits: 34 significant (a DynamoDB number holds 38), so it reads back as the same float."""
FIGURE_PLACES = Decimal("1e-36")
"""The smallest step of a stored cost figure (dollars): its digits after the point stay within a number's 38."""


def cost_figure(usage: Mapping[str, float], prices: PriceTable) -> Decimal:
    """The cost of ``usage`` at ``prices`` as a stored figure, in dollars (what a listing shows and sorts by):
    :func:`cost_of`'s exact sum to 34 significant digits (steps of :data:`FIGURE_PLACES`), so that its float is
    the cost's; a sum that is not a finite positive number (a counter that is not) is 0."""
    cost = cost_of(usage, prices).exact
    if not cost.is_finite() or cost <= 0:
        return ZERO
    figure = FIGURE.plus(cost)
    if figure.as_tuple().exponent < FIGURE_PLACES.as_tuple().exponent:  # type: ignore[operator]
        figure = figure.quantize(FIGURE_PLACES, context=EXACT)
    return figure


def plain_number(figure: Decimal) -> str:
    """A figure as a number's text without an exponent (``0.0000052875``, not ``5.2875E-6``): how a cursor holds it."""
    return format(figure, "f")


@cache
def _environment_prices(overrides_file: str | None, region: str | None) -> PriceTable | None:
    """The price table of these settings (None: it cannot be loaded; said once)."""
    try:
        return load_prices(environ={PRICES: overrides_file or "", PRICE_REGION: region or ""})
    except ConfigurationError as exc:
        logger.warning("Jobs are stored without their cost figure: the price table cannot be loaded: %s", exc)
        return None


def stored_cost(usage: Mapping[str, float]) -> Decimal | None:
    """The cost figure a store keeps for ``usage``: at the price table of the store's environment
    (``CAIRN_PRICES``, ``CAIRN_PRICE_REGION``: in a deployment the API's and the workers' alike); None when that
    table cannot be loaded."""
    prices = _environment_prices(*price_settings(None))
    return None if prices is None else cost_figure(usage, prices)
