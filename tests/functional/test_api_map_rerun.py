"""A rerun of a mapped job through the API on the local stack: from ``then`` with the pages' results again;
never from the item phase, which the job view leaves out of the phases it offers a rerun from."""

from __future__ import annotations

from typing import Any

from tests.functional.api_client import Api
from tests.support import counters

JOB = "mapped"
PHASES = ["fetch", "split", "extract", "extract_page", "publish"]


def _mapped_job(api: Api) -> dict[str, Any]:
    state = {"document": "contract.txt", "page_concurrency": 2}
    body = {"pipeline": "document-intake", "jobId": JOB, "state": state}
    assert api.call("create-job", body=body).status == 202
    api.run()
    done = api.stored(JOB)
    assert done.status.value == "complete", done.error
    view = api.call("get-job", job_id=JOB)
    assert view.status == 200
    shown: dict[str, Any] = view.body
    return shown


def test_the_job_view_offers_no_rerun_from_a_phase_the_job_runs_only_as_a_maps_items(api: Api) -> None:
    pipelines = api.call("list-pipelines").body["pipelines"]
    [intake] = [pipeline for pipeline in pipelines if pipeline["name"] == "document-intake"]
    assert sorted(intake["phases"]) == sorted(PHASES)

    view = _mapped_job(api)

    assert "extract_page" not in view["rerunPhases"]
    assert view["rerunPhases"] == [phase for phase in intake["phases"] if phase != "extract_page"]

    api.create("page-by-page", document="contract.txt")  # no map: the item phase is left out all the same
    api.run()
    assert api.call("get-job", job_id="page-by-page").body["rerunPhases"] == view["rerunPhases"]


def test_a_rerun_from_the_item_phase_is_refused_with_where_to_rerun_from(api: Api) -> None:
    _mapped_job(api)
    before = api.stored(JOB)

    reply = api.call("retry-job-from", job_id=JOB, body={"mode": "from", "phase": "extract_page"})

    assert reply.status == 409, reply.body  # a request the document allows, refused for the job as it is
    assert 'Phase "extract_page" runs only as an item of the map started by phase "split"' in reply.message
    assert 'rerun from "split"' in reply.message
    assert '"publish"' in reply.message
    assert api.stored(JOB) == before


def test_a_rerun_from_the_item_phase_is_refused_for_a_job_whose_map_never_ran(api: Api) -> None:
    api.create("page-by-page", document="contract.txt")  # extracts in one phase: it never maps
    api.run()
    before = api.stored("page-by-page")
    assert before.status.value == "complete", before.error

    reply = api.call("retry-job-from", job_id="page-by-page", body={"mode": "from", "phase": "extract_page"})

    assert reply.status == 409, reply.body
    assert 'Phase "extract_page" runs only as an item of the map started by phase "split"' in reply.message
    assert 'rerun from "split"' in reply.message
    assert api.stored("page-by-page") == before
    assert api.call("retry-job-from", job_id="page-by-page", body={"mode": "from", "phase": "extract"}).status == 202


def test_a_rerun_from_then_publishes_the_pages_results_again(api: Api) -> None:
    _mapped_job(api)
    first = api.stored(JOB)

    reply = api.call("retry-job-from", job_id=JOB, body={"mode": "from", "phase": "publish"})
    assert reply.status == 202, reply.body
    assert reply.body["nextPhase"] == "publish"
    api.run()

    done = api.stored(JOB)
    assert done.status.value == "complete", done.error
    assert done.result == first.result
    assert first.usage["transitions"] == 3 + 4  # fetch, split's map, its 4 pages, publish
    # the pages did not run again: the rerun of publish adds only its done
    assert counters(done.usage) == {**counters(first.usage), "transitions": first.usage["transitions"] + 1}
    assert [record.phase for record in done.phases] == ["fetch", "split", "publish", "publish"]
