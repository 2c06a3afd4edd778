"""The template follows the registry: ``cairn template sync`` and ``cairn template check``. A local tool.

Each phase of each registered pipeline gets, in a marked section of template.yaml, its Lambda
function (``phases.handler``, the phase's timeout, memory, environment and IAM statements), its log
group, a term of its pipeline's errors alarm, and a place in the policy that lets the stack invoke its
functions. ``sync`` writes that section (and drops the parameters and conditions only the section it
replaced used); ``check`` lists every disagreement, naming the phase, and every part of the template,
hand-written or generated, that cannot work (:mod:`.handwritten`), naming the resource.
"""

from __future__ import annotations

from .check import check
from .errors import TemplateError
from .loading import DEFAULT_FUNCTIONS, DEFAULT_REGISTRY, load_registry
from .section import render
from .sync import sync, synced

__all__ = [
    "DEFAULT_FUNCTIONS",
    "DEFAULT_REGISTRY",
    "TemplateError",
    "check",
    "load_registry",
    "render",
    "sync",
    "synced",
]
