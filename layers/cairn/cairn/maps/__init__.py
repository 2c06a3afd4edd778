"""Maps: a phase returns ``Map(items, phase, then)``; ``phase`` runs once per item, then ``then`` with the results.

The rules of the items (their records, claims and hand-off) are :mod:`.fan_out`; starting a map, running
an item and taking up the results are :mod:`.map_items`. Maps plug into the engine as the run-level
features do (:mod:`cairn.core.run_features`): importing this package registers the map's hooks (before
the other features', so that ``then`` waits for its items before the guard or the budget counts it) and
the item runner that an item advance calls. :mod:`cairn` imports it. The engine imports none of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import InvalidInputError
from ..core.models import Job
from ..core.outcomes import Map
from ..core.pipeline import Pipeline
from ..core.run_features import Run, RunHooks, register_item_runner, register_run_feature
from ..core.scheduler_port import Scheduler
from .map_items import advance_item, items_unfinished, start_map


@dataclass(frozen=True)
class Maps:
    """The map as a run-level feature: ``then`` waits for its items, and a phase that returns a Map starts one."""

    name: str = "maps"

    def open(self, pipeline: Pipeline[Any]) -> RunHooks:
        """The map hooks of one run (they read nothing before the claim)."""
        return MapHooks()


class MapHooks(RunHooks):
    """Takes up a finished map's results before ``then`` runs (or gives the claim back), and starts maps."""

    def before_phase(self, run: Run, scheduler: Scheduler) -> Job | None:
        return items_unfinished(run, scheduler)

    def outcome(self, run: Run, outcome: object, scheduler: Scheduler) -> Job | None:
        if not isinstance(outcome, Map):
            return None
        try:
            return start_map(run, outcome, scheduler)
        except InvalidInputError as exc:
            return run.fail(f'Phase "{run.phase_name}" returned a map that cannot run: {exc}')


register_run_feature(Maps())
register_item_runner(advance_item)
