"""``cairn new NAME``: a new pipeline in the bundle, as ``sam init`` makes a new function.

It writes the pipeline's module (``functions/<module>/``), its test (``tests/pipelines/``), the sample
events of its phase functions (``events/phases/<name>/``) and the registry line (``functions/pipelines.py``),
then brings ``template.yaml`` in sync. Everything is checked before anything is written, and a
failure on the way puts every file back as it was. A local tool (never in the Lambda layer).
"""

from __future__ import annotations

from .command import ENV_VARS, NEXT_STEPS, Sync, add_command, add_env_entries, new_pipeline, run_new, template_sync
from .files import Plan, Written, plan, restore, write
from .names import MAX_NAME, NAME, PHASES, RESERVED, ScaffoldError, check_name, module_name
from .registry import EMPTY_REGISTRY, REGISTRY, REGISTRY_NAME, Bundle, add_to_registry, inspect_bundle, search_path
from .render import render_events, render_init, render_pipeline, render_test

__all__ = [
    "EMPTY_REGISTRY",
    "ENV_VARS",
    "MAX_NAME",
    "NAME",
    "NEXT_STEPS",
    "PHASES",
    "REGISTRY",
    "REGISTRY_NAME",
    "RESERVED",
    "Bundle",
    "Plan",
    "ScaffoldError",
    "Sync",
    "Written",
    "add_command",
    "add_env_entries",
    "add_to_registry",
    "check_name",
    "inspect_bundle",
    "module_name",
    "new_pipeline",
    "plan",
    "render_events",
    "render_init",
    "render_pipeline",
    "render_test",
    "restore",
    "run_new",
    "search_path",
    "template_sync",
    "write",
]
