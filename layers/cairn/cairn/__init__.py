"""cairn: crash-safe, multi-phase pipelines with checkpoints.

The public API. The core imports neither boto3 nor botocore.

Each name is imported from its module on first use (PEP 562): every module of the package imports this
one first, so a Lambda entry point (which imports ``cairn.aws.phase_handler``, say) loads only the modules
it uses, not the whole API. ``DynamoDBStorage`` and ``FileStorage`` are imported on first use too, so the
core never loads boto3 by itself, and a Lambda function (which stores jobs in DynamoDB) never loads
filelock and asyncio.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import agents  # noqa: F401  (importing it registers the agent and plan phase kinds; it loads little)

if TYPE_CHECKING:
    from .app import Cairn
    from .aws.dynamodb import DynamoDBStorage
    from .core.clock import Clock
    from .core.context import PhaseContext
    from .core.engine import advance_phase, cancel_job, pause_job, resolve_start_phase, run_pipeline, signal_job
    from .core.errors import (
        CairnError,
        ClaimLostError,
        ConfigurationError,
        CorruptJobError,
        InvalidInputError,
        JobExistsError,
        JobNotFoundError,
        ModelError,
        PhaseError,
        PipelineError,
        SchedulingError,
        StateTooLargeError,
        StorageError,
        TransitionRefusedError,
        UnknownPhaseError,
        VersionConflict,
    )
    from .core.lessons import StoredLesson
    from .core.models import (
        Checkpoint,
        FanOut,
        HistoryItem,
        Job,
        JobStatus,
        Lesson,
        LogEntry,
        MapItem,
        MapMark,
        MapRecord,
        PhaseRecord,
        RetryMode,
        Signal,
    )
    from .core.outcomes import Done, Fail, Map, Next, Sleep, WaitFor
    from .core.pipeline import Pipeline
    from .core.registry import PipelineRegistry
    from .core.retry import RetryPolicy
    from .core.scheduler_port import ItemScheduler, Scheduler
    from .core.storage_port import Route, Storage
    from .core.transitions import (
        Claim,
        Commit,
        CrashReport,
        Fence,
        Journal,
        Save,
        SignalDelivery,
        StartJob,
        WaitExpiry,
        Written,
    )
    from .scheduling.inline import InlineScheduler
    from .storage.document import DocumentStorage, StoredMap
    from .storage.file import FileStorage
    from .storage.memory import MemoryStorage

#: The module of each name this package exports (imported on first use).
_EXPORTS = {
    "Cairn": ".app",
    "DynamoDBStorage": ".aws.dynamodb",
    "Clock": ".core.clock",
    "PhaseContext": ".core.context",
    "advance_phase": ".core.engine",
    "cancel_job": ".core.engine",
    "pause_job": ".core.engine",
    "resolve_start_phase": ".core.engine",
    "run_pipeline": ".core.engine",
    "signal_job": ".core.engine",
    "CairnError": ".core.errors",
    "ClaimLostError": ".core.errors",
    "ConfigurationError": ".core.errors",
    "CorruptJobError": ".core.errors",
    "InvalidInputError": ".core.errors",
    "JobExistsError": ".core.errors",
    "JobNotFoundError": ".core.errors",
    "ModelError": ".core.errors",
    "PhaseError": ".core.errors",
    "PipelineError": ".core.errors",
    "SchedulingError": ".core.errors",
    "StateTooLargeError": ".core.errors",
    "StorageError": ".core.errors",
    "TransitionRefusedError": ".core.errors",
    "UnknownPhaseError": ".core.errors",
    "VersionConflict": ".core.errors",
    "StoredLesson": ".core.lessons",
    "Checkpoint": ".core.models",
    "FanOut": ".core.models",
    "HistoryItem": ".core.models",
    "Job": ".core.models",
    "JobStatus": ".core.models",
    "Lesson": ".core.models",
    "LogEntry": ".core.models",
    "MapItem": ".core.models",
    "MapMark": ".core.models",
    "MapRecord": ".core.models",
    "PhaseRecord": ".core.models",
    "RetryMode": ".core.models",
    "Signal": ".core.models",
    "Done": ".core.outcomes",
    "Fail": ".core.outcomes",
    "Map": ".core.outcomes",
    "Next": ".core.outcomes",
    "Sleep": ".core.outcomes",
    "WaitFor": ".core.outcomes",
    "Pipeline": ".core.pipeline",
    "PipelineRegistry": ".core.registry",
    "RetryPolicy": ".core.retry",
    "ItemScheduler": ".core.scheduler_port",
    "Scheduler": ".core.scheduler_port",
    "Route": ".core.storage_port",
    "Storage": ".core.storage_port",
    "Claim": ".core.transitions",
    "Commit": ".core.transitions",
    "CrashReport": ".core.transitions",
    "Fence": ".core.transitions",
    "Journal": ".core.transitions",
    "Save": ".core.transitions",
    "SignalDelivery": ".core.transitions",
    "StartJob": ".core.transitions",
    "WaitExpiry": ".core.transitions",
    "Written": ".core.transitions",
    "InlineScheduler": ".scheduling.inline",
    "DocumentStorage": ".storage.document",
    "StoredMap": ".storage.document",
    "FileStorage": ".storage.file",
    "MemoryStorage": ".storage.memory",
}

__all__ = [
    "Cairn",
    "CairnError",
    "Checkpoint",
    "Claim",
    "ClaimLostError",
    "Clock",
    "Commit",
    "ConfigurationError",
    "CorruptJobError",
    "CrashReport",
    "DocumentStorage",
    "Done",
    "DynamoDBStorage",
    "Fail",
    "FanOut",
    "Fence",
    "FileStorage",
    "HistoryItem",
    "InlineScheduler",
    "InvalidInputError",
    "ItemScheduler",
    "Job",
    "JobExistsError",
    "JobNotFoundError",
    "JobStatus",
    "Journal",
    "Lesson",
    "LogEntry",
    "Map",
    "MapItem",
    "MapMark",
    "MapRecord",
    "MemoryStorage",
    "ModelError",
    "Next",
    "PhaseContext",
    "PhaseError",
    "PhaseRecord",
    "Pipeline",
    "PipelineError",
    "PipelineRegistry",
    "RetryMode",
    "RetryPolicy",
    "Route",
    "Save",
    "Scheduler",
    "SchedulingError",
    "Signal",
    "SignalDelivery",
    "Sleep",
    "StartJob",
    "StateTooLargeError",
    "Storage",
    "StorageError",
    "StoredLesson",
    "StoredMap",
    "TransitionRefusedError",
    "UnknownPhaseError",
    "VersionConflict",
    "WaitExpiry",
    "WaitFor",
    "Written",
    "advance_phase",
    "cancel_job",
    "pause_job",
    "resolve_start_phase",
    "run_pipeline",
    "signal_job",
]


def __getattr__(name: str) -> Any:
    """A name of :data:`__all__`, imported from its module on first use and kept."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cairn' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
