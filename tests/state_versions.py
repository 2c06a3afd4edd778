"""The pipelines of the state-migration tests: "intake" at version 1, and at version 3 with its migrations."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict

from cairn import Done, Fail, Next, PhaseContext, Pipeline, WaitFor

JOB = "intake-1"
#: The v1 state ``{"document": "lease.pdf", "pages": 12}`` as the v3 model sees it once migrated.
MIGRATED = {"title": "lease.pdf", "page_count": 12, "reviewed": False}


class IntakeV1(BaseModel):
    """Version 1: the document's name and its page count."""

    model_config = ConfigDict(extra="forbid")
    document: str
    pages: int


class IntakeV3(BaseModel):
    """Version 3: ``document`` renamed ``title`` (v2), ``pages`` renamed ``page_count`` and ``reviewed`` added (v3)."""

    model_config = ConfigDict(extra="forbid")
    title: str
    page_count: int
    reviewed: bool


def v1_pipeline(*, fail_at_check: bool = False) -> Pipeline[IntakeV1]:
    """``read`` -> ``check`` (fails when asked) -> ``ask`` (waits for "go") -> ``finish``."""
    pipeline: Pipeline[IntakeV1] = Pipeline("intake", state=IntakeV1)

    @pipeline.phase
    def read(ctx: PhaseContext[IntakeV1]) -> Next:
        return Next("check", ctx.state)

    @pipeline.phase
    def check(ctx: PhaseContext[IntakeV1]) -> Next | Fail:
        return Fail("the checker is down") if fail_at_check else Next("ask", ctx.state)

    @pipeline.phase
    def ask(ctx: PhaseContext[IntakeV1]) -> WaitFor:
        return WaitFor("go", "finish", ctx.state)

    @pipeline.phase
    def finish(ctx: PhaseContext[IntakeV1]) -> Done:
        return Done(ctx.state)

    return pipeline


class V3:
    """The version-3 pipeline (``check`` renamed ``verify``), counting its migrations' calls and what phases saw."""

    def __init__(self, *, missing: int | None = None, broken: int | None = None) -> None:
        self.calls: Counter[int] = Counter()
        self.seen: list[tuple[str, Any]] = []
        migrations = {1: self.v1_to_v2, 2: self.v2_to_v3}
        if broken is not None:
            migrations[broken] = self.broken
        if missing is not None:
            del migrations[missing]
        self.pipeline: Pipeline[IntakeV3] = Pipeline(
            "intake", state=IntakeV3, state_version=3, migrations=migrations, aliases={"check": "verify"}
        )
        self._phases()

    def v1_to_v2(self, state: dict[str, Any]) -> dict[str, Any]:
        self.calls[1] += 1
        return {"title": state["document"], "pages": state["pages"]}

    def v2_to_v3(self, state: dict[str, Any]) -> IntakeV3:
        self.calls[2] += 1
        return IntakeV3(title=state["title"], page_count=state["pages"], reviewed=False)

    def broken(self, state: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("document")

    def _phases(self) -> None:
        pipeline = self.pipeline

        def record(ctx: PhaseContext[IntakeV3]) -> IntakeV3:
            assert isinstance(ctx.state, IntakeV3)
            self.seen.append((ctx.phase, ctx.state.model_dump()))
            return ctx.state

        @pipeline.phase
        def read(ctx: PhaseContext[IntakeV3]) -> Next:
            return Next("verify", record(ctx))

        @pipeline.phase
        def verify(ctx: PhaseContext[IntakeV3]) -> Next:
            return Next("ask", record(ctx).model_copy(update={"reviewed": True}))

        @pipeline.phase
        def ask(ctx: PhaseContext[IntakeV3]) -> WaitFor:
            return WaitFor("go", "finish", record(ctx))

        @pipeline.phase
        def finish(ctx: PhaseContext[IntakeV3]) -> Done:
            return Done(record(ctx))
