"""A store written for an earlier release of the storage port keeps working: the core contract, a whole job with a
map, pause and cancel, all through the front door, on a store that defines only the methods the port had then."""

from __future__ import annotations

from typing import Any

import pytest

from cairn import Cairn, Done, InlineScheduler, Map, Next, Pipeline
from cairn.adapters import Clock, Job, Storage
from cairn.core.errors import ConfigurationError
from cairn.storage.document import DocumentStorage
from cairn.storage.memory import MemoryStorage
from cairn.testing.contract import JobContract
from tests.contract.earlier_release_store import EarlierReleaseStorage
from tests.support import FakeClock

ITEMS = 7


class TestTheCoreContractOnAStoreOfAnEarlierRelease(JobContract):
    def make_storage(self, clock: Clock) -> Storage:
        return EarlierReleaseStorage(clock=clock)


def _pages() -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("pages")

    @pipeline.phase
    def split(ctx: Any) -> Map:
        return Map([{"page": number} for number in range(ITEMS)], phase="page", then="merge", max_concurrency=3)

    @pipeline.phase
    def page(ctx: Any) -> Done:
        return Done({"words": 10 * int(ctx.state["page"])})

    @pipeline.phase
    def merge(ctx: Any) -> Next:
        return Next("finish", {"words": sum(result["words"] for result in ctx.results)})

    @pipeline.phase
    def finish(ctx: Any) -> Done:
        return Done(ctx.state)

    return pipeline


def _app(store: Storage, clock: FakeClock) -> Cairn:
    return Cairn(_pages(), storage=store, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))


def test_a_job_with_a_map_runs_to_its_end_counting_the_items_from_their_records() -> None:
    clock = FakeClock()
    store = EarlierReleaseStorage(clock=clock)
    app = _app(store, clock)
    app.start("pages", "mapped", state={})
    app.run_until_idle()

    job = app.get("mapped")
    assert job.status.value == "complete", job.error
    assert job.result == {"words": 10 * sum(range(ITEMS))}
    assert job.usage["transitions"] == 3 + ITEMS  # split, merge and finish left their phases; each item counted
    # No map record was written anywhere: merge was started by reading the items' records, and the lanes show none.
    assert store.inner.get_maps("mapped") == store.get_maps("mapped") == []


def test_pause_and_cancel_work_and_an_earlier_entry_is_refused_with_a_clear_error() -> None:
    clock = FakeClock()
    store = EarlierReleaseStorage(clock=clock)
    app = _app(store, clock)
    app.start("pages", "paused", state={})
    assert app.pause("paused", by="alice").status.value == "paused"  # who acted is not kept by such a store
    assert app.cancel("paused", by="bob").status.value == "cancelled"

    app.start("pages", "entered", state={})
    app.run_until_idle()
    assert store.entered("entered", "merge") is not None
    with pytest.raises(ConfigurationError, match=r"EarlierReleaseStorage\.entered takes no 'before'"):
        store.entered("entered", "merge", before=3)  # type: ignore[call-arg]


def test_only_a_method_that_lacks_a_newer_keyword_is_adapted() -> None:
    class Wide(MemoryStorage):
        def pause(self, job_id: str, **keywords: Any) -> Job:
            return super().pause(job_id, **keywords)

    assert not hasattr(Wide.__dict__["pause"], "__wrapped__")  # it takes any keyword: left as written
    assert hasattr(EarlierReleaseStorage.__dict__["pause"], "__wrapped__")  # pause(job_id): adapted
    assert not hasattr(DocumentStorage.__dict__["pause"], "__wrapped__")  # today's signature


def test_a_store_of_an_earlier_release_keeps_no_bulk_operations() -> None:
    assert EarlierReleaseStorage(clock=FakeClock()).bulk_operations() is None
    assert MemoryStorage(clock=FakeClock()).bulk_operations() is None
