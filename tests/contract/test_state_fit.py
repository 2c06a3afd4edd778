"""A stored state is read into the state model of its ``state_version`` strictly, on every store: a key the model
does not have, or a value it would coerce, stops the resume in ``error`` with the checkpoint kept and a message
naming the field and the fix; the migration deployed, a retry completes the job with nothing lost. A state the
engine wrote itself always fits, whatever the model holds."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, computed_field, field_validator, model_validator

from cairn import Cairn, Done, InlineScheduler, JobStatus, Next, PhaseContext, Pipeline, WaitFor
from cairn.core.storage_port import Storage
from tests.support import FakeClock

JOB = "billing-1"


class BillingV1(BaseModel):
    count: int = 0
    total: int = 0
    ref: str = ""


class BillingRenamed(BaseModel):
    """``count`` and ``total`` renamed, each with a default: pydantic alone would ignore the stored keys."""

    invoices: int = 0
    total_cents: int = 0
    ref: str = ""


class BillingRetyped(BaseModel):
    """``ref`` retyped: pydantic alone would read the stored "0042" as 42."""

    count: int = 0
    total: int = 0
    ref: int = 0


def billing(model: type[BaseModel], **options: Any) -> Pipeline[Any]:
    """``ask`` (waits for "go") -> ``finish`` (the state as its result)."""
    pipeline: Pipeline[Any] = Pipeline("billing", state=model, **options)

    @pipeline.phase
    def ask(ctx: PhaseContext[Any]) -> WaitFor:
        return WaitFor("go", "finish", ctx.state)

    @pipeline.phase
    def finish(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state)

    return pipeline


def cairn(pipeline: Pipeline[Any], storage: Storage, clock: FakeClock) -> Cairn:
    return Cairn(pipeline, storage=storage, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))


def waiting_v1(storage: Storage, clock: FakeClock) -> None:
    jobs = cairn(billing(BillingV1), storage, clock)
    jobs.start("billing", JOB, state={"count": 3, "total": 4200, "ref": "0042"})
    jobs.run_until_idle()
    assert jobs.get(JOB).status == JobStatus.WAITING


SAVED = {"count": 3, "total": 4200, "ref": "0042"}


def test_a_resume_under_a_renamed_field_stops_naming_it_and_a_retry_with_the_migration_completes(
    storage: Storage, clock: FakeClock
) -> None:
    waiting_v1(storage, clock)
    renamed = cairn(billing(BillingRenamed), storage, clock)  # same state_version: the migration was skipped

    renamed.signal(JOB, "go")
    renamed.run_until_idle()

    job = renamed.get(JOB)
    assert job.status == JobStatus.ERROR, job.result
    assert job.error is not None
    assert job.error.startswith('Stored state does not fit pipeline "billing" (state_version 1): ')
    assert 'key "count": not in the state model' in job.error
    assert 'key "total": not in the state model' in job.error
    assert "bump state_version and add a migration (Pipeline(state_version=2, migrations={1: ...}))" in job.error
    assert job.checkpoint is not None  # kept as it was: the state, the phase, the version
    assert (job.checkpoint.next_phase, job.checkpoint.state, job.checkpoint.state_version) == ("finish", SAVED, None)

    migrated = cairn(
        billing(
            BillingRenamed,
            state_version=2,
            migrations={1: lambda old: {"invoices": old["count"], "total_cents": old["total"], "ref": old["ref"]}},
        ),
        storage,
        clock,
    )
    migrated.retry(JOB)
    migrated.run_until_idle()

    done = migrated.get(JOB)
    assert done.status == JobStatus.COMPLETE, done.error
    assert done.result == {"invoices": 3, "total_cents": 4200, "ref": "0042"}


def test_a_value_the_model_would_coerce_stops_the_resume_naming_the_field(storage: Storage, clock: FakeClock) -> None:
    waiting_v1(storage, clock)
    retyped = cairn(billing(BillingRetyped), storage, clock)

    retyped.signal(JOB, "go")
    retyped.run_until_idle()

    job = retyped.get(JOB)
    assert job.status == JobStatus.ERROR, job.result
    assert job.error is not None
    assert "field \"ref\": the saved '0042' would be read as 42" in job.error
    assert job.checkpoint is not None
    assert job.checkpoint.state == SAVED


def test_a_migration_that_leaves_a_key_behind_is_refused_naming_it(storage: Storage, clock: FakeClock) -> None:
    waiting_v1(storage, clock)
    leaky = cairn(
        billing(BillingRenamed, state_version=2, migrations={1: lambda old: {**old, "invoices": old["count"]}}),
        storage,
        clock,
    )

    leaky.signal(JOB, "go")
    leaky.run_until_idle()

    job = leaky.get(JOB)
    assert job.status == JobStatus.ERROR, job.result
    assert job.error is not None
    assert job.error.startswith('Stored state does not fit pipeline "billing" (saved with version 1, migrated to 2): ')
    assert 'key "total": not in the state model' in job.error
    assert "make the migrations return version 2's state" in job.error
    assert job.checkpoint is not None
    assert job.checkpoint.state == SAVED


# -- No false positive: every state the engine writes fits the model it was written with.


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Line(BaseModel):
    sku: str
    quantity: int = 1
    price: Decimal = Decimal("0.00")


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    kept: int = 0


class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"] = "dog"
    good: bool = True


class Everything(BaseModel):
    """What a state model may hold: all of it written by the engine, then read back before each phase."""

    name: str
    when: datetime = datetime(2024, 1, 1, tzinfo=UTC)
    ratio: float = 1.0
    tags: set[str] = Field(default_factory=set)
    frozen: frozenset[int] = frozenset()
    pair: tuple[int, str] = (0, "")
    colour: Colour = Colour.RED
    lines: list[Line] = Field(default_factory=list)
    by_sku: dict[str, Line] = Field(default_factory=dict)
    loose: Loose = Field(default_factory=Loose)
    pet: Cat | Dog = Field(default_factory=Cat, discriminator="kind")
    either: int | str = 0
    note: str | None = None
    renamed: int = Field(default=0, validation_alias=AliasChoices("renamed", "old_name"))
    raw: Any = None
    secret: str = Field(default="", exclude=True)
    steps: int = 0

    @field_validator("name")
    @classmethod
    def tidy(cls, value: str) -> str:
        return value.strip().lower()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def line_count(self) -> int:
        return len(self.lines)


class Legacy(BaseModel):
    """A model that takes an old key itself (a before-validator): no key is dropped."""

    total_cents: int = 0

    @model_validator(mode="before")
    @classmethod
    def from_old(cls, data: Any) -> Any:
        if isinstance(data, dict) and "total" in data:
            data = {key: value for key, value in data.items() if key != "total"} | {"total_cents": data["total"]}
        return data


def test_every_state_the_engine_writes_fits_its_own_model(storage: Storage, clock: FakeClock) -> None:
    pipeline: Pipeline[Everything] = Pipeline("everything", state=Everything)

    @pipeline.phase
    def first(ctx: PhaseContext[Everything]) -> Next:
        state = ctx.state
        update = {
            "tags": {"b", "a", "c"},
            "frozen": frozenset({3, 1, 2}),
            "pair": (2, "x"),
            "colour": Colour.BLUE,
            "lines": [Line(sku="A", price=Decimal("1.10")), Line(sku="B", quantity=2)],
            "by_sku": {"a": Line(sku="A")},
            "loose": Loose(kept=1, extra=[1, 2]),  # type: ignore[call-arg]
            "pet": Dog(good=False),
            "either": "seven",
            "raw": {"any": [1, 2.5, None, True]},
            "ratio": 2,
            "steps": state.steps + 1,
        }
        ctx.save_state(state.model_copy(update=update))
        return Next("second", Everything.model_validate({**ctx.state.model_dump(), **update}))

    @pipeline.phase
    def second(ctx: PhaseContext[Everything]) -> WaitFor:
        return WaitFor("go", "third", ctx.state.model_copy(update={"steps": ctx.state.steps + 1}))

    @pipeline.phase
    def third(ctx: PhaseContext[Everything]) -> Done:
        state = ctx.state
        assert state.tags == {"a", "b", "c"}
        assert state.frozen == frozenset({1, 2, 3})
        assert isinstance(state.pet, Dog)
        assert state.lines[0].price == Decimal("1.10")
        assert state.loose.model_extra == {"extra": [1, 2]}
        return Done({"steps": state.steps, "lines": state.line_count, "name": state.name, "ratio": state.ratio})

    legacy: Pipeline[Legacy] = Pipeline("legacy", state=Legacy)

    @legacy.phase
    def wait(ctx: PhaseContext[Legacy]) -> WaitFor:
        return WaitFor("go", "end", {"total": 7})  # saved under the old key: the model takes it itself

    @legacy.phase
    def end(ctx: PhaseContext[Legacy]) -> Done:
        return Done(ctx.state)

    jobs = cairn(pipeline, storage, clock)
    jobs.start("everything", "e-1", state={"name": "  Mixed Case ", "old_name": 5, "secret": "s"})
    jobs.start("everything", "e-2", state={"name": "bare"})  # every optional field left out
    jobs.run_until_idle()
    for job_id in ("e-1", "e-2"):
        jobs.signal(job_id, "go")
    jobs.run_until_idle()

    for job_id in ("e-1", "e-2"):
        job = jobs.get(job_id)
        assert job.status == JobStatus.COMPLETE, job.error
        assert job.result == {"steps": 2, "lines": 2, "name": job.result["name"], "ratio": 2.0}

    old = cairn(legacy, storage, clock)
    old.start("legacy", "l-1")
    old.run_until_idle()
    old.signal("l-1", "go")
    old.run_until_idle()
    assert old.get("l-1").status == JobStatus.COMPLETE, old.get("l-1").error
    assert old.get("l-1").result == {"total_cents": 7}


def test_a_state_with_many_misfits_names_the_first_ten_and_counts_the_rest(storage: Storage, clock: FakeClock) -> None:
    class Wide(BaseModel):
        model_config = ConfigDict(extra="allow")

    class Narrow(BaseModel):
        pass

    wide = cairn(billing(Wide), storage, clock)
    wide.start("billing", JOB, state={f"key{index:02}": index for index in range(25)})
    wide.run_until_idle()
    narrow = cairn(billing(Narrow), storage, clock)

    narrow.signal(JOB, "go")
    narrow.run_until_idle()

    job = narrow.get(JOB)
    assert job.status == JobStatus.ERROR, job.result
    assert job.error is not None
    assert job.error.count("not in the state model") == 10
    assert "; and 15 more: the state model changed without a new state_version" in job.error
