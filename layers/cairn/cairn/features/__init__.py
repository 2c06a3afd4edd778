"""Run-level features: what happens around a claimed run, plugged into the engine (:mod:`cairn.core.run_features`).

Importing this package registers them, in the order they run at each point, after the maps' hooks
(:mod:`cairn.maps`, imported first: ``then`` takes up its items before any feature counts it): the fair share per owner
(:mod:`.owner_share`), the transition guard (:mod:`.transition_guard`), the budget (:mod:`.budget`,
priced by :mod:`.cost` and :mod:`.prices`), metering (:mod:`.metering`) and lessons (:mod:`.lessons`).
:mod:`cairn` imports it, so every engine call runs with them. The engine imports none of them.
"""

from __future__ import annotations

from ..core.run_features import RunFeature, register_run_feature, run_features
from ..maps import Maps  # noqa: F401  (registered on import, first: a map's then takes up its items before features count it)
from .budget import Budget
from .lessons import Lessons
from .metering import Metering
from .owner_share import OwnerShare
from .prices import PriceTable
from .transition_guard import TransitionGuard

DEFAULT_FEATURES: tuple[RunFeature, ...] = (OwnerShare(), Metering(), TransitionGuard(), Budget(), Lessons())
"""The features every claimed run has, in order: the share is taken first, the guard stops before the budget."""

for _feature in DEFAULT_FEATURES:
    register_run_feature(_feature)


def priced_features(prices: PriceTable | None) -> tuple[RunFeature, ...]:
    """The registered features, the budget checking at ``prices`` (None: the environment's)."""
    return tuple(Budget(prices) if isinstance(feature, Budget) else feature for feature in run_features())
