"""The pipelines this bundle deploys, by name."""

from __future__ import annotations

from cairn.registry import PipelineRegistry
from document_intake.pipeline import pipeline as document_intake

PIPELINES = PipelineRegistry([document_intake])
