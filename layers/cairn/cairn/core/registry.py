"""The pipelines a deployment runs, by name."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from . import naming
from .errors import InvalidInputError, PipelineError
from .pipeline import Pipeline
from .text import shown


class PipelineRegistry:
    """Looks pipelines up by name; an unknown name is a clear error.

    Each phase of each pipeline gets its own Lambda function and template
    resources (:mod:`cairn.core.naming`): two phases whose names would meet there
    (``a-b``/``c`` and ``a``/``b-c``, say) are refused here, when the registry
    is built, so a deployment can never route one pipeline's job to another's
    function. Pipelines may share phase names.
    """

    def __init__(self, pipelines: Iterable[Pipeline[Any]]) -> None:
        self._pipelines: dict[str, Pipeline[Any]] = {}
        for pipeline in pipelines:
            if pipeline.name in self._pipelines:
                raise PipelineError(f'Two pipelines are named "{pipeline.name}"')
            self._pipelines[pipeline.name] = pipeline
        problems = naming.clashes(
            (pipeline.name, phase) for pipeline in self._pipelines.values() for phase in pipeline.phase_names
        )
        if problems:
            raise PipelineError("Phase functions would clash: " + "; ".join(problems))

    def get(self, name: str) -> Pipeline[Any]:
        """The pipeline called ``name``."""
        pipeline = self._pipelines.get(name)
        if pipeline is None:
            known = ", ".join(sorted(self._pipelines)) or "none"
            raise InvalidInputError(f'Unknown pipeline "{shown(name)}" (known pipelines: {known})')
        return pipeline

    def __iter__(self) -> Iterator[Pipeline[Any]]:
        return iter(self._pipelines.values())

    @property
    def names(self) -> list[str]:
        """The names of the registered pipelines."""
        return sorted(self._pipelines)
