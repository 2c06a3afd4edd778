"""Names of a deployment's phase functions and of their template resources: the one home of the rule.

A phase function is named ``<stack>-<pipeline>-<phase>``, so two pipelines may share phase names.
Lambda allows 64 characters of ``[A-Za-z0-9_-]`` in a function name; the stack's part is only known
to CloudFormation (``${AWS::StackName}``), so the ``<pipeline>-<phase>`` part is kept to
:data:`SUFFIX_CHARS` characters (a longer one is cut and ends with a hash of the whole) and a stack
name may have up to :data:`MAX_STACK_NAME` characters. ``.`` (allowed in cairn's names, not in
Lambda's) becomes ``_``.

Template resources of a phase are named ``<Pipeline><Phase><Kind>`` in PascalCase (for example
``DocumentIntakeFetchFunction``); two phases whose names meet in either form are a clash that the
registry refuses (:func:`clashes`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

MAX_FUNCTION_NAME = 64
"""Lambda's limit on a function name."""
SUFFIX_CHARS = 40
"""The most characters the ``<pipeline>-<phase>`` part of a function name has."""
MAX_STACK_NAME = MAX_FUNCTION_NAME - SUFFIX_CHARS - 1
"""The longest stack name whose function names always fit (the ``-`` after it counted)."""
_HASH_CHARS = 8
_WORD = re.compile(r"[A-Za-z0-9]+")


def module_name(pipeline: str) -> str:
    """The Python package of pipeline ``pipeline`` in a bundle (``demo-two`` -> ``demo_two``)."""
    return pipeline.replace("-", "_")


def function_suffix(pipeline: str, phase: str) -> str:
    """``<pipeline>-<phase>`` as a function name's part after ``<stack>-``: at most SUFFIX_CHARS characters."""
    whole = f"{pipeline}-{phase}".replace(".", "_")
    if len(whole) <= SUFFIX_CHARS:
        return whole
    digest = hashlib.sha256(f"{pipeline}\0{phase}".encode()).hexdigest()[:_HASH_CHARS]
    return f"{whole[: SUFFIX_CHARS - _HASH_CHARS - 1]}-{digest}"


def function_name(prefix: str, pipeline: str, phase: str) -> str:
    """The function that runs ``phase`` of ``pipeline`` in a deployment whose names start with ``prefix``."""
    return f"{prefix}{function_suffix(pipeline, phase)}"


def pascal(name: str) -> str:
    """``document-intake`` as ``DocumentIntake``: the words of ``name``, each capitalised."""
    return "".join(word[:1].upper() + word[1:] for word in _WORD.findall(name))


def resource_id(pipeline: str, phase: str, kind: str) -> str:
    """The template's logical id of a phase's resource of ``kind`` (``Function``, ``LogGroup``...)."""
    return f"{pascal(pipeline)}{pascal(phase)}{kind}"


def clashes(phases: Iterable[tuple[str, str]]) -> list[str]:
    """Descriptions of the (pipeline, phase) pairs whose function names or resource ids would be the same."""
    problems: list[str] = []
    by_function: dict[str, tuple[str, str]] = {}
    by_resource: dict[str, tuple[str, str]] = {}
    for pair in phases:
        for seen, key, what in (
            (by_function, function_suffix(*pair).lower(), "function name"),
            (by_resource, resource_id(*pair, ""), "template resource name"),
        ):
            other = seen.setdefault(key, pair)
            if other != pair:
                problems.append(
                    f'phase "{pair[1]}" of pipeline "{pair[0]}" and phase "{other[1]}" of pipeline "{other[0]}" '
                    f'would share the {what} "{key}"'
                )
    return problems
