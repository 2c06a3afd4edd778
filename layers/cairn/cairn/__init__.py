"""cairn: crash-safe, multi-phase pipelines with checkpoints.

The public API for a pipeline's author: the pipeline and its phases' outcomes, the front door (``Cairn``), the
stores and the scheduler a user picks, and the errors a caller catches. What an adapter's author needs lives in
:mod:`cairn.adapters`. The core imports neither boto3 nor botocore.

Each name is imported from its module on first use (PEP 562): every module of the package imports this
one first, so a Lambda entry point (which imports ``cairn.aws.phase_handler``, say) loads only the modules
it uses, not the whole API. ``DynamoDBStorage`` and ``FileStorage`` are imported on first use too, so the
core never loads boto3 by itself, and a Lambda function (which stores jobs in DynamoDB) never loads
filelock and asyncio. A name this package exported before it moved (to :mod:`cairn.adapters` or to the core)
still imports from here for one release, with a DeprecationWarning naming its new home.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings
from importlib.machinery import ModuleSpec
from typing import TYPE_CHECKING, Any

# First: a layer built for another architecture or runtime stops here, saying so (before a compiled dependency fails).
from . import layer_architecture, layer_runtime  # noqa: F401

# isort: split
from . import (
    agents,  # noqa: F401  (importing it registers the agent and plan phase kinds; it loads little)
    features,  # noqa: F401  (importing it registers the run-level features: the guard, the budget, ...)
)

if TYPE_CHECKING:
    from .app import Cairn as Cairn
    from .aws.dynamodb import DynamoDBStorage as DynamoDBStorage
    from .core.context import PhaseContext as PhaseContext
    from .core.engine import advance_phase as advance_phase
    from .core.engine import resolve_start_phase as resolve_start_phase
    from .core.engine import run_pipeline as run_pipeline
    from .core.errors import CairnError as CairnError
    from .core.errors import ConfigurationError as ConfigurationError
    from .core.errors import InvalidInputError as InvalidInputError
    from .core.errors import JobExistsError as JobExistsError
    from .core.errors import JobNotFoundError as JobNotFoundError
    from .core.errors import PhaseError as PhaseError
    from .core.errors import TransitionRefusedError as TransitionRefusedError
    from .core.models import Job as Job
    from .core.models import JobStatus as JobStatus
    from .core.models import RetryMode as RetryMode
    from .core.outcomes import Done as Done
    from .core.outcomes import Fail as Fail
    from .core.outcomes import Map as Map
    from .core.outcomes import Next as Next
    from .core.outcomes import Sleep as Sleep
    from .core.outcomes import WaitFor as WaitFor
    from .core.pipeline import Pipeline as Pipeline
    from .core.retry import RetryPolicy as RetryPolicy
    from .scheduling.inline import InlineScheduler as InlineScheduler
    from .storage.file import FileStorage as FileStorage
    from .storage.memory import MemoryStorage as MemoryStorage

#: The module of each name this package exports (imported on first use): the one table of the public names.
_EXPORTS = {
    "Cairn": ".app",
    "Pipeline": ".core.pipeline",
    "PhaseContext": ".core.context",
    "Done": ".core.outcomes",
    "Fail": ".core.outcomes",
    "Map": ".core.outcomes",
    "Next": ".core.outcomes",
    "Sleep": ".core.outcomes",
    "WaitFor": ".core.outcomes",
    "RetryPolicy": ".core.retry",
    "RetryMode": ".core.models",
    "Job": ".core.models",
    "JobStatus": ".core.models",
    "MemoryStorage": ".storage.memory",
    "FileStorage": ".storage.file",
    "DynamoDBStorage": ".aws.dynamodb",
    "InlineScheduler": ".scheduling.inline",
    "run_pipeline": ".core.engine",
    "advance_phase": ".core.engine",
    "resolve_start_phase": ".core.engine",
    "CairnError": ".core.errors",
    "ConfigurationError": ".core.errors",
    "InvalidInputError": ".core.errors",
    "JobNotFoundError": ".core.errors",
    "JobExistsError": ".core.errors",
    "TransitionRefusedError": ".core.errors",
    "PhaseError": ".core.errors",
}

#: Names this package exported before the previous release, and where each lives now (imported with a warning).
_MOVED = {
    "Checkpoint": "cairn.adapters",
    "Claim": "cairn.adapters",
    "ClaimLostError": "cairn.adapters",
    "Clock": "cairn.adapters",
    "Commit": "cairn.adapters",
    "CorruptJobError": "cairn.adapters",
    "CrashReport": "cairn.adapters",
    "DocumentStorage": "cairn.adapters",
    "FanOut": "cairn.adapters",
    "Fence": "cairn.adapters",
    "HistoryItem": "cairn.adapters",
    "ItemScheduler": "cairn.adapters",
    "Journal": "cairn.adapters",
    "Lesson": "cairn.adapters",
    "LogEntry": "cairn.adapters",
    "MapItem": "cairn.adapters",
    "MapMark": "cairn.adapters",
    "MapRecord": "cairn.adapters",
    "ModelError": "cairn.core.errors",
    "PhaseRecord": "cairn.adapters",
    "PipelineError": "cairn.core.errors",
    "PipelineRegistry": "cairn.core.registry",
    "Route": "cairn.adapters",
    "Save": "cairn.adapters",
    "Scheduler": "cairn.adapters",
    "SchedulingError": "cairn.adapters",
    "Signal": "cairn.adapters",
    "SignalDelivery": "cairn.adapters",
    "StartJob": "cairn.adapters",
    "StateTooLargeError": "cairn.adapters",
    "Storage": "cairn.adapters",
    "StorageError": "cairn.adapters",
    "StoredLesson": "cairn.adapters",
    "StoredMap": "cairn.adapters",
    "UnknownPhaseError": "cairn.core.errors",
    "VersionConflict": "cairn.adapters",
    "WaitExpiry": "cairn.adapters",
    "Written": "cairn.adapters",
    "cancel_job": "cairn.core.engine",
    "pause_job": "cairn.core.engine",
    "signal_job": "cairn.core.engine",
}

__all__ = sorted(_EXPORTS)

#: Modules that moved in this release (the old path the docs showed, and the others of the same move): each
#: still imports by its old path, with a DeprecationWarning naming its new home, for one release.
_MOVED_MODULES = {
    "cairn.core.budgets": "cairn.features.budgets",
    "cairn.core.cost": "cairn.features.cost",
    "cairn.core.fan_out": "cairn.maps.fan_out",
    "cairn.core.job_file": "cairn.storage.job_file",
    "cairn.core.job_loading": "cairn.storage.job_loading",
    "cairn.core.listing": "cairn.aws.listing",
    "cairn.core.metering": "cairn.features.metering",
    "cairn.core.owner_share": "cairn.features.owner_share",
    "cairn.core.prices": "cairn.features.prices",
    "cairn.core.recovery": "cairn.scheduling.recovery",
    "cairn.core.state_diff": "cairn.aws.state_diff",
    "cairn.core.transition_guard": "cairn.features.transition_guard",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a moved module by its old path: a module that hands on every name of its new home, with a warning."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname in _MOVED_MODULES else None

    def create_module(self, spec: ModuleSpec) -> types.ModuleType:
        home = _MOVED_MODULES[spec.name]
        warnings.warn(
            f"'{spec.name}' is deprecated: import {home} (this path goes in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        moved = importlib.import_module(home)
        alias = types.ModuleType(spec.name, moved.__doc__)
        alias.__getattr__ = functools.partial(getattr, moved)  # type: ignore[method-assign]
        return alias

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the module hands on its new home's names."""


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())


def __getattr__(name: str) -> Any:
    """A name of :data:`__all__`, imported from its module on first use and kept; a moved name, with a warning."""
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value
    home = _MOVED.get(name)
    if home is not None:
        warnings.warn(
            f"'from cairn import {name}' is deprecated: import it from {home} (this path goes in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home), name)
    raise AttributeError(f"module 'cairn' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
