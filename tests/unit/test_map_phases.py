"""The item phases a pipeline's code names in ``Map(...)``: found from the source, before any job maps."""

from __future__ import annotations

import sys
import textwrap
import types
from typing import Any

from cairn.core.map_phases import ItemPhase, item_phases

SOURCE = """
import cairn
from cairn import Map, Next

def split(ctx):
    if ctx.state:
        return Map(ctx.state, phase="page", then="publish")
    return Next("whole", ctx.state)

def fan(ctx):
    return cairn.Map(ctx.state, "row", "publish")

def computed(ctx):
    return Map(ctx.state, phase=ctx.state["phase"], then="publish")

def helper(items):
    return Map(items, phase="chunk", then="publish")
"""


def _module(tmp_path: Any, name: str) -> types.ModuleType:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(SOURCE))
    module = types.ModuleType(name)
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    sys.modules[name] = module
    return module


def test_item_phases_are_the_literal_names_of_map_calls_with_the_phase_that_maps(tmp_path: Any) -> None:
    module = _module(tmp_path, "mapping_pipeline_for_test")
    phases = {name: getattr(module, name) for name in ("split", "fan", "computed", "helper")}
    phases |= dict.fromkeys(("page", "row", "whole", "publish"), print)  # code whose source is not read

    found = item_phases(phases.items())

    assert found == {
        "page": ItemPhase("page", "split", "publish"),
        "row": ItemPhase("row", "fan", "publish"),
    }  # "chunk" is no phase of these; a computed name is known only from a map's record


def test_code_whose_source_cannot_be_read_names_no_item_phase() -> None:
    module = types.ModuleType("no_source_pipeline_for_test")
    exec("def split(ctx):\n    return None\n", module.__dict__)
    sys.modules[module.__name__] = module
    assert item_phases([("split", module.split)]) == {}
