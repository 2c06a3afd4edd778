"""Every dotted name of cairn the README, the docs and the changelog mention in code (`cairn.x.y`) exists."""

from __future__ import annotations

import importlib
import re

from tests.docs.examples import ROOT, pages

NAME = re.compile(r"`(cairn(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module of cairn, or an attribute reached from the longest module it starts with."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_every_cairn_name_the_documentation_mentions_exists() -> None:
    mentioned = {
        (name, page.relative_to(ROOT).as_posix())
        for page in [*pages(), ROOT / "CHANGELOG.md"]
        for name in NAME.findall(page.read_text())
    }
    assert len(mentioned) >= 20
    missing = sorted((name, page) for name, page in mentioned if not resolves(name))
    assert not missing, f"names that do not exist: {missing}"
