"""What a storage or scheduler adapter is written with: the ports, the requests they take, the records they keep.

A pipeline's author needs none of this (``cairn`` exports what a pipeline needs); an adapter's author imports from
here alone. The names are pinned by tests/unit/test_public_names.py: adding or removing one is a visible decision.
docs/guides/adapters.md says how to write a store or a scheduler with them.
"""

from __future__ import annotations

from .core.clock import Clock
from .core.errors import (
    ClaimLostError,
    CorruptJobError,
    SchedulingError,
    StateTooLargeError,
    StorageError,
    TransitionRefusedError,
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
    Signal,
)
from .core.scheduler_port import ItemScheduler, Scheduler
from .core.share_port import OwnerShares
from .core.storage_port import ObjectLink, ResultLink, Route, StateLink, Storage
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
from .storage.document import DocumentStorage, StoredMap

__all__ = [
    "Checkpoint",
    "Claim",
    "ClaimLostError",
    "Clock",
    "Commit",
    "CorruptJobError",
    "CrashReport",
    "DocumentStorage",
    "FanOut",
    "Fence",
    "HistoryItem",
    "ItemScheduler",
    "Job",
    "JobStatus",
    "Journal",
    "Lesson",
    "LogEntry",
    "MapItem",
    "MapMark",
    "MapRecord",
    "ObjectLink",
    "OwnerShares",
    "PhaseRecord",
    "ResultLink",
    "Route",
    "Save",
    "Scheduler",
    "SchedulingError",
    "Signal",
    "SignalDelivery",
    "StartJob",
    "StateLink",
    "StateTooLargeError",
    "Storage",
    "StorageError",
    "StoredLesson",
    "StoredMap",
    "TransitionRefusedError",
    "VersionConflict",
    "WaitExpiry",
    "Written",
]
