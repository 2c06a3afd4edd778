"""``POST /jobs`` without a ``state`` names the fields the pipeline's state model requires (400); a model
whose fields all have defaults starts from them."""

from __future__ import annotations

from pipelines import PIPELINES
from tests.functional.api_client import Api


def test_a_start_without_a_state_names_the_missing_fields(api: Api) -> None:
    reply = api.call("create-job", body={"pipeline": "research-brief", "jobId": "no-state"})

    assert (reply.status, reply.code) == (400, "invalid_request")
    assert reply.message == 'Invalid state for pipeline "research-brief": question: Field required'
    assert api.job("no-state") is None  # nothing was written


def test_a_start_without_a_state_of_a_model_with_defaults_starts_from_them(api: Api) -> None:
    reply = api.call("create-job", body={"pipeline": "document-intake", "jobId": "defaults"})

    assert reply.status == 202
    model = PIPELINES.get("document-intake").state_model
    assert model is not None
    assert api.stored("defaults").input == model().model_dump(mode="json")
