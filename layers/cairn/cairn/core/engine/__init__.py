"""The checkpoint engine: start, resume and advance jobs, following the seed's rules.

``run_pipeline`` writes the starting checkpoint and schedules an advance; it
never runs a phase. ``advance_phase`` claims the job, runs the phase named by
the checkpoint's ``nextPhase`` and commits what it returned, in one
conditional write per step.

The parts, one concern each: :mod:`.starting` and :mod:`.rerunning` (start, retry, rerun a job),
:mod:`.stopping` (pause, cancel), :mod:`.claimed_run` (the claim and the writes made under it),
:mod:`.advancing` (run the claimed phase, commit its outcome),
:mod:`.waits` (sleeps, signals, wait timeouts), :mod:`.crashes` (crash reports) and :mod:`.writes`
(what every write shares). This module is the engine's one public face.
"""

from __future__ import annotations

from ..ids import JOB_ID_PATTERN, validate_job_id
from ..signals import SIGNAL_NAME_PATTERN, validate_signal_name
from .advancing import advance_phase
from .crashes import record_crash
from .starting import parse_retry_mode, resolve_start_phase, run_pipeline, usable_checkpoint
from .stopping import cancel_job, pause_job
from .waits import signal_job
from .writes import WRITE_RESOLVE_ATTEMPTS, resolve_write

__all__ = [
    "JOB_ID_PATTERN",
    "SIGNAL_NAME_PATTERN",
    "WRITE_RESOLVE_ATTEMPTS",
    "advance_phase",
    "cancel_job",
    "parse_retry_mode",
    "pause_job",
    "record_crash",
    "resolve_start_phase",
    "resolve_write",
    "run_pipeline",
    "signal_job",
    "usable_checkpoint",
    "validate_job_id",
    "validate_signal_name",
]
