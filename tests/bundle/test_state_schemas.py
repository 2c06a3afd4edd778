"""``cairn template sync`` records each pipeline's state schema by version in state-schemas.json, and
``cairn template check`` refuses a state model changed incompatibly without a ``state_version`` bump, through
the CLI's main in a bundle made by ``cairn init``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cairn.bundle.templating.state_schemas import incompatible_changes
from cairn.cli import main

MODEL = """\
    items: list[str] = Field(default_factory=list)
    results: list[str] = Field(default_factory=list)
"""
DECLARATION = 'pipeline = Pipeline("example", state=ExampleState)'


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ``cairn init`` (its example pipeline synced), copied by each test that edits it."""
    folder = tmp_path_factory.mktemp("init") / "shop"
    assert main(["init", str(folder)]) == 0
    return folder


@pytest.fixture
def bundle(made: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "shop"
    for path in made.rglob("*"):
        if path.is_file() and "layers" not in path.relative_to(made).parts:
            (copy / path.relative_to(made)).parent.mkdir(parents=True, exist_ok=True)
            (copy / path.relative_to(made)).write_bytes(path.read_bytes())
    (copy / "layers").mkdir()
    return copy


def edit(bundle: Path, old: str, new: str) -> None:
    module = bundle / "functions" / "example" / "pipeline.py"
    text = module.read_text(encoding="utf-8")
    assert old in text
    module.write_text(text.replace(old, new), encoding="utf-8")


def fresh() -> None:
    """Forget the example package an earlier command imported (each command is a process of its own for a user)."""
    for name in [name for name in sys.modules if name == "example" or name.startswith("example.")]:
        del sys.modules[name]


def check(bundle: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    fresh()
    status = main(["template", "check", "--root", str(bundle)])
    captured = capsys.readouterr()
    return status, captured.err + captured.out


def sync(bundle: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    fresh()
    status = main(["template", "sync", "--root", str(bundle)])
    captured = capsys.readouterr()
    return status, captured.err + captured.out


def test_init_records_the_example_state_schema_and_the_bundle_checks(
    made: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = json.loads((made / "state-schemas.json").read_text(encoding="utf-8"))

    assert list(recorded) == ["example"]
    assert set(recorded["example"]["1"]["properties"]) == {"items", "results"}
    assert check(made, capsys)[0] == 0


def test_a_renamed_field_without_a_bump_is_refused_naming_the_pipeline_and_the_field(
    bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(bundle, "    results: list[str]", "    outputs: list[str]")

    status, output = check(bundle, capsys)

    assert status == 1
    assert 'pipeline "example": state field "results": removed (or renamed)' in output
    assert "bump state_version and add a migration" in output
    before = (bundle / "state-schemas.json").read_text(encoding="utf-8")
    assert sync(bundle, capsys)[0] == 1  # the sync does not record it over version 1's schema either
    assert (bundle / "state-schemas.json").read_text(encoding="utf-8") == before


def test_a_bump_with_its_migration_passes_and_sync_records_the_new_version(
    bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(bundle, "    results: list[str]", "    outputs: list[str]")
    edit(
        bundle,
        DECLARATION,
        'pipeline = Pipeline("example", state=ExampleState, state_version=2, '
        'migrations={1: lambda old: {"items": old["items"], "outputs": old["results"]}})',
    )

    assert check(bundle, capsys) == (0, f"{bundle / 'template.yaml'}: matches the registry\n")
    status, output = sync(bundle, capsys)
    assert status == 0, output
    assert 'recorded the state schema of pipeline "example" version 2' in output
    recorded = json.loads((bundle / "state-schemas.json").read_text(encoding="utf-8"))
    assert list(recorded["example"]) == ["1", "2"]
    assert "outputs" in recorded["example"]["2"]["properties"]


def test_a_bump_without_a_migration_is_reported(bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(bundle, DECLARATION, 'pipeline = Pipeline("example", state=ExampleState, state_version=2)')

    status, output = check(bundle, capsys)

    assert status == 1
    assert 'pipeline "example": state_version 2 has no migration from version 1' in output


def test_a_new_optional_field_passes_and_sync_updates_the_record(
    bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(bundle, MODEL, MODEL + '    note: str = Field(default="", description="A note for people")\n')

    assert check(bundle, capsys)[0] == 0
    status, output = sync(bundle, capsys)
    assert status == 0, output
    assert 'updated the state schema of pipeline "example" version 1' in output
    assert (
        "note" in json.loads((bundle / "state-schemas.json").read_text(encoding="utf-8"))["example"]["1"]["properties"]
    )


def obj(properties: dict[str, object], required: list[str] | None = None, **more: object) -> dict[str, object]:
    return {"type": "object", "properties": properties, "required": required or [], **more}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            obj({"a": {"type": "string"}}),
            obj({"a": {"type": "integer"}}),
            ['field "a": type changed from string to integer'],
        ),
        (obj({"a": {"type": "integer"}}), obj({"a": {"type": "number"}}), []),  # widened
        (
            obj({"a": {"type": "string"}}),
            obj({"a": {"type": "string"}, "b": {"type": "string"}}, ["b"]),
            ['field "b": newly required (a new field without a default)'],
        ),
        (obj({"a": {"type": "string"}}), obj({"a": {"type": "string"}}, ["a"]), ['field "a": newly required']),
        (
            obj({"a": {"enum": ["x", "y"]}}),
            obj({"a": {"enum": ["x"]}}),
            ['field "a": enum narrowed, no longer accepts "y"'],
        ),
        (obj({"a": {"enum": ["x"]}}), obj({"a": {"type": "string"}}), []),  # widened
        (obj({"a": {"type": "string"}}), obj({"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}), []),
        (
            obj({"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}),
            obj({"a": {"type": "string"}}),
            ['field "a": type changed from null | string to string'],
        ),
        (
            {**obj({"s": {"$ref": "#/$defs/Sub"}}), "$defs": {"Sub": obj({"n": {"type": "integer"}})}},
            {**obj({"s": {"$ref": "#/$defs/Sub"}}), "$defs": {"Sub": obj({"m": {"type": "integer"}})}},
            ['field "s.n": removed (or renamed)'],
        ),
        (
            obj({"xs": {"type": "array", "items": {"type": "integer"}}}),
            obj({"xs": {"type": "array", "items": {"type": "string"}}}),
            ['field "xs[]": type changed from integer to string'],
        ),
        (
            {
                **obj({"t": {"$ref": "#/$defs/Tree"}}),
                "$defs": {"Tree": obj({"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}})},
            },
            {
                **obj({"t": {"$ref": "#/$defs/Tree"}}),
                "$defs": {"Tree": obj({"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}})},
            },
            [],  # a recursive model ends
        ),
    ],
)
def test_incompatible_changes(old: dict[str, object], new: dict[str, object], expected: list[str]) -> None:
    assert incompatible_changes(old, new) == expected
