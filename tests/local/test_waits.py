"""``cairn dev --skip-waits``: a two-hour ``Sleep`` completes without two hours' wait, the functions' clock skipped
past it.

The pipeline is ``napping`` (tests/local/napping_pipeline.py): ``doze`` sleeps ``seconds``, ``wake`` says when it
woke. Also the clock hook the workers read (:mod:`cairn.core.clock`) and the skipper's rules, without a stack.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cairn.core.clock import OFFSET_FILE_VARIABLE, OffsetFile
from cairn.dev import time_skipping
from cairn.dev.logs import DevLog
from cairn.dev.time_skipping import TimeSkipper
from tests.local.devstack import HUNG, DevStack, dev_stack, environment

pytestmark = pytest.mark.xdist_group("local-waits")

TWO_HOURS_MS = 7_200_000
DELAY_ROUNDING_MS = 1000
"""How much later than due a delayed advance may come on the skipped clock: its ``DelaySeconds`` is rounded up."""


def slept(view: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The job's ``doze`` and ``wake`` phase records, checked to be a sleep then a completion."""
    assert view["status"] == "complete", view
    doze, wake = view["phases"]
    assert (doze["phase"], doze["outcome"], doze["nextPhase"]) == ("doze", "sleep", "wake")
    assert (wake["phase"], wake["outcome"]) == ("wake", "done")
    return doze, wake


def real_ms(before: dict[str, Any], after: dict[str, Any]) -> int:
    """The real time that passed between two reads of the stack's clock (``GET /_cairn/info``), by the stack's own
    count: its time less its offset. Not a figure the tests bound: what a skip did not cover."""
    return int((after["nowMs"] - after["offsetMs"]) - (before["nowMs"] - before["offsetMs"]))


def seconds_of(text: str) -> float:
    """``2h00m00s``, ``15m00s``, ``4.5s`` (as the skipper says them) in seconds."""
    found = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?([\d.]+)s", text)
    assert found, text
    hours, minutes, seconds = found.groups()
    return int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(seconds)


def test_a_two_hour_sleep_completes_by_skipping_the_stacks_clock_on_the_direct_driver(
    skipping_stack: DevStack,
) -> None:
    clock = skipping_stack.admin("info")["clock"]
    assert clock["skipWaits"] is True
    assert "skip waits    on" in skipping_stack.output()
    skipping_stack.api.start("napping", state={"seconds": 7200}, job_id="nap-2h")
    view = skipping_stack.wait_for("nap-2h", timeout=HUNG)  # two hours in real time would be hung
    doze, wake = slept(view)
    assert wake["startedAt"] - doze["endedAt"] >= TWO_HOURS_MS
    assert view["result"]["woke_at"] - view["result"]["dozed_at"] >= TWO_HOURS_MS
    entries = skipping_stack.api.log("nap-2h")["entries"]
    asleep = next(entry for entry in entries if entry["message"] == 'Sleeping 7200s before phase "wake"')
    awake = next(entry for entry in entries if entry["message"].startswith("awake after"))
    assert awake["timestamp"] - asleep["timestamp"] >= TWO_HOURS_MS
    after = skipping_stack.admin("info")["clock"]
    # The skips carried the job over its two hours: all of them but the real time the stack saw pass meanwhile
    # (1 s for the clocks of other processes, read in whole ms).
    skipped, real = after["offsetMs"] - clock["offsetMs"], real_ms(clock, after)
    assert skipped >= (wake["startedAt"] - doze["endedAt"]) - real - 1000, (skipped, real)
    assert after["skips"] - clock["skips"] >= 8  # DelaySeconds is at most 900: the scheduler queued it again
    assert after["nowMs"] >= view["result"]["woke_at"]
    assert "skipped 15m00s" in skipping_stack.output()


