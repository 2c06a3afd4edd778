"""Lambda handlers of the document-intake phase functions: one function per phase."""

from __future__ import annotations

from cairn.aws.phase_handler import phase_handler

from .pipeline import pipeline

fetch = phase_handler(pipeline, "fetch")
split = phase_handler(pipeline, "split")
extract = phase_handler(pipeline, "extract")
publish = phase_handler(pipeline, "publish")
