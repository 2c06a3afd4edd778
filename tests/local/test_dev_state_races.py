"""Reads of a job whose state lives in S3 while its phase keeps saving: every answer a 2xx, on ``cairn dev``.

Each save writes a new ``saves/`` object, points the job item at it and removes the one the save before replaced;
a read that took the job item before saves removed what it named reads again rather than calling the job corrupt
(the dashboard polls this route).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.local.devstack import HUNG, DevStack, dev_stack, scratch_project

SCALE = max(1, int(os.environ.get("CAIRN_PROOF_SCALE", "1")))
READS = 800 * SCALE
"""Reads of the job, POLLERS at once, its view with its state and its whole log in turn (3,200 at scale 4)."""
POLLERS = 4


@pytest.fixture(scope="module")
def churning_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """``cairn dev`` (direct driver) on a copy of the bundle with the ``churning`` pipeline."""
    project = scratch_project(tmp_path_factory.mktemp("churning"), ("churning",))
    with dev_stack(project / "dev.log", "--driver", "direct", cwd=project) as stack:
        yield stack


def test_a_job_polled_while_its_s3_state_is_saved_every_few_ms_always_answers(churning_stack: DevStack) -> None:
    api = churning_stack.api
    api.start("churning", {"seconds": 300}, job_id="churn-1")
    failures: list[str] = []

    def read(number: int) -> int:
        path = "/jobs/churn-1" if number % 2 else "/jobs/churn-1/log"
        answer = api.exchange("GET", path, query="includeState=true" if number % 2 else "")
        if not 200 <= answer.status < 300:
            failures.append(f"{path}: {answer.status} {answer.body[:300]!r}")
        return answer.status

    def saves() -> int:
        answer = api.exchange("GET", "/jobs/churn-1", query="includeState=true")
        return int(json.loads(answer.body)["state"]["saves"]) if answer.status == 200 else 0

    deadline = time.monotonic() + HUNG
    while saves() < 10:  # saving, its state in S3
        assert time.monotonic() < deadline, churning_stack.output()[-3000:]
        time.sleep(0.05)
    started = time.monotonic()
    with ThreadPoolExecutor(POLLERS) as pollers:
        statuses = Counter(pollers.map(read, range(READS)))
    took = time.monotonic() - started
    seen = api.get("churn-1", include_state=True)
    api.cancel("churn-1")

    if failures:
        logged = [line for line in churning_stack.output().splitlines() if "rror" in line or "raceback" in line]
        pytest.fail(f"{len(failures)} of {READS} reads failed in {took:.0f} s: {failures[:3]}; logged: {logged[:20]}")
    assert statuses == Counter({200: READS})
    assert seen["status"] == "running"  # the phase was still saving after the last read
    assert seen["state"]["saves"] > 100
