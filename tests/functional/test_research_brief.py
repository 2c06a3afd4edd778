"""The research-brief example through the API on the bundle's stack (direct driver, scripted models):
plan, gather, write, a reviewer's approval signal, publish; and the reviewer's lessons, kept per owner."""

from __future__ import annotations

from typing import Any

from cairn.testing.api import ApiClient
from cairn.testing.stack import LocalStack
from tests.functional.api_client import ALICE
from tests.support import counters

BOB = "arn:aws:iam::123456789012:user/bob"
QUESTION = {"question": "Why do long jobs need checkpoints?"}


def _settle(stack: LocalStack) -> None:
    """Run what is due (a review's timeout, a day away, is left in the delay queue)."""
    while True:
        stack.invoker.drain()
        if not stack.deliver_delayed() and stack.invoker.pending() == 0:
            return


def _start(api: ApiClient, stack: LocalStack, job_id: str) -> dict[str, Any]:
    reply = api.post("/jobs", {"pipeline": "research-brief", "jobId": job_id, "state": QUESTION})
    assert reply.status == 202, reply.body
    _settle(stack)
    job = api.get(f"/jobs/{job_id}").body
    assert job["status"] == "waiting", job
    return dict(job)


def _signal(api: ApiClient, stack: LocalStack, job_id: str, payload: Any) -> dict[str, Any]:
    reply = api.post(f"/jobs/{job_id}/signals/approval", payload)
    assert reply.status == 202, reply.body
    _settle(stack)
    return dict(api.get(f"/jobs/{job_id}").body)


def _messages(api: ApiClient, job_id: str) -> list[str]:
    return [entry["message"] for entry in api.get(f"/jobs/{job_id}/log").body["entries"]]


def test_a_brief_is_planned_gathered_written_and_published_once_approved(stack: LocalStack) -> None:
    api = ApiClient(stack, owner=ALICE)
    waiting = _start(api, stack, "brief-1")
    assert waiting["waitingFor"] == "approval"
    assert [record["phase"] for record in waiting["phases"]] == ["plan", "gather", "write", "review"]
    assert counters(waiting["usage"]) == {
        "model_calls": 4,
        "input_tokens": 420 + 610 + 900 + 1350,
        "output_tokens": 18 + 160 + 22 + 120,
        "tool_calls": 1 + 4 + 1,  # list_documents; the plan's four; one search while writing
        "transitions": 4,  # plan, gather and write's next, review's wait
    }

    done = _signal(api, stack, "brief-1", {"approved": True, "note": "Cite the cost figures"})

    assert done["status"] == "complete", done.get("error")
    assert done["result"]["sources"] == ["cairns.md", "checkpoints.md", "costs.md"]
    assert done["result"]["brief"].startswith("Long jobs need checkpoints")
    assert done["result"]["reviews"] == 1
    assert "Cite the cost figures" in _messages(api, "brief-1")


def test_a_rejected_draft_is_written_again_with_the_note(stack: LocalStack) -> None:
    api = ApiClient(stack, owner=ALICE)
    _start(api, stack, "brief-2")

    again = _signal(api, stack, "brief-2", {"approved": False, "note": "Say what a step costs"})
    assert again["status"] == "waiting"
    assert [record["phase"] for record in again["phases"]][-3:] == ["publish", "write", "review"]
    done = _signal(api, stack, "brief-2", {"approved": True})
    assert done["result"]["reviews"] == 2


def test_a_malformed_review_is_refused_and_the_brief_waits_for_another(stack: LocalStack) -> None:
    api = ApiClient(stack, owner=ALICE)
    _start(api, stack, "brief-3")

    still = _signal(api, stack, "brief-3", {"approve": "yes"})

    assert still["status"] == "waiting"
    assert any('The "approval" signal needs' in message for message in _messages(api, "brief-3"))


def test_a_reviewers_lessons_reach_the_owners_next_brief_and_no_other_owners(stack: LocalStack) -> None:
    alice = ApiClient(stack, owner=ALICE)
    bob = alice.as_owner(BOB)
    _start(alice, stack, "first")
    _signal(alice, stack, "first", {"approved": True, "note": "Always compare with the per-step price"})

    _start(alice, stack, "second")
    _start(bob, stack, "bobs")

    alices_next = _messages(alice, "second")
    assert "Start from 1 lesson of earlier runs" in alices_next
    assert not any(message.startswith("Start from") for message in _messages(bob, "bobs"))
