"""cairn: crash-safe, multi-phase pipelines with checkpoints.

The public API. The core imports neither boto3 nor botocore.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import agents  # noqa: F401  (importing it registers the agent and plan phase kinds)
from .app import Cairn
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
from .storage.memory import MemoryStorage

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

if TYPE_CHECKING:
    from .aws.dynamodb import DynamoDBStorage
    from .storage.file import FileStorage


def __getattr__(name: str) -> Any:
    """``DynamoDBStorage`` and ``FileStorage`` are imported on first use.

    So the core never loads boto3 by itself, and a Lambda function (which stores jobs in DynamoDB)
    never loads filelock and asyncio.
    """
    if name == "DynamoDBStorage":
        from .aws.dynamodb import DynamoDBStorage

        return DynamoDBStorage
    if name == "FileStorage":
        from .storage.file import FileStorage

        return FileStorage
    raise AttributeError(f"module 'cairn' has no attribute {name!r}")
