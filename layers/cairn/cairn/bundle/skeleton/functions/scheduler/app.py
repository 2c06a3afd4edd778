"""Lambda handler of the scheduler function: delayed advances, crash reports, the sweep, state machine steps."""

from __future__ import annotations

from cairn.aws.scheduler_handler import scheduler_handler
from pipelines import PIPELINES

handler = scheduler_handler(PIPELINES)
