"""A map's count and hand-off under an adversary, on every store, through the front door.

Each item is counted exactly once on the map's record (a duplicate message, a finish whose response is
lost), exactly one of two last items finishing at once hands the map off to ``then``, and a hand-off
lost with its worker is made again: by the item's message delivered again, or by the job's next
advance (what the sweep sends).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from cairn import Cairn, Done, JobStatus, Map, PhaseContext, Pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.core.errors import StorageError
from cairn.core.models import FanOut, MapItem, MapMark, MapRecord
from cairn.core.storage_port import Storage
from cairn.storage.delegating import DelegatingStorage
from cairn.testing.faults import SimulatedCrash
from tests.support import FakeClock, RecordingScheduler

JOB = "pages-1"
ITEMS = 6


def _pages(runs: Counter[int], merges: list[Any], *, concurrency: int = 2) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("pages")

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        return Map(list(range(ITEMS)), phase="page", then="merge", max_concurrency=concurrency)

    @pipeline.phase
    def page(ctx: PhaseContext[Any]) -> Done:
        runs[ctx.state] += 1
        return Done(ctx.state * 10)

    @pipeline.phase
    def merge(ctx: PhaseContext[Any]) -> Done:
        merges.append(ctx.results)
        return Done(ctx.results)

    return pipeline


class _Watched(DelegatingStorage):
    """Runs ``after(name, kwargs, result)`` once each call has landed (it may raise, or make other calls)."""

    def __init__(self, inner: Storage) -> None:
        super().__init__(inner)
        self.after: Callable[[str, dict[str, Any]], None] = lambda name, call: None
        self.calls: Counter[str] = Counter()

    def write_item(
        self,
        job_id: str,
        fan_out: str,
        item: MapItem,
        *,
        expected_version: int | None,
        expires_at: int,
        finishes: bool = False,
    ) -> bool:
        written = self.inner.write_item(
            job_id, fan_out, item, expected_version=expected_version, expires_at=expires_at, finishes=finishes
        )
        self.calls["write_item"] += 1
        if written:
            self.after("write_item", {"item": item, "finishes": finishes})
        return written

    def mark_map(self, job_id: str, fan_out: str, mark: MapMark, token: str) -> bool:
        taken = self.inner.mark_map(job_id, fan_out, mark, token)
        if mark == "handed_off":
            self.calls["hand_off"] += 1
            self.after("hand_off", {"taken": taken, "token": token})
        return taken


def _front_door(
    storage: Storage, clock: FakeClock, runs: Counter[int], merges: list[Any], **kwargs: Any
) -> tuple[Cairn, RecordingScheduler]:
    scheduler = RecordingScheduler(clock)
    return Cairn(_pages(runs, merges, **kwargs), storage=storage, scheduler=scheduler), scheduler


def _map_of(jobs: Cairn) -> FanOut:
    fan_out = jobs.get(JOB).fan_out
    assert fan_out is not None
    return fan_out


def _record(storage: Storage, fan_out: FanOut) -> MapRecord:
    record = storage.get_map(JOB, fan_out.id)
    assert record is not None
    return record


def _handed_to_then(scheduler: RecordingScheduler) -> int:
    return sum(1 for scheduled in scheduler.scheduled if scheduled.phase == "merge")


RESULTS = [index * 10 for index in range(ITEMS)]


def test_every_item_message_delivered_twice_counts_each_item_once(storage: Storage, clock: FakeClock) -> None:
    runs: Counter[int] = Counter()
    merges: list[Any] = []
    jobs, scheduler = _front_door(storage, clock, runs, merges)
    jobs.start("pages", JOB, state={})
    jobs.run_until_idle(max_steps=1)  # the map
    fan_out = _map_of(jobs)

    for index in range(ITEMS):  # a second delivery of every item's message, some before the first
        jobs.advance(JOB, phase="page", fan_out=fan_out.id, item=index)
        jobs.advance(JOB, phase="page", fan_out=fan_out.id, item=index)
    jobs.run_until_idle()

    assert jobs.get(JOB).status == JobStatus.COMPLETE
    assert runs == Counter(dict.fromkeys(range(ITEMS), 1))
    assert merges == [RESULTS]
    assert _record(storage, fan_out).done == ITEMS
    assert _handed_to_then(scheduler) == 1


def test_a_finish_whose_response_is_lost_counts_once(storage: Storage, clock: FakeClock) -> None:
    watched = _Watched(storage)
    lost: list[int] = []

    def lose_the_response(name: str, call: dict[str, Any]) -> None:
        if name == "write_item" and call["finishes"]:
            lost.append(call["item"].index)
            raise StorageError("simulated lost response of a finish", retryable=True)

    watched.after = lose_the_response
    runs: Counter[int] = Counter()
    merges: list[Any] = []
    jobs, scheduler = _front_door(watched, clock, runs, merges)
    jobs.start("pages", JOB, state={})
    jobs.run_until_idle()

    assert sorted(lost) == list(range(ITEMS))  # every finish landed, and its worker never heard so
    assert jobs.get(JOB).status == JobStatus.COMPLETE
    assert runs == Counter(dict.fromkeys(range(ITEMS), 1))
    assert merges == [RESULTS]
    assert _record(storage, _fan_out_of(storage)).done == ITEMS
    assert _handed_to_then(scheduler) == 1


def _fan_out_of(storage: Storage) -> FanOut:
    [record] = storage.get_maps(JOB)
    return record.fan_out


def test_of_two_last_items_finishing_at_once_exactly_one_hands_off(storage: Storage, clock: FakeClock) -> None:
    both_finished, both_read = threading.Barrier(2, timeout=30), threading.Barrier(2, timeout=30)

    class ReadTheCountTogether(_Watched):
        """The two last workers read the map's count once both finishes have landed, and neither goes on
        until both have read it: each sees every item done and no hand-off yet."""

        together = False

        def get_map(self, job_id: str, fan_out: str) -> MapRecord | None:
            if not self.together:
                return self.inner.get_map(job_id, fan_out)
            both_finished.wait()
            record = self.inner.get_map(job_id, fan_out)
            both_read.wait()
            return record

    watched = ReadTheCountTogether(storage)
    runs: Counter[int] = Counter()
    merges: list[Any] = []
    jobs, scheduler = _front_door(watched, clock, runs, merges, concurrency=ITEMS)
    jobs.start("pages", JOB, state={})
    jobs.run_until_idle(max_steps=1)  # the map: every item is scheduled at once
    fan_out = _map_of(jobs)
    for index in range(ITEMS - 2):
        jobs.advance(JOB, phase="page", fan_out=fan_out.id, item=index)
    assert _record(storage, fan_out).done == ITEMS - 2

    watched.together = True
    workers = [
        threading.Thread(target=jobs.advance, args=(JOB,), kwargs={"phase": "page", "fan_out": fan_out.id, "item": i})
        for i in (ITEMS - 2, ITEMS - 1)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)

    assert watched.calls["hand_off"] == 2  # both saw every item done, and both asked for the hand-off ...
    assert _handed_to_then(scheduler) == 1  # ... which one of them took
    watched.together = False
    jobs.run_until_idle()  # the items' first messages (now duplicates), then the one hand-off
    assert jobs.get(JOB).status == JobStatus.COMPLETE
    assert merges == [RESULTS]
    assert runs == Counter(dict.fromkeys(range(ITEMS), 1))
    assert _handed_to_then(scheduler) == 1


def test_a_hand_off_lost_with_its_worker_is_made_by_the_jobs_next_advance(storage: Storage, clock: FakeClock) -> None:
    watched = _Watched(storage)

    def die_after_taking_the_hand_off(name: str, call: dict[str, Any]) -> None:
        if name == "hand_off" and call["taken"]:
            raise SimulatedCrash("the worker died after taking the hand-off, before scheduling then")

    watched.after = die_after_taking_the_hand_off
    runs: Counter[int] = Counter()
    merges: list[Any] = []
    jobs, scheduler = _front_door(watched, clock, runs, merges)
    jobs.start("pages", JOB, state={})
    with pytest.raises(SimulatedCrash):
        jobs.run_until_idle()
    watched.after = lambda name, call: None
    fan_out = _map_of(jobs)
    assert _record(storage, fan_out).done == ITEMS
    assert _handed_to_then(scheduler) == 0

    jobs.advance(JOB, phase="page", fan_out=fan_out.id, item=ITEMS - 1)  # its message again: the hand-off is taken
    jobs.run_until_idle()
    assert jobs.get(JOB).status == JobStatus.RUNNING
    assert merges == []

    clock.advance(300)  # idle past the sweep's threshold: the sweep (DynamoDB) sees it stalled at then
    if isinstance(storage, DynamoDBStorage):
        assert [stalled.next_phase for stalled in storage.stalled_jobs(idle_seconds=120)] == ["merge"]
    jobs.advance(JOB, phase="merge")  # what the sweep sends
    jobs.run_until_idle()
    assert jobs.get(JOB).status == JobStatus.COMPLETE
    assert merges == [RESULTS]
    assert runs == Counter(dict.fromkeys(range(ITEMS), 1))


def test_a_death_between_the_last_finish_and_its_hand_off_is_healed_by_its_message_again(
    storage: Storage, clock: FakeClock
) -> None:
    watched = _Watched(storage)
    last = ITEMS - 1

    def die_after_the_last_finish(name: str, call: dict[str, Any]) -> None:
        if name == "write_item" and call["finishes"] and call["item"].index == last:
            raise SimulatedCrash("the worker died after finishing the last item")

    watched.after = die_after_the_last_finish
    runs: Counter[int] = Counter()
    merges: list[Any] = []
    jobs, scheduler = _front_door(watched, clock, runs, merges)
    jobs.start("pages", JOB, state={})
    with pytest.raises(SimulatedCrash):
        jobs.run_until_idle()
    watched.after = lambda name, call: None
    fan_out = _map_of(jobs)
    assert _record(storage, fan_out).done == ITEMS
    assert _handed_to_then(scheduler) == 0

    jobs.advance(JOB, phase="page", fan_out=fan_out.id, item=last)  # the invoke retried, or the message again
    jobs.run_until_idle()
    assert jobs.get(JOB).status == JobStatus.COMPLETE
    assert merges == [RESULTS]
    assert _handed_to_then(scheduler) == 1
    assert runs == Counter(dict.fromkeys(range(ITEMS), 1))


def test_a_hand_off_refused_while_a_recovery_holds_then_is_made_when_it_lets_go(
    storage: Storage, clock: FakeClock
) -> None:
    runs: Counter[int] = Counter()
    merges: list[Any] = []

    class LastItemMeanwhile(DelegatingStorage):
        """While the recovery's run of then reads the records, the last item finishes on another worker and
        its hand-off's advance arrives, finds then claimed, and is gone."""

        armed = False

        def get_items(self, job_id: str, fan_out: str) -> list[MapItem]:
            items = self.inner.get_items(job_id, fan_out)
            if self.armed:
                self.armed = False
                jobs.run_until_idle()  # the last item's message, then its hand-off's advance (refused)
            return items

    watched = LastItemMeanwhile(storage)
    jobs, scheduler = _front_door(watched, clock, runs, merges, concurrency=1)
    jobs.start("pages", JOB, state={})
    jobs.run_until_idle(max_steps=ITEMS)  # the map and every item but the last, whose message is queued
    fan_out = _map_of(jobs)
    assert _record(storage, fan_out).done == ITEMS - 1

    watched.armed = True
    jobs.advance(JOB, phase="merge")  # the sweep's advance: claims then, finds an item unfinished, lets go
    assert _record(storage, fan_out).done == ITEMS
    assert _handed_to_then(scheduler) == 2  # the last item's hand-off (refused), then the recovery's
    jobs.run_until_idle()

    assert jobs.get(JOB).status == JobStatus.COMPLETE
    assert merges == [RESULTS]
    assert runs == Counter(dict.fromkeys(range(ITEMS), 1))
