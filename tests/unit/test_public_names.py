"""Each public module's names are pinned: adding or removing one is a visible decision, made here."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

import cairn
import cairn.adapters

FRONT = {
    "Cairn", "Pipeline", "PhaseContext", "Done", "Fail", "Map", "Next", "Sleep", "WaitFor", "RetryPolicy",
    "RetryMode", "Job", "JobStatus", "MemoryStorage", "FileStorage", "DynamoDBStorage", "InlineScheduler",
    "run_pipeline", "advance_phase", "resolve_start_phase", "CairnError", "ConfigurationError", "InvalidInputError",
    "JobNotFoundError", "JobExistsError", "TransitionRefusedError", "PhaseError",
}  # fmt: skip
"""What a pipeline's author imports from ``cairn``: the pipeline, the outcomes, the front door, the stores and the
scheduler a user picks, and the errors a caller catches."""
ADAPTERS = {
    "Storage", "DocumentStorage", "StoredMap", "StoredLesson", "Route", "Clock", "Scheduler", "ItemScheduler",
    "StartJob", "Claim", "CrashReport", "Fence", "Save", "Commit", "Journal", "SignalDelivery", "WaitExpiry", "Written",
    "Job", "JobStatus", "Checkpoint", "HistoryItem", "PhaseRecord", "LogEntry", "FanOut", "MapItem", "MapRecord",
    "MapMark", "Lesson", "Signal", "ObjectLink", "StateLink", "ResultLink", "OwnerShares", "VersionConflict",
    "ClaimLostError", "TransitionRefusedError", "StorageError", "CorruptJobError", "StateTooLargeError",
    "SchedulingError",
}  # fmt: skip
"""What an adapter's author imports from ``cairn.adapters``."""


def test_cairn_exports_what_a_pipelines_author_needs_and_nothing_else() -> None:
    assert set(cairn.__all__) == FRONT
    assert all(getattr(cairn, name) is not None for name in FRONT)


def test_cairn_adapters_exports_what_an_adapters_author_needs() -> None:
    assert set(cairn.adapters.__all__) == ADAPTERS
    assert all(getattr(cairn.adapters, name) is not None for name in ADAPTERS)


@pytest.mark.parametrize(
    ("name", "home"),
    [("Claim", "cairn.adapters"), ("Storage", "cairn.adapters"), ("pause_job", "cairn.core.engine")],
)
def test_a_name_that_left_cairn_still_imports_from_it_for_one_release_with_a_warning(name: str, home: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"import it from {home}"):
        moved = getattr(cairn, name)
    assert moved is getattr(importlib.import_module(home), name)


def test_a_front_name_imports_without_a_warning_and_an_unknown_one_is_an_attribute_error() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cairn.Pipeline is not None
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = cairn.Nope


@pytest.mark.parametrize(
    ("old", "new", "name"),
    [
        ("cairn.core.prices", "cairn.features.prices", "load_prices"),
        ("cairn.core.job_loading", "cairn.storage.job_loading", "checked_whole_job"),
        ("cairn.core.transition_guard", "cairn.features.transition_guard", "transition_limit"),
        ("cairn.core.fan_out", "cairn.maps.fan_out", "MAX_ITEMS"),
    ],
)
def test_a_module_that_moved_still_imports_by_its_old_path_for_one_release_with_a_warning(
    old: str, new: str, name: str
) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"'{old}' is deprecated: import {new}"):
        moved = importlib.import_module(old)
    assert getattr(moved, name) is getattr(importlib.import_module(new), name)
    with pytest.raises(AttributeError):
        _ = moved.no_such_name