def test_sleeps_of_several_jobs_each_wake_when_due_not_later(skipping_stack: DevStack) -> None:
    naps = {"nap-1m": 60, "nap-10m": 600, "nap-1h": 3600}
    clock = skipping_stack.admin("info")["clock"]
    with ThreadPoolExecutor(max_workers=3) as pool:
        list(pool.map(lambda item: skipping_stack.api.start("napping", {"seconds": item[1]}, item[0]), naps.items()))
    views = {job_id: skipping_stack.wait_for(job_id, timeout=HUNG) for job_id in naps}
    real = real_ms(clock, skipping_stack.admin("info")["clock"])
    for job_id, seconds in naps.items():
        doze, wake = slept(views[job_id])
        asleep_ms = wake["startedAt"] - doze["endedAt"]
        # Not sooner than due; later only by real time (no skip went past its due time), and its delay's rounding.
        assert seconds * 1000 <= asleep_ms <= seconds * 1000 + real + DELAY_ROUNDING_MS, (job_id, asleep_ms, real)
    woke = {job_id: view["result"]["woke_at"] for job_id, view in views.items()}
    assert woke["nap-1m"] < woke["nap-10m"] < woke["nap-1h"]


def test_a_two_hour_sleep_skips_the_state_machines_wait_on_the_stepfunctions_driver(napping_scratch: Path) -> None:
    log = napping_scratch / "dev-sfn.log"
    with dev_stack(log, "--driver", "stepfunctions", "--skip-waits", cwd=napping_scratch) as stack:
        clock = stack.admin("info")["clock"]
        stack.api.start("napping", state={"seconds": 7200}, job_id="sfn-nap-2h")
        view = stack.wait_for("sfn-nap-2h", timeout=HUNG)  # two hours, skipped on the stack's clock (below)
        doze, wake = slept(view)
        assert wake["startedAt"] - doze["endedAt"] >= TWO_HOURS_MS
        after = stack.admin("info")["clock"]
        real = real_ms(clock, after)
        assert after["offsetMs"] - clock["offsetMs"] >= TWO_HOURS_MS - real, (after, real)
        # One skip ends the Wait state: two hours less the moments the run took before it (said to the second).
        skips = [seconds_of(said) for said in re.findall(r"skipped (\S+): ", stack.output())]
        assert skips, stack.output()[-2000:]
        assert TWO_HOURS_MS - real - 500 <= max(skips) * 1000 <= TWO_HOURS_MS, (skips, real)


# The clock hook the workers read.


def test_the_offset_file_is_read_again_only_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "clock-offset"
    offset = OffsetFile(path)
    assert offset.offset_ms() == 0  # no file yet
    path.write_text("900000\n")
    assert offset.offset_ms() == 900_000
    replacement = tmp_path / "next"
    replacement.write_text("1800000\n")
    os.replace(replacement, path)
    assert offset.offset_ms() == 1_800_000
    path.unlink()
    assert offset.offset_ms() == 1_800_000  # missing: the last offset read


def test_system_clock_ms_adds_the_offset_of_the_file_the_environment_names(tmp_path: Path) -> None:
    path = tmp_path / "clock-offset"
    path.write_text("7200000\n")
    script = (  # the clock read between two reads of the system's: how far ahead of each it is
        "import time\nfrom cairn.core.clock import system_clock_ms\n"
        "before = time.time_ns() // 1_000_000\nclock = system_clock_ms()\nafter = time.time_ns() // 1_000_000\n"
        "print(clock - before, clock - after)"
    )

    def ahead(variables: dict[str, str]) -> tuple[int, int]:
        env = {key: value for key, value in environment().items() if key != OFFSET_FILE_VARIABLE}
        run = subprocess.run(
            [sys.executable, "-c", script], env={**env, **variables}, capture_output=True, text=True, check=True
        )
        of_before, of_after = run.stdout.split()
        return int(of_before), int(of_after)

    of_before, of_after = ahead({OFFSET_FILE_VARIABLE: str(path)})
    assert of_after <= 7_200_000 <= of_before  # the system's time then, plus the file's offset
    of_before, of_after = ahead({})
    assert of_after <= 0 <= of_before


# The skipper's rules, on a queue of plain objects and a stand-in for the functions.


class Work:
    """A stand-in for LambdaService: what runs, by function name."""

    def __init__(self) -> None:
        self.running: set[str] = set()
        self.count = 0

    def started(self, excluding: Any = ()) -> int:
        return self.count

    def busy(self, excluding: Any = ()) -> bool:
        return bool(self.running - set(excluding))


