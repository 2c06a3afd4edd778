"""The documents a brief is researched from: the samples shipped with this package, and the tools over them.

Each tool is a typed function made a tool once (``@tool``: its input model and spec are built when this module
is imported), which the agent and plan phases share; an agent or a plan calls it by name with validated
arguments, and Python code calls it as the function it is.
"""

from __future__ import annotations

from pathlib import Path

from cairn.agents import tool

SAMPLES = Path(__file__).resolve().parent / "samples"


@tool
def list_documents() -> list[str]:
    """The names of the documents that can be read, in order."""
    return sorted(path.name for path in SAMPLES.glob("*.md"))


@tool
def read_document(name: str) -> str:
    """The text of one document, by the name list_documents gives."""
    if name not in list_documents():
        raise ValueError(f'No document "{name}"; the documents are: {", ".join(list_documents())}')
    return (SAMPLES / name).read_text(encoding="utf-8")


@tool
def search_documents(query: str) -> list[dict[str, str]]:
    """The sentences of every document that contain one of the query's words (of four letters or more)."""
    words = {word.lower().strip(".,:;") for word in query.split() if len(word) >= 4}
    if not words:
        raise ValueError("The query needs at least one word of four letters or more")
    found = []
    for name in list_documents():
        text = read_document(name).replace("\n", " ")
        for sentence in text.split(". "):
            if any(word in sentence.lower() for word in words):
                found.append({"document": name, "sentence": sentence.strip().rstrip(".") + "."})
    return found
