"""Exactly-once effects through the test kit: ``ctx.step`` keeps a result with the checkpoint before returning it,
``ctx.idempotency_key`` names the run of the phase (the same on a retry or a resume, another on a rerun or a start
over), and the window between an effect and its save is closed by the key."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from cairn import Done, JobStatus, Map, Next, PhaseContext, Pipeline, RetryPolicy
from cairn.storage.file import FileStorage
from cairn.testing.plugin import LocalCairns, SimulatedCrash, crash_on


class FakeCard:
    """A card API that honours idempotency keys, as a payment API does: a key seen before charges nothing."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.charges: dict[str, str] = {}

    def charge(self, amount: int, key: str) -> dict[str, Any]:
        self.calls.append(key)
        charge = self.charges.setdefault(key, f"ch_{len(self.charges) + 1}")
        return {"charge": charge, "amount": amount}


def _checkout(card: FakeCard, keys: list[str]) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("checkout")

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=1))
    async def pay(ctx: PhaseContext[Any]) -> Next:
        key = ctx.idempotency_key("charge")
        keys.append(key)
        receipt = await ctx.step_async("charge", lambda: card.charge(ctx.state["amount"], key))
        return Next("ship", {**ctx.state, "receipt": receipt})

    @pipeline.phase
    def ship(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.state["receipt"])

    return pipeline


def test_a_crash_after_the_step_charges_the_card_once_and_the_retry_gets_the_kept_result(
    cairn_local: LocalCairns,
) -> None:
    card, keys = FakeCard(), list[str]()
    pipeline = _checkout(card, keys)
    app = cairn_local(pipeline, storage=crash_on("commit", nth=1))  # dies committing "pay", after its step
    app.start(pipeline, "order-1", state={"amount": 40})
    with pytest.raises(SimulatedCrash):
        app.run_until_idle()
    app.retry("order-1")
    app.run_until_idle()

    assert app.get("order-1").result == {"charge": "ch_1", "amount": 40}
    assert len(card.calls) == 1  # the retry read the kept result: no second call
    assert len(keys) == 2
    assert keys[0] == keys[1]
    assert re.fullmatch(r"[A-Za-z0-9-]{1,64}", keys[0])


def test_a_crash_between_the_effect_and_its_save_calls_again_with_the_same_key(cairn_local: LocalCairns) -> None:
    card, keys = FakeCard(), list[str]()
    pipeline = _checkout(card, keys)
    # save 1 keeps the run's key id, save 2 the step's result: dying there is the window
    app = cairn_local(pipeline, storage=crash_on("save", nth=2))
    app.start(pipeline, "order-1", state={"amount": 40})
    with pytest.raises(SimulatedCrash):
        app.run_until_idle()
    app.retry("order-1")
    app.run_until_idle()

    assert len(card.calls) == 2
    assert card.calls[0] == card.calls[1]  # called again, with the same key
    assert len(card.charges) == 1  # so the card API charged once
    assert app.get("order-1").result == {"charge": "ch_1", "amount": 40}


def test_the_key_is_kept_by_a_retry_and_a_resume_and_changes_on_a_rerun_and_a_start_over(
    cairn_local: LocalCairns,
) -> None:
    pipeline: Pipeline[Any] = Pipeline("keys")
    keys: list[str] = []

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=1))
    def call(ctx: PhaseContext[Any]) -> Done:
        keys.append(ctx.idempotency_key("api"))
        if len(keys) <= 2:
            raise ConnectionError("down")
        assert ctx.idempotency_key("other") != keys[-1]  # each name its own key
        return Done(keys[-1])

    app = cairn_local(pipeline)
    app.start(pipeline, "k-1", state={})
    app.run_until_idle()  # attempt 1 fails, the retry (attempt 2) fails: error
    assert app.get("k-1").status == JobStatus.ERROR
    app.retry("k-1")  # a resume of this run of the phase
    app.run_until_idle()
    assert len(keys) == 3
    assert len(set(keys)) == 1

    app.retry("k-1", mode="from", phase="call")
    app.run_until_idle()
    app.retry("k-1", mode="full")
    app.run_until_idle()
    rerun, started_over = keys[3], keys[4]
    assert len({keys[0], rerun, started_over}) == 3
    assert app.get("k-1").result == started_over


