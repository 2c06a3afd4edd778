"""cairn's promises about the Storage port, as a test suite to run against any adapter.

In a test file::

    from cairn.testing.contract import StorageContract

    class TestMyStorage(StorageContract):
        def make_storage(self, clock):
            return MyStorage(clock=clock)

pytest collects the inherited tests: start (idempotent by write token, refusing a live job it has not
seen), claims and their fences, save, commit, pause, cancel, signals, waits,
who paused, cancelled or signalled (operator actions in the log), history and listings, the
job view and the pages of its history and log (every write once, none that never landed, cursors bound
to the job and its run), map items and records, lessons, loading a whole job (``put_job``), owners' fair
shares (``owner_shares()``: skipped for a store that keeps none), TTL, and requests sent again after a lost
response. Each test gets a new, empty store from ``make_storage`` on a
clock that moves only when the test says.
"""

from __future__ import annotations

from .actions import ActionContract
from .base import ContractBase
from .history import HistoryContract
from .jobs import JobContract
from .lessons import LessonContract
from .loading import LoadingContract
from .maps import MapContract
from .pipeline import PipelineContract
from .shares import ShareContract
from .waits import WaitContract


class StorageContract(
    JobContract,
    HistoryContract,
    WaitContract,
    ActionContract,
    MapContract,
    LessonContract,
    PipelineContract,
    LoadingContract,
    ShareContract,
):
    """Every promise of the Storage port; subclass it and implement ``make_storage(self, clock)``."""


__all__ = [
    "ActionContract",
    "ContractBase",
    "HistoryContract",
    "JobContract",
    "LessonContract",
    "LoadingContract",
    "MapContract",
    "PipelineContract",
    "ShareContract",
    "StorageContract",
    "WaitContract",
]
