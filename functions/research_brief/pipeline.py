"""The research-brief pipeline: plan -> gather -> write -> review -> publish.

- ``plan`` is an agent phase: the model looks at the documents and answers with a typed plan.
- ``gather`` runs that plan's steps with the document tools, a checkpoint after each step.
- ``write`` is an agent phase that drafts the brief from what was gathered, starting from the lessons
  reviewers left on earlier briefs (``recall``).
- ``review`` waits for a person: the ``approval`` signal, ``{"approved": true|false, "note"?}``.
- ``publish`` ends the job with the approved brief; a rejection sends the draft back to ``write`` with
  the note. Either way the reviewer's note is kept as an insight for later briefs of the same owner.

Offline (``cairn dev``, the tests) both agents replay scripts; deployed with ``AgentModelId``, they
talk to that Bedrock model, and only their functions may invoke it.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from cairn import Done, Next, PhaseContext, Pipeline, WaitFor
from cairn.agents import Plan

from .library import list_documents, read_document, search_documents
from .models import AGENT_MODEL_ID, model_for, plan_script, write_script
from .state import BriefState, Review

pipeline = Pipeline("research-brief", state=BriefState)

APPROVAL = "approval"
REVIEW_SECONDS = 86_400
MAX_GATHERED_CHARS = 6_000

#: The agent phases' functions: which model, and the right to invoke that model only (none without one).
#: ``AgentModelId`` is a foundation model id or an inference profile id (``us.anthropic...``: most current
#: models are reached only through one): the profile itself, and the foundation models only through it.
_AGENT_ENVIRONMENT = {AGENT_MODEL_ID: {"Ref": "AgentModelId"}}
_PROFILE_ARN = "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/${AgentModelId}"
_INVOKE_MODEL = {
    "Fn::If": [
        "HasAgentModel",
        {
            "Sid": "InvokeAgentModel",
            "Effect": "Allow",
            "Action": "bedrock:InvokeModel",
            "Resource": [
                {"Fn::Sub": "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/${AgentModelId}"},
                {"Fn::Sub": _PROFILE_ARN},
            ],
        },
        {"Ref": "AWS::NoValue"},
    ]
}
_INVOKE_THROUGH_PROFILE = {
    "Fn::If": [
        "HasAgentModel",
        {
            "Sid": "InvokeModelsOfTheProfile",
            "Effect": "Allow",
            "Action": "bedrock:InvokeModel",
            "Resource": {"Fn::Sub": "arn:${AWS::Partition}:bedrock:*::foundation-model/*"},
            "Condition": {"StringEquals": {"bedrock:InferenceProfileArn": {"Fn::Sub": _PROFILE_ARN}}},
        },
        {"Ref": "AWS::NoValue"},
    ]
}
_AGENT_FUNCTION: dict[str, Any] = {
    "timeout": 600,
    "memory": 512,
    "environment": _AGENT_ENVIRONMENT,
    "statements": [_INVOKE_MODEL, _INVOKE_THROUGH_PROFILE],
}

PLAN_PROMPT = """Question: {question}

Plan the research before anyone reads anything. Answer with one JSON object, in a ```json block:
{{"id": "<a short plan id>", "goal": "...", "steps": [...]}}. Each step has an "id" and exactly one of
"tool" (with "input"), or "steps" (nested steps). A step may add "each" (a list of inputs, one call
per input), "when" (the name of a saved value that must be set) and "save_as". The tools are
list_documents, read_document(name) and search_documents(query)."""

WRITE_PROMPT = """Question: {question}

What the research found (JSON):
{gathered}
{feedback}
Write the brief: one paragraph that answers the question from these findings only."""


def _plan_prompt(state: BriefState) -> str:
    return PLAN_PROMPT.format(question=state.question)


def _keep_plan(state: BriefState, answer: str) -> BriefState:
    return state.model_copy(update={"plan": Plan.parse(answer), "plan_progress": None})


pipeline.agent_phase(
    "plan",
    model=model_for(plan_script),
    tools=[list_documents],
    prompt=_plan_prompt,
    system="You plan research over a small library of documents. Be brief.",
    max_turns=4,
    next="gather",
    finish=_keep_plan,
    **_AGENT_FUNCTION,
)


def _the_plan(state: BriefState) -> Plan:
    if state.plan is None:
        raise ValueError("The job has no plan: rerun from the plan phase")
    return state.plan


pipeline.plan_phase(
    "gather", plan=_the_plan, tools=[list_documents, read_document, search_documents], next="write", timeout=120
)


def _write_prompt(state: BriefState) -> str:
    results = state.plan_progress.results if state.plan_progress is not None else {}
    gathered = json.dumps(results, indent=1)[:MAX_GATHERED_CHARS]
    feedback = ""
    if state.feedback:
        feedback = (
            "\nThe reviewer sent the last draft back:\n" + "\n".join(f"- {note}" for note in state.feedback) + "\n"
        )
    return WRITE_PROMPT.format(question=state.question, gathered=gathered, feedback=feedback)


def _keep_draft(state: BriefState, answer: str) -> BriefState:
    return state.model_copy(update={"draft": answer})


pipeline.agent_phase(
    "write",
    model=model_for(write_script),
    tools=[search_documents, read_document],
    prompt=_write_prompt,
    system="You write short, sourced research briefs.",
    max_turns=6,
    next="review",
    finish=_keep_draft,
    recall=5,
    **_AGENT_FUNCTION,
)


@pipeline.phase(timeout=30, memory=256)
def review(ctx: PhaseContext[BriefState]) -> WaitFor:
    """Wait (a day at most) for a reviewer's ``approval`` signal."""
    ctx.log(f'Waiting for a reviewer: send the "{APPROVAL}" signal with {{"approved": true|false, "note"?}}')
    return WaitFor(APPROVAL, "publish", ctx.state, timeout=REVIEW_SECONDS)


@pipeline.phase(timeout=30, memory=256)
def publish(ctx: PhaseContext[BriefState]) -> Done | Next | WaitFor:
    """The approved brief ends the job; a rejected one goes back to ``write``. The note becomes a lesson."""
    state = ctx.state
    try:
        verdict = Review.model_validate(ctx.signal)
    except ValidationError as exc:
        ctx.record_error(
            f'The "{APPROVAL}" signal needs {{"approved": true|false, "note"?}}: {exc.error_count()} problem(s)'
        )
        return WaitFor(APPROVAL, "publish", state, timeout=REVIEW_SECONDS)
    if verdict.note:
        ctx.insight(verdict.note)
    if not verdict.approved:
        ctx.decide("Write the brief again", reason=f"the reviewer sent it back: {verdict.note or 'no note'}")
        feedback = [*state.feedback, verdict.note or "The reviewer rejected the draft without a note"]
        return Next("write", state.model_copy(update={"draft": None, "feedback": feedback}))
    brief = {"question": state.question, "brief": state.draft, "sources": _sources(state)}
    return Done({**brief, "reviews": len(state.feedback) + 1})


def _sources(state: BriefState) -> list[str]:
    """The documents the research touched: those its searches found and those its steps read."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("document"), str):
                found.add(value["document"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(state.plan_progress.results if state.plan_progress is not None else {})
    steps = list(state.plan.steps) if state.plan is not None else []
    while steps:
        step = steps.pop()
        steps.extend(step.steps)
        for arguments in [step.input, *(step.each or [])]:
            if step.tool == "read_document" and isinstance(arguments.get("name"), str):
                found.add(str(arguments["name"]))
    return sorted(found & set(list_documents()))
