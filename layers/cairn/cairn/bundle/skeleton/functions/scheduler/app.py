"""Lambda handler of the scheduler function: delayed advances, crash reports, the sweep, state machine steps."""

from __future__ import annotations

from cairn.aws.bundle_pipelines import BundlePipelines
from cairn.aws.scheduler_handler import scheduler_handler

handler = scheduler_handler(BundlePipelines("pipelines"))  # imports each pipeline when an event first names it
