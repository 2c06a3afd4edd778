"""The core: pipelines, phases, checkpoints and the rules that move a job on.

Nothing here imports anything outside this folder; storages, schedulers, the AWS
adapters and the plug-ins (agent and plan phases) build on it. The public names
are re-exported by :mod:`cairn`.
"""
