"""The in-process scheduler: order, delays, counting, and what it refuses."""

from __future__ import annotations

import pytest

from cairn import CairnError, InlineScheduler, InvalidInputError
from cairn.testing.faults import SimulatedCrash
from tests.support import FakeClock


class Recorder:
    """Stands in for advance_phase: remembers each call and the time it was made."""

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.clock = clock
        self.calls: list[tuple[str, str]] = []
        self.times: list[int] = []

    def __call__(self, job_id: str, *, phase: str, sequence: int | None = None, **extra: object) -> None:
        self.calls.append((job_id, phase))
        if self.clock is not None:
            self.times.append(self.clock())


def _scheduler(clock: FakeClock) -> tuple[InlineScheduler, Recorder]:
    scheduler = InlineScheduler(now=clock.monotonic, sleep=clock.sleep)
    recorder = Recorder(clock)
    scheduler.bind(recorder)
    return scheduler, recorder


def test_advances_run_first_in_first_out(clock: FakeClock) -> None:
    scheduler, recorder = _scheduler(clock)
    for job_id, phase in [("j1", "a"), ("j2", "a"), ("j1", "b"), ("j3", "z")]:
        scheduler.schedule_advance(job_id, phase=phase)

    assert scheduler.drain() == 4

    assert recorder.calls == [("j1", "a"), ("j2", "a"), ("j1", "b"), ("j3", "z")]


def test_delays_are_honoured_in_order(clock: FakeClock) -> None:
    scheduler, recorder = _scheduler(clock)
    t0 = clock()
    scheduler.schedule_advance("late", phase="p", delay=5.0)
    scheduler.schedule_advance("soon", phase="p", delay=1.0)
    scheduler.schedule_advance("now", phase="p")
    scheduler.schedule_advance("also-soon", phase="p", delay=1.0)

    assert scheduler.drain() == 4

    assert [job_id for job_id, _ in recorder.calls] == ["now", "soon", "also-soon", "late"]
    assert [at - t0 for at in recorder.times] == [0, 1000, 1000, 5000]


def test_a_delay_already_elapsed_does_not_wait(clock: FakeClock) -> None:
    slept: list[float] = []
    scheduler = InlineScheduler(now=clock.monotonic, sleep=slept.append)
    scheduler.bind(Recorder())
    scheduler.schedule_advance("j1", phase="p", delay=2.0)
    clock.advance(3)

    scheduler.drain()

    assert slept == []


def test_advances_scheduled_while_draining_are_run_by_the_same_drain(clock: FakeClock) -> None:
    scheduler = InlineScheduler(now=clock.monotonic, sleep=clock.sleep)
    seen: list[str] = []

    def chain(job_id: str, *, phase: str, sequence: int | None = None, **extra: object) -> None:
        seen.append(phase)
        if phase == "a":
            scheduler.schedule_advance(job_id, phase="b", delay=2.0)
        elif phase == "b":
            scheduler.schedule_advance(job_id, phase="c")

    scheduler.bind(chain)
    scheduler.schedule_advance("j1", phase="a")

    assert scheduler.drain() == 3
    assert seen == ["a", "b", "c"]
    assert scheduler.pending() == 0


def test_pending_counts_queued_advances(clock: FakeClock) -> None:
    scheduler, _ = _scheduler(clock)
    assert scheduler.pending() == 0

    scheduler.schedule_advance("j1", phase="a")
    scheduler.schedule_advance("j1", phase="a")
    scheduler.schedule_advance("j2", phase="b", delay=10.0)

    assert scheduler.pending() == 3
    scheduler.drain(max_steps=1)
    assert scheduler.pending() == 2
    scheduler.drain()
    assert scheduler.pending() == 0


def test_drain_returns_how_many_ran(clock: FakeClock) -> None:
    scheduler, recorder = _scheduler(clock)
    assert scheduler.drain() == 0

    for index in range(5):
        scheduler.schedule_advance(f"j{index}", phase="p")

    assert scheduler.drain(max_steps=2) == 2
    assert scheduler.drain() == 3
    assert len(recorder.calls) == 5


def test_drain_without_bind_is_refused(clock: FakeClock) -> None:
    scheduler = InlineScheduler(now=clock.monotonic, sleep=clock.sleep)
    scheduler.schedule_advance("j1", phase="p")

    with pytest.raises(CairnError):
        scheduler.drain()

    assert scheduler.pending() == 1


@pytest.mark.parametrize("delay", [-0.001, -1.0, -3600.0])
def test_a_negative_delay_is_refused(clock: FakeClock, delay: float) -> None:
    scheduler, _ = _scheduler(clock)

    with pytest.raises(InvalidInputError):
        scheduler.schedule_advance("j1", phase="p", delay=delay)

    assert scheduler.pending() == 0


def test_a_process_death_passes_through_drain_untouched(clock: FakeClock) -> None:
    scheduler = InlineScheduler(now=clock.monotonic, sleep=clock.sleep)
    crash = SimulatedCrash("killed")
    seen: list[str] = []

    def dies_on_b(job_id: str, *, phase: str, sequence: int | None = None, **extra: object) -> None:
        seen.append(phase)
        if phase == "b":
            raise crash

    scheduler.bind(dies_on_b)
    for phase in ("a", "b", "c"):
        scheduler.schedule_advance("j1", phase=phase)

    with pytest.raises(SimulatedCrash) as info:
        scheduler.drain()

    assert info.value is crash
    assert seen == ["a", "b"]
    assert scheduler.pending() == 1, "the advance that died is gone; the rest stay queued"
    assert scheduler.drain() == 1
    assert seen == ["a", "b", "c"]


def test_the_default_clock_runs_undelayed_advances_without_sleeping() -> None:
    scheduler = InlineScheduler()
    recorder = Recorder()
    scheduler.bind(recorder)
    scheduler.schedule_advance("j1", phase="a")
    scheduler.schedule_advance("j1", phase="b", delay=0.01)

    assert scheduler.drain() == 2
    assert recorder.calls == [("j1", "a"), ("j1", "b")]
