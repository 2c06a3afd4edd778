"""``cairn template sync`` records each pipeline's state schema by version in state-schemas.json, and
``cairn template check`` refuses a state model changed incompatibly without a ``state_version`` bump, through
the CLI's main in a bundle made by ``cairn init``."""

from __future__ import annotations

import json
import sys
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field, create_model

from cairn.bundle.templating.schema_changes import incompatible_changes
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


def copied(made: Path, copy: Path) -> Path:
    """A copy of the bundle ``made`` (its layer's build and bytecode left out: a copied ``.pyc`` could pass for an
    edit made in the same second) in ``copy``."""
    for path in made.rglob("*"):
        parts = path.relative_to(made).parts
        if path.is_file() and "layers" not in parts and "__pycache__" not in parts:
            (copy / path.relative_to(made)).parent.mkdir(parents=True, exist_ok=True)
            (copy / path.relative_to(made)).write_bytes(path.read_bytes())
    (copy / "layers").mkdir()
    return copy


@pytest.fixture(scope="module")
def built(made: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundle once built: its state schemas fixed, as a bundle's ``sam build`` fixes them."""
    copy = copied(made, tmp_path_factory.mktemp("built") / "shop")
    fresh()
    assert main(["template", "check", "--states", "--seal", "--root", str(copy)]) == 0
    return copy


@pytest.fixture
def bundle(built: Path, tmp_path: Path) -> Path:
    return copied(built, tmp_path / "shop")


def edit(bundle: Path, old: str, new: str) -> None:
    module = bundle / "functions" / "example" / "pipeline.py"
    text = module.read_text(encoding="utf-8")
    assert old in text
    module.write_text(text.replace(old, new), encoding="utf-8")


def fresh() -> None:
    """Forget the pipelines' packages an earlier command imported (each command is a process of its own for a user)."""
    for name in [name for name in sys.modules if name.split(".")[0] in ("example", "orders")]:
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
    assert recorded["example"]["1"]["x-cairn-provisional"]  # nothing built yet: it follows the model
    assert check(made, capsys)[0] == 0


def seal(bundle: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """What a bundle's ``sam build`` runs (layers/Makefile): the state models checked, the provisional schemas fixed."""
    fresh()
    status = main(["template", "check", "--states", "--seal", "--root", str(bundle)])
    captured = capsys.readouterr()
    return status, captured.err + captured.out


REAL_MODEL = """\
    customer: str
    lines: list[str] = Field(default_factory=list)
    total_cents: int = 0
"""


def test_a_new_pipeline_s_schema_follows_its_state_model_until_the_first_build(
    bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "orders", "--root", str(bundle)]) == 0
    capsys.readouterr()
    module = bundle / "functions" / "orders" / "pipeline.py"
    module.write_text(module.read_text(encoding="utf-8").replace(MODEL, REAL_MODEL), encoding="utf-8")

    status, output = check(bundle, capsys)  # the placeholder's schema is not held against the real model
    assert status == 0, output
    status, output = sync(bundle, capsys)
    assert status == 0, output
    assert 'updated the provisional state schema of pipeline "orders" version 1' in output
    recorded = json.loads((bundle / "state-schemas.json").read_text(encoding="utf-8"))["orders"]["1"]
    assert set(recorded["properties"]) == {"customer", "lines", "total_cents"}

    status, output = seal(bundle, capsys)  # the first sam build: from now on, states may be saved
    assert status == 0, output
    assert 'fixed the state schema of pipeline "orders" version 1' in output
    module.write_text(module.read_text(encoding="utf-8").replace("total_cents: int", "total: int"), encoding="utf-8")
    status, output = check(bundle, capsys)
    assert status == 1, output
    assert 'pipeline "orders": state field "total_cents": removed (or renamed)' in output


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


# -- What the check judges: dicts, tuples, unions, constraints and formats, through `cairn template check`.

CLASSES = """\
class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"] = "dog"
    good: bool = True


class Bird(BaseModel):
    kind: Literal["bird"] = "bird"
    wings: int = 2


class ExampleState(BaseModel):"""
IMPORTS = "from __future__ import annotations\n"
PET = "    pet: Cat | Dog = Field(default_factory=Cat)\n"


REFUSED = [  # (the field before, after, what the check says)
    (
        "    counts: dict[str, int] = Field(default_factory=dict)\n",
        "    counts: dict[str, str] = Field(default_factory=dict)\n",
        'state field "counts.*": type changed from integer to string',
    ),
    (
        "    pair: tuple[int, str] = (0, '')\n",
        "    pair: tuple[int, int] = (0, 0)\n",
        'state field "pair[1]": type changed from string to integer',
    ),
    ("    n: int = 1\n", "    n: int = Field(default=1, ge=1)\n", 'state field "n": narrowed (minimum 1)'),
    (
        '    code: str = ""\n',
        '    code: str = Field(default="", max_length=3)\n',
        'state field "code": narrowed (maxLength 3)',
    ),
    (
        '    when: str = "2024-01-01T00:00:00"\n',
        "    when: datetime = datetime(2024, 1, 1)\n",
        'state field "when": narrowed (format "date-time")',
    ),
]
ACCEPTED = [
    ("    pet: Cat | Dog = Field(default_factory=Cat)\n", "    pet: Dog | Cat = Field(default_factory=Cat)\n"),
    ("    vet: Cat | Dog = Field(default_factory=Cat)\n", "    vet: Bird | Cat | Dog = Field(default_factory=Cat)\n"),
    ("    m: int = Field(default=1, ge=1)\n", "    m: float = 1\n"),  # widened
    ('    tag: str = Field(default="", max_length=3)\n', '    tag: str = Field(default="", max_length=5)\n'),
    (
        "    scores: dict[str, int] = Field(default_factory=dict)\n",
        "    scores: dict[str, float] = Field(default_factory=dict)\n",
    ),
]


def recorded_then_changed(bundle: Path, capsys: pytest.CaptureFixture[str], changes: list[tuple[str, str]]) -> None:
    """The state model with the fields before each change recorded in state-schemas.json, then each changed."""
    edit(bundle, IMPORTS, IMPORTS + "\nfrom datetime import datetime\nfrom typing import Literal\n")
    edit(bundle, "class ExampleState(BaseModel):", CLASSES)
    edit(bundle, MODEL, MODEL + "".join(before for before, _ in changes))
    assert sync(bundle, capsys)[0] == 0  # new optional fields: recorded over version 1's schema
    for before, after in changes:
        edit(bundle, before, after)


def test_the_check_refuses_changed_dict_values_tuple_items_constraints_and_formats(
    bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded_then_changed(bundle, capsys, [(before, after) for before, after, _ in REFUSED])

    status, output = check(bundle, capsys)

    assert status == 1, output
    for _, _, refused in REFUSED:
        assert f'pipeline "example": {refused} since state-schemas.json recorded state_version 1' in output
    assert output.count("bump state_version") == len(REFUSED), output


def test_the_check_accepts_reordered_or_added_union_variants_and_widened_types(
    bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded_then_changed(bundle, capsys, ACCEPTED)

    status, output = check(bundle, capsys)

    assert status == 0, output
    assert sync(bundle, capsys)[0] == 0


class ItemV1(BaseModel):
    name: str = ""


class ItemV2(BaseModel):
    name: str = ""
    sku: str


class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"] = "dog"
    good: bool = True


class Tree(BaseModel):
    kids: list[Tree] = Field(default_factory=list)


def schema_of(annotation: Any) -> dict[str, Any]:
    """The JSON schema of a state whose one field ``f`` has type ``annotation`` (a type, or (type, Field(...)))."""
    field = annotation if isinstance(annotation, tuple) else (annotation, ...)
    return create_model("State", f=field).model_json_schema(mode="validation")


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (dict[str, ItemV1], dict[str, ItemV2], ['field "f.*.sku": newly required (a new field without a default)']),
        (dict[str, int], dict[str, float], []),
        (dict[str, int], ItemV1, ['field "f": its keys are no longer free (only name would be kept)']),
        (ItemV1, dict[str, str], []),
        (ItemV1, dict[str, int], ['field "f.name": type changed from string to integer']),
        (tuple[int, str], tuple[int, str, int], ['field "f": narrowed (minItems 3)']),
        (tuple[int, ...], tuple[float, ...], []),
        (list[str], set[str], ['field "f": narrowed (uniqueItems)']),
        (set[str], list[str], []),
        (int, (int, Field(gt=0)), ['field "f": narrowed (exclusiveMinimum 0)']),
        ((int, Field(ge=1)), (int, Field(gt=0)), []),  # the same integers
        ((float, Field(ge=1)), (float, Field(gt=1)), ['field "f": narrowed (exclusiveMinimum 1)']),
        ((int, Field(le=10)), (int, Field(le=100)), []),
        ((int, Field(multiple_of=4)), (int, Field(multiple_of=2)), []),
        (int, (int, Field(multiple_of=2)), ['field "f": narrowed (multipleOf 2)']),
        (str, (str, Field(pattern="^[a-z]+$")), ['field "f": narrowed (pattern "^[a-z]+$")']),
        (str, (str, Field(min_length=1)), ['field "f": narrowed (minLength 1)']),
        (str, datetime, ['field "f": narrowed (format "date-time")']),
        (str, date, ['field "f": narrowed (format "date")']),
        (datetime, str, []),
        (Literal["a", "b"], (str, Field(max_length=1)), []),
        (Literal["ab"], (str, Field(max_length=1)), ['field "f": enum narrowed, no longer accepts "ab"']),
        (Literal[1, 2], (int, Field(ge=2)), ['field "f": enum narrowed, no longer accepts 1']),
        (Cat | Dog, Dog | Cat, []),
        (Cat | None, Dog | Cat | None, []),
        (
            Cat | Dog,
            Cat,
            ['field "f.kind": enum narrowed, no longer accepts "dog"', 'field "f.good": removed (or renamed)'],
        ),
        (Tree, Tree, []),
        (list[Tree], list[Tree | None], []),
    ],
)
def test_incompatible_changes_of_models(old: Any, new: Any, expected: list[str]) -> None:
    assert incompatible_changes(schema_of(old), schema_of(new)) == expected
