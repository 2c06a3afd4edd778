"""Timeouts, killed workers and code changes on ``cairn dev``, with a pipeline made for them (sleepy)."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest

from tests.local.devstack import HUNG, DevStack

pytestmark = pytest.mark.xdist_group("local-sleepy")


def printed(stack: DevStack, pattern: str, timeout: float = HUNG) -> re.Match[str]:
    """The first line of the stack's output matching ``pattern``, once it is there (workers' lines come a moment
    after what they did)."""
    deadline = time.monotonic() + timeout
    while (found := re.search(pattern, stack.output(), re.MULTILINE)) is None:
        assert time.monotonic() < deadline, f"no line {pattern!r} in {timeout:g}s:\n{stack.output()[-2000:]}"
        time.sleep(0.1)
    return found


def test_a_phase_past_its_timeout_is_killed_and_retried_per_its_policy(sleepy_stack: DevStack) -> None:
    sleepy_stack.api.start("sleepy", state={"overrun_seconds": 3600}, job_id="overrun")
    view = sleepy_stack.wait_for("overrun", timeout=HUNG)  # an attempt left to its sleep would take an hour
    assert view["status"] == "complete", view
    assert view["result"]["attempts"] == {"overrun": 2, "hold": 1}
    first = view["phases"][0]
    assert (first["phase"], first["attempt"], first["outcome"]) == ("overrun", 1, "retry"), first
    assert first["failure"]["type"] == "Sandbox.Timedout", first
    assert first["error"].endswith("Task timed out after 5.00 seconds"), first
    assert "Task timed out after 5.00 seconds" in sleepy_stack.output()
    # Killed, not left to its sleep: the first attempt's worker is gone, and it never got past its sleep.
    killed = int(printed(sleepy_stack, r"^\[sleepy-overrun\] overrun attempt 1 runs in worker (\d+)$")[1])
    retried = int(printed(sleepy_stack, r"^\[sleepy-overrun\] overrun attempt 2 runs in worker (\d+)$")[1])
    assert retried != killed  # the retry ran in a fresh worker
    assert not Path(f"/proc/{killed}").exists(), "the timed-out attempt's worker still runs"
    assert "overrun attempt 1 woke" not in sleepy_stack.output()


def test_kill_9_of_a_worker_mid_phase_and_the_on_failure_record_finishes_the_job(sleepy_stack: DevStack) -> None:
    sleepy_stack.api.start("sleepy", state={"hold_seconds": 30}, job_id="held")
    invocation = sleepy_stack.running("held", "hold")
    os.kill(invocation["pid"], signal.SIGKILL)
    view = sleepy_stack.wait_for("held", timeout=HUNG)
    assert view["status"] == "complete", view
    assert view["result"]["attempts"] == {"overrun": 1, "hold": 2}
    assert sleepy_stack.api.health()["status"] == "ok"  # the server outlived its worker


def test_a_code_change_reaches_the_next_invocation(sleepy_stack: DevStack, scratch: Path) -> None:
    sleepy_stack.api.start("sleepy", state={}, job_id="before-change")
    assert sleepy_stack.wait_for("before-change")["result"]["attempts"]["hold"] == 1
    module = scratch / "functions" / "sleepy" / "pipeline.py"
    source = module.read_text()
    module.write_text(source.replace('"hold": ctx.attempt}})', '"hold": ctx.attempt}, "reloaded": True})'))
    printed(sleepy_stack, "code changed")
    sleepy_stack.api.start("sleepy", state={}, job_id="after-change")
    assert sleepy_stack.wait_for("after-change")["result"]["reloaded"] is True


def test_ctrl_c_stops_the_server_and_its_workers(sleepy_stack: DevStack) -> None:
    # An hour's hold: a worker the server left behind would still be in it when the safety net below runs out.
    sleepy_stack.api.start("sleepy", state={"hold_seconds": 3600}, job_id="held-at-shutdown")
    pid = sleepy_stack.running("held-at-shutdown", "hold")["pid"]
    assert sleepy_stack.stop() == 0
    assert "stopping" in sleepy_stack.output()
    deadline = time.monotonic() + HUNG
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    if Path(f"/proc/{pid}").exists():
        os.kill(pid, signal.SIGKILL)  # not left sleeping for the next tests
        pytest.fail(f"a worker outlived the server by {HUNG:g}s (its hold was an hour)")
