"""Timeouts, killed workers and code changes on ``cairn dev``, with a pipeline made for them (sleepy)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.local.devstack import DevStack

pytestmark = pytest.mark.xdist_group("local-sleepy")


def test_a_phase_past_its_timeout_is_killed_and_retried_per_its_policy(sleepy_stack: DevStack) -> None:
    started = time.monotonic()
    sleepy_stack.api.start("sleepy", state={"overrun_seconds": 30}, job_id="overrun")
    view = sleepy_stack.wait_for("overrun", timeout=45)
    assert view["status"] == "complete", view
    assert view["result"]["attempts"] == {"overrun": 2, "hold": 1}
    assert time.monotonic() - started < 30  # killed at its 2-second timeout: an unkilled attempt sleeps 30 s
    records = [(record["phase"], record["attempt"], record["outcome"]) for record in view["phases"]]
    assert records[0][:2] == ("overrun", 1)
    assert records[0][2] != "next"
    assert "Task timed out after 2.00 seconds" in sleepy_stack.output()


def test_kill_9_of_a_worker_mid_phase_and_the_on_failure_record_finishes_the_job(sleepy_stack: DevStack) -> None:
    sleepy_stack.api.start("sleepy", state={"hold_seconds": 30}, job_id="held")
    invocation = sleepy_stack.running("held", "hold")
    os.kill(invocation["pid"], signal.SIGKILL)
    view = sleepy_stack.wait_for("held", timeout=45)
    assert view["status"] == "complete", view
    assert view["result"]["attempts"] == {"overrun": 1, "hold": 2}
    assert sleepy_stack.api.health()["status"] == "ok"  # the server outlived its worker


def test_a_code_change_reaches_the_next_invocation(sleepy_stack: DevStack, scratch: Path) -> None:
    sleepy_stack.api.start("sleepy", state={}, job_id="before-change")
    assert sleepy_stack.wait_for("before-change")["result"]["attempts"]["hold"] == 1
    module = scratch / "functions" / "sleepy" / "pipeline.py"
    source = module.read_text()
    module.write_text(source.replace('"hold": ctx.attempt}})', '"hold": ctx.attempt}, "reloaded": True})'))
    deadline = time.monotonic() + 20
    while "code changed" not in sleepy_stack.output():
        assert time.monotonic() < deadline, sleepy_stack.output()[-2000:]
        time.sleep(0.2)
    sleepy_stack.api.start("sleepy", state={}, job_id="after-change")
    assert sleepy_stack.wait_for("after-change")["result"]["reloaded"] is True


def test_ctrl_c_stops_the_server_and_its_workers(sleepy_stack: DevStack) -> None:
    sleepy_stack.api.start("sleepy", state={"hold_seconds": 30}, job_id="held-at-shutdown")
    pid = sleepy_stack.running("held-at-shutdown", "hold")["pid"]
    assert sleepy_stack.stop() == 0
    assert "stopping" in sleepy_stack.output()
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists(), "a worker outlived the server"
