"""A job's budget: ``Pipeline(max_cost_usd=...)``, the most a job may cost before it is stopped.

The rule (applied by :mod:`cairn.features.budget` before a claimed run executes its phase): the
job's cost so far plus what that phase is expected to cost must stay within the budget. The expected
cost is what the phase's newest run in this job cost (0 when it has not run yet in the job's recent
history; a budget stop did not run it). Else the phase does not run: the job stops in ``error``, the
message naming the budget, the cost so far and the phase not started; the stop's phase record names
the failure :class:`~cairn.core.errors.BudgetExceededError`.

The figures are compared exactly (:mod:`cairn.features.cost`): $0.20 spent and $0.10 expected fit a
budget of $0.30. The message shows each amount with as many decimals as it takes for what it says
of them to be true of the figures shown.

A retry after a budget stop: the budget counts from that stop (its commit records the cost it
stopped at, under :data:`BUDGET_STOP`), so the retry may spend the whole budget again, while the
job's cost keeps counting everything the job ever cost. Any other (re)start continues the count.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, localcontext

from ..core.errors import BudgetExceededError
from ..core.models import Failure, PhaseRecord
from .cost import EXACT, ZERO, cost_of, exact, format_usd
from .prices import PriceTable

BUDGET_STOP = "usd_at_budget_stop"
"""The usage counter set to the job's cost (USD) when the budget last stopped it: the budget counts from there."""
STOP_TYPE = f"{BudgetExceededError.__module__}.{BudgetExceededError.__qualname__}"
"""The failure type a budget stop's phase record names: a run that did not run its phase."""


def spent(usage: Mapping[str, float], cost_usd: Decimal) -> Decimal:
    """What the budget counts of a job that cost ``cost_usd``: all of it, or what it cost since its last budget stop."""
    with localcontext(EXACT):
        since = cost_usd - exact(usage.get(BUDGET_STOP, 0.0))
        return ZERO if since < ZERO else since


def expected_cost(records: Sequence[PhaseRecord], phase: str, prices: PriceTable) -> Decimal:
    """What the newest run of ``phase`` in ``records`` cost, exactly: 0 when it has not run (a budget stop did not)."""
    for record in reversed(records):
        if record.phase == phase and (record.failure is None or record.failure.type != STOP_TYPE):
            return cost_of(record.usage, prices).exact
    return ZERO


def refused(
    job_id: str, *, budget: float, spent_usd: Decimal, expected_usd: Decimal, phase: str
) -> BudgetExceededError | None:
    """Why the job may not run ``phase`` (it would pass its budget, or has spent it all); None: it may."""
    limit = exact(budget)
    with localcontext(EXACT):  # exact sums; a cost that is not a number fits no budget
        if spent_usd + expected_usd <= limit and spent_usd < limit:
            return None
        passes = spent_usd + expected_usd > limit
    if passes:
        cost, expected, most = _shown((spent_usd, expected_usd, limit), lambda s, e, b: s + e > b)
        why = f"it has cost {cost} so far and the phase is expected to cost {expected}, which would pass its budget"
    else:
        cost, _, most = _shown((spent_usd, expected_usd, limit), lambda s, e, b: s >= b)
        why = f"it has cost {cost} so far, all of its budget"
    message = (
        f'Job "{job_id}" stopped before phase "{phase}": {why} of {most} (Pipeline(max_cost_usd={budget!r})). '
        f'Phase "{phase}" was not started. Retry the job to give it its whole budget again, or raise the budget first.'
    )
    return BudgetExceededError(job_id, budget, float(spent_usd), phase, message)


def _shown(
    amounts: tuple[Decimal, Decimal, Decimal], holds: Callable[[Decimal, Decimal, Decimal], bool]
) -> tuple[str, str, str]:
    """``amounts`` as dollars, with the fewest extra decimals that keep ``holds`` true of the figures shown.

    With as many decimals as the amounts have, each is shown as it is: a true statement stays true.
    """
    shown = _texts(amounts, 0)
    for extra in range(max(_decimals(amount) for amount in amounts) + 1):
        shown = _texts(amounts, extra)
        with localcontext(EXACT):
            if holds(*(Decimal(text.removeprefix("$").replace(",", "")) for text in shown)):
                break
    return shown


def _decimals(amount: Decimal) -> int:
    """How many decimals ``amount`` has (0 for a whole number, or one that is not finite)."""
    exponent = amount.as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def _texts(amounts: tuple[Decimal, Decimal, Decimal], extra: int) -> tuple[str, str, str]:
    first, second, third = (format_usd(amount, extra=extra) for amount in amounts)
    return first, second, third


def stop_failure() -> Failure:
    """The failure a budget stop's phase record keeps (:data:`STOP_TYPE`)."""
    return Failure(type=STOP_TYPE)


def stop_usage(usage: Mapping[str, float], cost_usd: Decimal) -> dict[str, float]:
    """The usage a budget stop adds: :data:`BUDGET_STOP` raised to the job's cost, so a retry counts from here.

    The counter is a float sum, read back to the digits a float holds (:func:`cairn.features.cost.exact`).
    """
    return {BUDGET_STOP: float(cost_usd) - float(usage.get(BUDGET_STOP, 0.0))}
