"""What a user writes into the bundle of tests/template/test_own_bundle.py after ``cairn new orders``: the orders
pipeline with an ``async def`` phase whose effect (a charge) is made exactly once through ``ctx.idempotency_key``
and ``ctx.step``, and its tests on the test kit (crash injection after the step, and in the window before its
save). The effect is recorded by a payment API that honours idempotency keys, as a real one does."""

ORDERS_PIPELINE = '''"""The orders pipeline: ``start`` charges for the order once, ``finish`` processes the items."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, Field

from cairn import Done, Next, PhaseContext, Pipeline, RetryPolicy

CALLS: list[str] = []
"""The idempotency key of every call made to the payment API."""
CHARGES: dict[str, dict[str, Any]] = {}
"""The payment API's charges by idempotency key: a key seen before charges nothing and gets the same receipt."""


class OrdersState(BaseModel):
    """The job's state: the items, the charge's receipt, the results so far."""

    items: list[str] = Field(default_factory=list)
    receipt: dict[str, Any] = Field(default_factory=dict)
    results: list[str] = Field(default_factory=list)


pipeline = Pipeline("orders", state=OrdersState)


def charge(amount: int, key: str) -> dict[str, Any]:
    """The payment API, as a real one behaves with an idempotency key."""
    CALLS.append(key)
    return CHARGES.setdefault(key, {"charge": f"ch_{len(CHARGES) + 1}", "amount": amount, "key": key})


@pipeline.phase(timeout=30, memory=256, retry=RetryPolicy(max_attempts=2))
async def start(ctx: PhaseContext[OrdersState]) -> Next:
    """Charge one unit per item, once per run of this phase, then hand the items to ``finish``."""
    items = [item for item in ctx.state.items if item.strip()]
    key = ctx.idempotency_key("charge")
    await asyncio.sleep(0)  # an async client's call would be awaited here
    receipt = ctx.step("charge", lambda: charge(len(items), key))
    return Next("finish", ctx.state.model_copy(update={"items": items, "receipt": receipt, "results": []}))


@pipeline.phase(timeout=120, memory=512, retry=RetryPolicy(max_attempts=3, backoff=2.0))
def finish(ctx: PhaseContext[OrdersState]) -> Done:
    """Process the items, saving after each one; the result carries the receipt and every item's output."""
    state = ctx.state
    for item in state.items[len(state.results) :]:
        state = state.model_copy(update={"results": [*state.results, item.upper()]})
        ctx.save_state(state)
    return Done({"receipt": state.receipt, "results": state.results})
'''
"""``functions/orders/pipeline.py``: ``start`` is async and charges once per run; the job's result carries the
receipt ``ctx.step`` kept."""

ORDERS_TESTS = '''"""The orders pipeline on the test kit: a worker that dies after the charge never charges twice."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from cairn import JobStatus
from cairn.testing.plugin import LocalCairns, SimulatedCrash, crash_on
from orders import pipeline as module
from orders.pipeline import pipeline


@pytest.fixture(autouse=True)
def payment_api() -> Iterator[None]:
    """A payment API of the test's own: no call or charge of another test."""
    module.CALLS.clear()
    module.CHARGES.clear()
    yield


def test_a_crash_after_the_charge_step_retries_with_the_kept_receipt(cairn_local: LocalCairns) -> None:
    app = cairn_local(pipeline, storage=crash_on("commit", nth=1))  # dies committing "start", after its step
    app.start(pipeline, "order-1", state={"items": ["a", " ", "b"]})
    with pytest.raises(SimulatedCrash):
        app.run_until_idle()
    app.retry("order-1")
    app.run_until_idle()

    job = app.get("order-1")
    assert job.status == JobStatus.COMPLETE
    assert len(module.CALLS) == 1  # the retry got the step's kept result: no second call
    (key,) = module.CALLS
    assert re.fullmatch(r"cairn-[0-9a-f]{32}", key)
    assert job.result == {"receipt": {"charge": "ch_1", "amount": 2, "key": key}, "results": ["A", "B"]}


def test_a_crash_between_the_charge_and_its_save_calls_again_with_the_same_key(cairn_local: LocalCairns) -> None:
    app = cairn_local(pipeline, storage=crash_on("save", nth=2))  # save 1 keeps the key's run, save 2 the receipt
    app.start(pipeline, "order-2", state={"items": ["a"]})
    with pytest.raises(SimulatedCrash):
        app.run_until_idle()
    app.retry("order-2")
    app.run_until_idle()

    assert len(module.CALLS) == 2
    assert module.CALLS[0] == module.CALLS[1]  # the same key on the retry
    assert len(module.CHARGES) == 1  # so the payment API charged once
    assert app.get("order-2").result == {"receipt": module.CHARGES[module.CALLS[0]], "results": ["A"]}
'''
"""``tests/pipelines/test_orders.py``: the bundle user's tests of the charge, on the test kit's fixtures."""

ORDERS_TEST_NAMES = (
    "test_a_crash_after_the_charge_step_retries_with_the_kept_receipt",
    "test_a_crash_between_the_charge_and_its_save_calls_again_with_the_same_key",
)
"""The tests above, which the bundle's ``pytest`` must pass."""
