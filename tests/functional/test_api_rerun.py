"""Rerun from a phase and signals through the API function's handler, on the local stack (moto in-process)."""

from __future__ import annotations

from tests.functional.api_client import ALICE, JOB, PHASES, Api, phase_names


def test_a_rerun_from_a_phase_continues_there_with_the_state_it_entered_with(api: Api) -> None:
    api.create()
    api.run()
    entered = api.stack.runtime.storage(ALICE).entered(JOB, "extract")
    assert entered is not None

    reply = api.call("retry-job-from")

    assert reply.status == 202
    assert reply.body["status"] == "running"
    assert reply.body["nextPhase"] == "extract"
    assert api.stored().checkpoint is not None
    assert api.stored().checkpoint.state == entered.state  # type: ignore[union-attr]
    api.run()
    done = api.stored()
    assert done.status.value == "complete"
    assert phase_names(done) == [*PHASES, "extract", "publish"]
    [note] = [entry.message for entry in done.log if entry.message.startswith("Job rerun from phase")]
    assert '"extract"' in note
    assert f"by {ALICE}" in note


def test_a_rerun_with_an_edited_state_is_validated_against_the_pipeline_model(api: Api) -> None:
    api.create()
    api.run()
    entered = api.stack.runtime.storage(ALICE).entered(JOB, "extract")
    assert entered is not None
    assert len(entered.state["pages"]) == 3

    bad = api.call("retry-job-from", body={"mode": "from", "phase": "extract", "state": {"pages": "many"}})
    assert bad.status == 400
    assert "Invalid state" in bad.message
    assert api.stored().status.value == "complete"

    state = {**entered.state, "pages": entered.state["pages"][:1]}
    reply = api.call("retry-job-from", body={"mode": "from", "phase": "extract", "state": state})
    assert reply.status == 202, reply.body
    api.run()
    done = api.stored()
    assert done.status.value == "complete"
    assert done.result["document"]["pages"] == 1


def test_a_bad_rerun_request_is_400_and_changes_nothing(api: Api) -> None:
    api.create()
    api.run()
    before = api.stored()

    for body, message in (
        ({"mode": "from"}, "names the phase"),
        ({"mode": "from", "phase": "nope"}, "nope"),
        ({"mode": "from", "phase": "bad phase!"}, "phase"),
        ({"mode": "resume", "phase": "extract"}, "only given to rerun"),
    ):
        reply = api.call("retry-job-from", body=body)
        assert reply.status == 400, (body, reply.body)
        assert message in reply.message, (body, reply.message)
    assert api.stored() == before


def test_a_rerun_of_another_owners_job_is_404_and_reruns_nothing(api: Api) -> None:
    mallory = "arn:aws:iam::123456789012:user/mallory"
    api.create()
    api.run()
    before = api.stored()
    assert phase_names(before) == PHASES

    reply = api.call("retry-job-from", caller=mallory)
    assert reply.status == 404
    api.run()  # anything the request had queued would run now

    after = api.stored()
    assert (after.status, phase_names(after), after.checkpoint, after.result) == (
        before.status,
        PHASES,
        before.checkpoint,
        before.result,
    )
    assert after == before  # not a write of any kind: same sequence, log and history
    assert api.job(JOB, owner=mallory) is None  # nor a job of the caller's own
