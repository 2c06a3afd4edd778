"""The files ``cairn init`` ships (``cairn/bundle/skeleton``) that are copies of this repository's own.

Each shipped file is this repository's file, byte for byte, except the template, which is this repository's
with its generated section synced to no pipelines (so the sample pipelines' functions, and the parameters
and conditions only they use, are not in it). The shipped template's cairn machinery is what ``cairn template
sync`` writes into every bundle: edit it in this repository's template.yaml, then ``make skeleton``.
``python -m tests.bundle.skeleton`` (``make skeleton``) writes them again from this repository's files after one of
those changed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cairn.bundle.templating.sync import synced
from cairn.core.registry import PipelineRegistry

ROOT = Path(__file__).resolve().parents[2]
SKELETON = ROOT / "layers" / "cairn" / "cairn" / "bundle" / "skeleton"
COPIES = (
    "layers/Makefile",
    "layers/requirements.txt",
    "layers/arm64/platform.mk",
    "layers/x86_64/platform.mk",
    "functions/phases.py",
    "functions/api/__init__.py",
    "functions/api/app.py",
    "functions/scheduler/__init__.py",
    "functions/scheduler/app.py",
    "samconfig.toml",
)
"""Shipped as they are here."""
TEMPLATE = "template.yaml"
ENV_VARS = "events/env.json"
"""Shipped with its ``Parameters`` only (the variables every function has, from Globals): a phase function's
own variables are literal values in the template, which ``sam local`` takes as they are."""


def expected_env_vars() -> str:
    """This repository's events/env.json, its ``Parameters`` only."""
    parameters = json.loads((ROOT / ENV_VARS).read_text(encoding="utf-8"))["Parameters"]
    return json.dumps({"Parameters": parameters}, indent=2) + "\n"


def expected_template() -> str:
    """This repository's template with no pipelines: the template every bundle starts from, whose cairn machinery
    (:mod:`cairn.bundle.templating.machinery`) every bundle's sync writes: this repository's is the source."""
    text = (ROOT / TEMPLATE).read_text(encoding="utf-8")
    return synced(text, PipelineRegistry([]), shipped=text)


def refresh() -> list[str]:
    """Write every shipped copy from this repository's files; the ones that changed."""
    changed = []
    wanted = {relative: (ROOT / relative).read_bytes() for relative in COPIES}
    wanted[TEMPLATE] = expected_template().encode()
    wanted[ENV_VARS] = expected_env_vars().encode()
    for relative, data in wanted.items():
        target = SKELETON / relative
        if not target.is_file() or target.read_bytes() != data:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            changed.append(relative)
    return changed


def main() -> int:
    """Refresh the skeleton, saying what changed."""
    changed = refresh()
    print("\n".join(f"wrote {SKELETON.relative_to(ROOT) / name}" for name in changed) or "the skeleton is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
