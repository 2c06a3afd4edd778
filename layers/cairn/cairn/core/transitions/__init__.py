"""The rules of every state change, as pure functions from the stored job to the job to write.

Each function is one conditional write: it checks its condition against the
stored job and either returns what to write, or says why not. Memory and file
stores apply these under a lock; the DynamoDB store expresses the same
conditions as condition expressions. Nothing here does I/O.

Every write advances the job's ``sequence`` and carries a unique ``token``. A
request repeated after its response was lost finds its own token on the job
and is recognised as landed instead of being refused (see docs/PROTOCOL.md).

The parts: :mod:`.requests` (what each write asks for, admitted as it is made), :mod:`.job` (the
rules for the job's own life), :mod:`.waits` (signals and wait timeouts) and :mod:`.history` (the
log and phase records a write adds). This module is their one public face.
"""

from __future__ import annotations

from .history import action_entry, entered, history_chain, history_item, linked_history, merge_usage, shown_log
from .job import cancel, check_fence, claim, commit, commit_changes, moved_actions, pause, save, start
from .requests import (
    ENTERING,
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
    landed,
    live,
    new_token,
)
from .waits import NOT_WAITING, deliver_signal, expire_wait, signal_entry, timeout_message, wait_expired, waits_for

__all__ = [
    "ENTERING",
    "NOT_WAITING",
    "Claim",
    "Commit",
    "CrashReport",
    "Fence",
    "Journal",
    "Save",
    "SignalDelivery",
    "StartJob",
    "WaitExpiry",
    "Written",
    "action_entry",
    "cancel",
    "check_fence",
    "claim",
    "commit",
    "commit_changes",
    "deliver_signal",
    "entered",
    "expire_wait",
    "history_chain",
    "history_item",
    "landed",
    "linked_history",
    "live",
    "merge_usage",
    "moved_actions",
    "new_token",
    "pause",
    "save",
    "shown_log",
    "signal_entry",
    "start",
    "timeout_message",
    "wait_expired",
    "waits_for",
]
