"""Which model the research-brief agents talk to: Amazon Bedrock when deployed with a model id, else a script.

``AGENT_MODEL_ID`` (the stack's ``AgentModelId`` parameter) names a Bedrock model; empty or unset, each
agent phase replays its script offline (``cairn dev``, the tests, a stack deployed without a model).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence

from cairn.agents import Model, ModelTurn, ScriptedModel, Usage

AGENT_MODEL_ID = "AGENT_MODEL_ID"
"""The environment variable naming the Bedrock model (empty: the scripted model)."""

PLAN_ID = "brief-plan-1"


def plan_script() -> list[ModelTurn]:
    """The plan phase, offline: look at the documents, then answer with a plan."""
    return [
        ScriptedModel.use_tool("list_documents", {}, usage=Usage(input_tokens=420, output_tokens=18)),
        ScriptedModel.reply(
            "Here is the plan.\n```json\n"
            + json.dumps(
                {
                    "id": PLAN_ID,
                    "goal": "Find what the documents say about resuming long jobs and what that costs",
                    "steps": [
                        {
                            "id": "search",
                            "tool": "search_documents",
                            "input": {"query": "checkpoint crash retried cost"},
                            "save_as": "hits",
                        },
                        {
                            "id": "read",
                            "tool": "read_document",
                            "each": [{"name": "checkpoints.md"}, {"name": "costs.md"}],
                            "save_as": "texts",
                        },
                        {
                            "id": "compare",
                            "steps": [
                                {"id": "trail", "tool": "read_document", "input": {"name": "cairns.md"}, "when": "hits"}
                            ],
                        },
                    ],
                },
                indent=2,
            )
            + "\n```",
            usage=Usage(input_tokens=610, output_tokens=160),
        ),
    ]


def write_script() -> list[ModelTurn]:
    """The write phase, offline: check one more thing, then answer with the brief."""
    return [
        ScriptedModel.use_tool(
            "search_documents", {"query": "retried lost twice"}, usage=Usage(input_tokens=900, output_tokens=22)
        ),
        ScriptedModel.reply(
            "Long jobs need checkpoints because a crash, a timeout or a retry must not lose or repeat committed "
            "work: a job restarts from its last checkpoint, as a walker who loses the trail heads back to the last "
            "cairn seen. Each checkpoint costs about one write unit per kilobyte of state, far less than a "
            "per-transition charge, and large states belong in object storage. Work after the last checkpoint may "
            "run again, so a step saves its progress before any slow or costly action.",
            usage=Usage(input_tokens=1350, output_tokens=120),
        ),
    ]


def model_for(script: Callable[[], Sequence[ModelTurn]]) -> Callable[[], Model]:
    """A factory of the phase's model: Bedrock when ``AGENT_MODEL_ID`` is set, else ``script``'s turns replayed.

    The turns are made with the model, on first use (importing the pipeline builds none of them).
    """

    def make() -> Model:
        model_id = os.environ.get(AGENT_MODEL_ID, "").strip()
        if model_id:
            from cairn.aws.bedrock import BedrockModel

            return BedrockModel(model_id)
        return ScriptedModel(script(), model_id="scripted")

    return make
