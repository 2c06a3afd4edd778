"""The pipelines this bundle deploys, by name.

``cairn new NAME`` adds a pipeline here: one import line and one entry in the list. Keep that layout
(one ``from <package>.pipeline import pipeline as <package>`` line per pipeline, one name per line in
the list) so it can; ``cairn template sync`` then brings template.yaml in line with this registry.
"""

from __future__ import annotations

from cairn.core.registry import PipelineRegistry

PIPELINES = PipelineRegistry([])
