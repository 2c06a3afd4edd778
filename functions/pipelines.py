"""The pipelines this bundle deploys, by name.

``cairn new NAME`` adds a pipeline here: one import line and one entry in the list. Keep that layout
(one ``from <package>.pipeline import pipeline as <package>`` line per pipeline, one name per line in
the list) so it can; ``cairn template sync`` then brings template.yaml in line with this registry.
"""

from __future__ import annotations

from cairn.core.registry import PipelineRegistry
from document_intake.pipeline import pipeline as document_intake
from research_brief.pipeline import pipeline as research_brief

PIPELINES = PipelineRegistry(
    [
        document_intake,
        research_brief,
    ]
)
