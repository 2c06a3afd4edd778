"""The core: pipelines, phases, checkpoints and the rules that move a job on.

Nothing here imports anything outside this folder; storages, schedulers, the AWS
adapters and the plug-ins build on it. A plug-in adds a kind of phase (the agent and
plan phases of :mod:`cairn.agents`) through :func:`cairn.core.pipeline.register_phase_kind`. The public
names are re-exported by :mod:`cairn`.
"""
