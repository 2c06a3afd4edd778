"""``async def`` phases and tools: the one adapter that lets the rest of cairn call them as plain functions.

A phase (or an agent tool) may be a coroutine function. :func:`as_sync` turns it into a plain function that runs
the coroutine to completion on an event loop of its own (``asyncio.run``): one loop per phase run, so in a
deployed stack one loop per Lambda invocation, used by everything the phase awaits and closed when it returns.
Everything else (the claim, ``save_state``, the commit, retries, maps, the test kit's clock and crash injection)
sees a plain function and behaves exactly as for a plain phase.

The context's methods stay plain (``ctx.save_state``, ``ctx.step``...): each is one quick store write, made from
inside the loop. Called where an event loop is already running in this thread (an async test calling
``run_until_idle``), the coroutine runs on a loop of its own in a short-lived thread, since a loop cannot be
entered twice.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

_R = TypeVar("_R")


def is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives a coroutine: an ``async def`` function, or an object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


def run_to_completion(awaitable: Awaitable[_R]) -> _R:
    """Run ``awaitable`` to its end on a new event loop and return what it returned (or raise what it raised)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop running here: the usual case, a phase run by a worker
        return asyncio.run(_awaited(awaitable))
    outcome: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(asyncio.run(_awaited(awaitable)))
        except BaseException as exc:  # handed to the caller's thread: a simulated crash passes on as it is
            failure.append(exc)

    worker = threading.Thread(target=run, name="cairn-async-phase")
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
    result: _R = outcome[0]
    return result


async def _awaited(awaitable: Awaitable[_R]) -> _R:
    return await awaitable


def as_sync(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as a plain function: an async one runs to completion on each call (:func:`run_to_completion`).

    A plain function is returned as it is. The wrapper keeps ``fn``'s name and module (code versions and the
    map phases found in a module's source read them).
    """
    if not is_async(fn):
        return fn

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        return run_to_completion(fn(*args, **kwargs))

    return call
