"""An ``async def`` phase with ``ctx.step`` and ``ctx.idempotency_key`` through the deployed path, in-process: the
API, the phase functions (the generic phase handler) and the scheduler on moto."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from cairn import Done, Next, PhaseContext, Pipeline
from cairn.testing.api import ApiClient

charged: list[str] = []  # the keys the fake card API was called with

checkout: Pipeline[Any] = Pipeline("checkout-async")


@checkout.phase
async def pay(ctx: PhaseContext[Any]) -> Next:
    key = ctx.idempotency_key("charge")

    async def charge() -> dict[str, Any]:
        await asyncio.sleep(0)
        charged.append(key)
        return {"charge": "ch_1", "key": key}

    receipt = await ctx.step_async("charge", charge)
    return Next("ship", {"receipt": receipt})


@checkout.phase
async def ship(ctx: PhaseContext[Any]) -> Done:
    return Done(ctx.state["receipt"])


def test_an_async_phase_keeps_its_step_through_the_phase_functions(cairn_api: Callable[..., ApiClient]) -> None:
    api = cairn_api(checkout)
    assert api.post("/jobs", {"pipeline": "checkout-async", "jobId": "order-1", "state": {}}).status == 202
    api.run_until_idle()

    result = api.get("/jobs/order-1").body["result"]
    assert result["charge"] == "ch_1"
    assert re.fullmatch(r"cairn-[0-9a-f]{32}", result["key"])
    assert charged == [result["key"]]  # called once, with the key it returned
