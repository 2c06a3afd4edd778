"""What a job's maps did, through the path a user takes: ``GET /jobs/{id}/maps`` and
``GET /jobs/{id}/maps/{mapId}/items/{index}``, ``cairn jobs maps ID [--item MAP INDEX]``, against a real HTTP
server in front of the API function on the local stack (moto in-process), with a map whose odd items fail."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from cairn import Done, Map, Next, PhaseContext, Pipeline, RetryPolicy
from cairn.testing.api_events import http_api_event, iam_caller
from cairn.testing.stack import LocalStack
from tests.functional.jobs_server import FUNCTION, JobsServer
from tests.functional.stacks import moto_stack
from tests.functional.test_jobs_cli import run_cli
from tests.support import FakeClock

ITEMS = 6


def fanned_pipeline() -> Pipeline[Any]:
    """``spread`` maps ``work`` over six numbers; ``work`` raises ValueError on an odd one's first attempt, and on
    every attempt of the last (which fails the map, the others done)."""
    pipeline: Pipeline[Any] = Pipeline("fanned")

    @pipeline.phase(name="spread")
    def spread(ctx: PhaseContext[Any]) -> Map:
        # one item at a time: the last item fails the map after every other item has finished
        return Map(list(range(ITEMS)), phase="work", then="gather", max_concurrency=1)

    @pipeline.phase(name="work", retry=RetryPolicy(max_attempts=2, backoff=0, jitter=False))
    def work(ctx: PhaseContext[Any]) -> Done:
        if ctx.state % 2 and (ctx.attempt == 1 or ctx.state == ITEMS - 1):
            raise ValueError(f"odd item {ctx.state}, attempt {ctx.attempt}")
        ctx.log(f"worked on {ctx.state}")
        return Done(ctx.state * 10)

    @pipeline.phase(name="gather")
    def gather(ctx: PhaseContext[Any]) -> Next:
        return Next("gather", ctx.state)  # never reached: failed items fail the map

    return pipeline


@pytest.fixture
def stack(stack_clock: FakeClock) -> Iterator[LocalStack]:
    """The bundle's pipelines and ``fanned``, in-process on moto."""
    with moto_stack(stack_clock, fanned_pipeline()) as stack:
        yield stack


def maps_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    status, out, err = run_cli(capsys, "maps", *args, "--json")
    assert status == 0, err
    found: dict[str, Any] = json.loads(out)
    return found


def test_a_map_is_one_lane_with_its_items_by_status_and_its_failed_ones_listed(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(capsys, "start", "fanned", "--id", "fan-1")[0] == 0
    jobs.run()

    (lane,) = maps_json(capsys, "fan-1")["maps"]
    assert (lane["phase"], lane["startedBy"], lane["then"], lane["count"]) == ("work", "spread", "gather", ITEMS)
    assert lane["counts"] == {"done": 5, "failed": 1, "pending": 0}
    assert lane["attempts"] == 9  # items 1, 3 and 5 ran twice
    assert [item["index"] for item in lane["failed"]] == [5]
    assert {item["errorType"] for item in lane["failed"]} == {"ValueError"}
    assert lane["failed"][0]["error"].endswith("odd item 5, attempt 2")
    ran = [item["ranMs"] for item in lane["slowest"]]
    assert len(ran) == 5
    assert ran == sorted(ran, reverse=True)
    assert all(isinstance(ms, int) and ms >= 0 for ms in ran)

    item = maps_json(capsys, "fan-1", "--item", lane["id"], "5")
    assert (item["index"], item["status"], item["input"], item["attempt"]) == (5, "failed", 5, 2)
    assert "ValueError" in item["failure"]["traceback"]
    done = maps_json(capsys, "fan-1", "--item", lane["id"], "2")
    assert (done["status"], done["result"]) == ("done", 20)
    assert [entry["message"] for entry in done["log"]] == ["worked on 2"]

    status, out, err = run_cli(capsys, "maps", "fan-1")
    assert status == 0, err
    assert f"Map {lane['id']}: 6 items of work (from spread, then gather): 5 done, 1 failed, 0 pending" in out
    assert "item 5  failed  attempt 2" in out
    status, out, err = run_cli(capsys, "maps", "fan-1", "--item", lane["id"], "5")
    assert status == 0, err
    assert "Traceback:" in out


def test_a_job_without_maps_an_unknown_map_or_item_and_hostile_values_are_clear(
    jobs: JobsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(capsys, "start", "fanned", "--id", "fan-2")[0] == 0
    assert (
        run_cli(capsys, "start", "document-intake", "--id", "plain", "--state", '{"document": "invoice.txt"}')[0] == 0
    )
    jobs.run()
    assert maps_json(capsys, "plain") == {"jobId": "plain", "maps": []}
    status, out, _ = run_cli(capsys, "maps", "plain")
    assert (status, out.strip()) == (0, "No map: this job has run none.")
    (lane,) = maps_json(capsys, "fan-2")["maps"]

    def get(path: str) -> tuple[int, Any]:
        response = jobs.stack.call(FUNCTION, http_api_event("GET", path, caller=iam_caller(jobs.identity)))
        return response["statusCode"], json.loads(response["body"])

    assert get(f"/jobs/fan-2/maps/{lane['id']}/items/{ITEMS}")[0] == 404  # past the last item
    assert "has no item 6 (it has 6)" in get(f"/jobs/fan-2/maps/{lane['id']}/items/{ITEMS}")[1]["error"]["message"]
    assert get("/jobs/fan-2/maps/nomap/items/0")[1]["error"]["message"] == 'Job "fan-2" has no map "nomap"'
    assert get("/jobs/nobody/maps")[0] == 404
    for path in (
        f"/jobs/fan-2/maps/{lane['id']}/items/-1",
        f"/jobs/fan-2/maps/{lane['id']}/items/abc",
        f"/jobs/fan-2/maps/{lane['id']}/items/99999999999999999999",
        "/jobs/fan-2/maps/" + "m" * 100 + "/items/0",
        "/jobs/fan-2/maps/a%2Fb/items/0",
    ):
        status, body = get(path)
        assert status == 400, (path, body)
        assert body["error"]["code"] == "invalid_request"
