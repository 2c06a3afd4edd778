"""The example pipeline: read a document, split it into pages, extract fields, publish JSON."""