def test_a_save_state_after_a_step_keeps_it_and_steps_and_keys_end_with_the_run(cairn_local: LocalCairns) -> None:
    pipeline: Pipeline[Any] = Pipeline("loop")
    calls: list[int] = []
    keys: dict[int, set[str]] = {}

    @pipeline.phase
    def turn(ctx: PhaseContext[Any]) -> Next | Done:
        keys.setdefault(ctx.state["turn"], set()).add(ctx.idempotency_key("fetch"))

        def fetch() -> int:
            calls.append(ctx.state["turn"])
            return int(ctx.state["turn"]) * 10

        value = ctx.step("fetch", fetch)
        ctx.save_state({**ctx.state, "fetched": value})
        if ctx.state["turn"] == 2:
            return Done(value)
        return Next("turn", {"turn": ctx.state["turn"] + 1})  # enters the phase again: a new run, no steps

    app = cairn_local(pipeline, storage=crash_on("commit", nth=2))  # dies committing turn 1's second run
    app.start(pipeline, "l-1", state={"turn": 0})
    with pytest.raises(SimulatedCrash):
        app.run_until_idle()
    checkpoint = app.get("l-1").checkpoint
    assert checkpoint is not None
    assert checkpoint.state == {"turn": 1, "fetched": 10}
    assert checkpoint.phase_run is not None
    assert checkpoint.phase_run.steps == {"fetch": 10}
    app.retry("l-1")
    app.run_until_idle()

    assert app.get("l-1").result == 20
    assert calls == [0, 1, 2]  # each run of the phase fetched once; the retry of turn 1 read its kept result
    assert [len(keys[turn]) for turn in (0, 1, 2)] == [1, 1, 1]  # turn 1's retry derived its key again
    assert len(set.union(*keys.values())) == 3  # each run its own, on a clock that never moved


def test_a_step_name_used_twice_and_a_result_that_is_not_json_are_clear_errors(cairn_local: LocalCairns) -> None:
    twice: Pipeline[Any] = Pipeline("twice")
    opaque: Pipeline[Any] = Pipeline("opaque")

    @twice.phase
    def same(ctx: PhaseContext[Any]) -> Done:
        ctx.step("same", lambda: 1)
        ctx.step("same", lambda: 2)
        return Done(None)

    @opaque.phase
    def thing(ctx: PhaseContext[Any]) -> Done:
        ctx.step("thing", object)
        return Done(None)

    async def charge() -> str:
        return "charged"

    unawaited: Pipeline[Any] = Pipeline("unawaited")
    unawaited.phase(name="pay")(lambda ctx: Done(ctx.step("pay", lambda: charge())))

    app = cairn_local([twice, opaque, unawaited])
    app.start(twice, "t-1", state={})
    app.start(opaque, "o-1", state={})
    app.start(unawaited, "u-1", state={})
    app.run_until_idle()
    assert 'use "await ctx.step_async(name, fn)"' in (app.get("u-1").error or "")

    assert 'Step "same" ran already in this run of the phase' in (app.get("t-1").error or "")
    assert 'The result of step "thing"' in (app.get("o-1").error or "")


def test_a_map_item_has_a_key_kept_across_its_retries_and_no_steps(cairn_local: LocalCairns) -> None:
    pipeline: Pipeline[Any] = Pipeline("items")
    keys: dict[int, list[str]] = {}

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        return Map([{"n": 0}, {"n": 1}], phase="send", then="end")

    @pipeline.phase(retry=RetryPolicy(max_attempts=2, backoff=1))
    def send(ctx: PhaseContext[Any]) -> Done:
        assert ctx.item is not None
        keys.setdefault(ctx.item, []).append(ctx.idempotency_key("mail"))
        if ctx.attempt == 1:
            raise ConnectionError("down")
        with pytest.raises(Exception, match="a map's item keeps no checkpoint"):
            ctx.step("mail", lambda: None)
        return Done(None)

    @pipeline.phase
    def end(ctx: PhaseContext[Any]) -> Done:
        return Done(len(ctx.results or []))

    app = cairn_local(pipeline)
    app.start(pipeline, "i-1", state={})
    app.run_until_idle()

    assert app.get("i-1").result == 2
    assert [len(set(keys[0])), len(set(keys[1]))] == [1, 1]  # each item's two attempts: one key
    assert keys[0][0] != keys[1][0]


@pytest.mark.parametrize("store", ["dynamodb", "file"])
def test_on_a_durable_store_the_step_and_the_key_are_kept_through_a_crash(
    store: str, cairn_local: LocalCairns, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    card, keys = FakeCard(), list[str]()
    pipeline = _checkout(card, keys)
    storage = request.getfixturevalue("cairn_dynamodb") if store == "dynamodb" else FileStorage(tmp_path)
    app = cairn_local(pipeline, storage=crash_on("commit", nth=1, storage=storage))
    app.start(pipeline, "order-1", state={"amount": 40})
    with pytest.raises(SimulatedCrash):
        app.run_until_idle()
    app.retry("order-1")
    app.run_until_idle()

    assert app.get("order-1").result == {"charge": "ch_1", "amount": 40}
    assert len(card.calls) == 1
    assert keys[0] == keys[1]
