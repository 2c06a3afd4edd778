"""Sample events from ``events/``: the same files ``sam local invoke -e`` uses, loaded one way for every test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

EVENTS = Path(__file__).resolve().parents[1] / "events"


def load_event(name: str) -> dict[str, Any]:
    """The event ``events/<name>.json`` (e.g. ``load_event("scheduler/scheduled-sweep")``)."""
    path = EVENTS / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"No sample event {name!r} (looked for {path})")
    event: dict[str, Any] = json.loads(path.read_text())
    return event


def event_names(folder: str) -> list[str]:
    """Every sample event under ``events/<folder>/`` (in its sub-folders too), as names for :func:`load_event`."""
    root = EVENTS / folder
    return sorted(f"{folder}/{path.relative_to(root).with_suffix('').as_posix()}" for path in root.rglob("*.json"))


def phase_event(pipeline: str, phase: str) -> dict[str, Any]:
    """The sample event of the function that runs ``phase`` of ``pipeline`` (``events/phases/<pipeline>/``)."""
    return load_event(f"phases/{pipeline}/{phase}")
