"""Lambda handler of every phase function: each runs the phase its CAIRN_PIPELINE and CAIRN_PHASE name."""

from __future__ import annotations

from cairn.aws.phase_handler import own_pipelines, registry_phase_handler

handler = registry_phase_handler(own_pipelines("pipelines"))  # imports this function's pipeline alone
