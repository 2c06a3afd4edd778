"""Lambda handler of every phase function: each runs the phase its CAIRN_PIPELINE and CAIRN_PHASE name."""

from __future__ import annotations

from cairn.aws.phase_handler import registry_phase_handler
from pipelines import PIPELINES

handler = registry_phase_handler(PIPELINES)
