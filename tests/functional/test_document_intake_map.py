"""document-intake's per-page map through the API on the direct driver: the same result as page by page."""

from __future__ import annotations

from tests.functional.api_client import Api
from tests.support import usage_without_transitions


def test_a_map_over_the_pages_through_the_api_gives_the_page_by_page_result(api: Api) -> None:
    api.create("one-by-one", document="contract.txt")
    api.run()
    state = {"document": "contract.txt", "page_concurrency": 2}
    body = {"pipeline": "document-intake", "jobId": "mapped", "state": state}
    assert api.call("create-job", body=body).status == 202
    api.run_phases(2)  # fetch, then split, which maps the pages

    mapping = api.call("get-job", job_id="mapped").body
    assert mapping["status"] == "running"
    assert mapping["nextPhase"] == "publish"
    api.run()

    mapped, sequential = api.stored("mapped"), api.stored("one-by-one")
    assert mapped.status.value == "complete", mapped.error
    assert mapped.result == sequential.result
    assert usage_without_transitions(mapped.usage) == usage_without_transitions(sequential.usage)
    assert sequential.usage["transitions"] == 4  # fetch, split, extract, publish
    assert mapped.usage["transitions"] == 3 + 4  # fetch, split's map, its 4 pages, publish
    assert [record.phase for record in mapped.phases] == ["fetch", "split", "publish"]
