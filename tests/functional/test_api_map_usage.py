"""A running map's cost through the API: the job view's usage (and cost) counts the items run so far, before
the phase after the map joins them to the job's, and counts them once after it has.

document-intake with ``page_concurrency`` maps ``extract_page`` over the contract's 4 pages, 2 at a time.
"""

from __future__ import annotations

from typing import Any

from tests.functional.api_client import Api

JOB = "mapping-cost"


def _view(api: Api) -> dict[str, Any]:
    reply = api.call("get-job", job_id=JOB)
    assert reply.status == 200, reply.body
    shown: dict[str, Any] = reply.body
    return shown


def test_the_job_view_counts_a_running_maps_items_so_far_and_once_after_it_joins(api: Api) -> None:
    state = {"document": "contract.txt", "page_concurrency": 2}
    assert api.call("create-job", body={"pipeline": "document-intake", "jobId": JOB, "state": state}).status == 202
    api.run_phases(2)  # fetch, then split, which maps the pages
    mapping = _view(api)
    assert (mapping["status"], mapping["nextPhase"]) == ("running", "publish")
    before = mapping["usage"]["lambda_requests"]

    api.run_phases(2)  # two of the four pages
    running = _view(api)
    assert running["status"] == "running"
    assert running["usage"]["lambda_requests"] == before + 2
    assert api.stored(JOB).usage["lambda_requests"] == before  # the job's own: not joined yet
    assert running["cost"]["usd"] > mapping["cost"]["usd"]

    api.run()
    done = _view(api)
    assert done["status"] == "complete"
    assert done["usage"]["lambda_requests"] == before + 4 + 1  # the four pages once, and publish
    assert done["usage"] == api.stored(JOB).usage
