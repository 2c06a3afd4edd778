"""The public API is documented where it is defined: every name of ``cairn.__all__`` (and of the public modules),
and every public method and property of the classes among them, has a docstring."""

from __future__ import annotations

from tests.docs.examples import public_names


def test_every_public_name_has_a_docstring() -> None:
    names = public_names()
    assert len(names) >= 68
    undocumented = [name.qualified for name in names if not name.doc.strip()]
    assert not undocumented, f"public names without a docstring: {undocumented}"