def message(delayed_until: float = 0.0, visible_at: float = 0.0) -> SimpleNamespace:
    """What the skipper reads of a moto message."""
    return SimpleNamespace(delayed_until=delayed_until, visible_at=visible_at)


@pytest.fixture
def skipper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TimeSkipper, Work, list[Any]]]:
    monkeypatch.setattr(time_skipping, "QUIET_SECONDS", 0.0)
    messages: list[Any] = []
    work = Work()
    skipping = TimeSkipper(
        DevLog(io.StringIO(), pretty=False),
        threading.Event(),
        folder=tmp_path,
        queue=lambda arn: SimpleNamespace(_messages=messages),
    )
    skipping.watch(["arn:aws:sqs:us-east-1:123456789012:delays"], work, {"api"})
    yield skipping, work, messages
    skipping.stop.set()


def test_the_skipper_jumps_to_the_first_held_message_once_all_is_quiet(
    skipper: tuple[TimeSkipper, Work, list[Any]],
) -> None:
    skipping, _, messages = skipper
    now = 1_000_000_000.0
    first, later, in_flight = message(delayed_until=now + 900_000), message(now + 1_800_000), message(0, now + 360_000)
    messages.extend([first, later, in_flight])
    assert skipping.step(now) == 0  # the first look starts the quiet
    assert skipping.step(now) == 360.0  # the failed delivery's visibility timeout ends first
    assert (in_flight.visible_at, first.delayed_until, later.delayed_until) == (now, now + 540_000, now + 1_440_000)
    assert skipping.offset_ms == 360_000
    assert OffsetFile(skipping.path).offset_ms() == 360_000
    assert skipping.step(now) == 0  # a message can be received now: nothing to skip
    messages.remove(in_flight)
    assert skipping.step(now) == 540.0
    assert skipping.offset_ms == 900_000


def test_the_skipper_waits_for_the_functions_and_pollers_but_not_for_the_api(
    skipper: tuple[TimeSkipper, Work, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    skipping, work, messages = skipper
    monkeypatch.setattr(time_skipping, "QUIET_SECONDS", 0.1)
    ticks = [0.0]  # the skipper's monotonic clock, moved by the test: a busy machine cannot stretch the quiet
    clock = SimpleNamespace(monotonic=lambda: ticks[0], time=time.time, time_ns=time.time_ns)
    monkeypatch.setattr(time_skipping, "time", clock)
    now = 1_000_000_000.0
    messages.append(message(delayed_until=now + 60_000))
    work.running.add("scheduler")
    assert skipping.step(now) == 0  # a function runs: not idle
    work.running.clear()
    work.count += 1
    assert skipping.step(now) == 0  # one started since the last look: not idle either
    assert skipping.step(now) == 0  # the quiet starts
    ticks[0] += 0.12
    with skipping.working():
        assert skipping.step(now) == 0  # quiet long enough, but a poller is receiving or running a batch
    work.running.add("api")
    assert skipping.step(now) == 0  # an API request in flight puts the jump off...
    work.running.clear()
    assert skipping.step(now) == 60.0  # ...without breaking the quiet


def test_a_wait_on_the_skipper_ends_when_it_skips_past_it(skipper: tuple[TimeSkipper, Work, list[Any]]) -> None:
    skipping, _, _ = skipper
    waiting = threading.Thread(target=skipping.wait, args=(3600,))
    began_ms = time.time() * 1000
    waiting.start()
    deadline = time.monotonic() + HUNG
    while waiting.is_alive() and time.monotonic() < deadline:
        skipping.step()
        time.sleep(0.01)
    waiting.join(timeout=HUNG)
    assert not waiting.is_alive(), f"an hour's wait still waited after {HUNG:g}s of the skipper's steps"
    real = time.time() * 1000 - began_ms  # what the skip did not need to cover
    assert 3_600_000 - real <= skipping.offset_ms <= 3_600_000, real  # the hour, skipped (but for the real time)
