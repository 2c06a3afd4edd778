"""Redaction on the engine's path (memory store): what a failing phase's error, traceback, log lines and annotations
store, a map item's too, with a pipeline's patterns and fields; the rule's own edges (diffs, short values)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cairn import Done, Map, PhaseContext, Pipeline, run_pipeline
from cairn.core.errors import ConfigurationError
from cairn.core.redaction import REDACTED, redacted_document, redaction_of
from cairn.core.settings import REDACT, Settings
from cairn.core.storage_port import Storage
from tests.support import FakeClock, job_of, make_scheduler

FIELD_SECRET = "hunter2-field-value"
PATTERN_SECRET = "tok-live-4242abcd"


def _stored(storage: Storage, job_id: str) -> str:
    return json.dumps(job_of(storage, job_id).to_wire())


def test_a_failing_phase_stores_its_error_traceback_log_and_annotations_redacted(
    storage: Storage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(REDACT, raising=False)
    pipeline: Pipeline[Any] = Pipeline("vault", redact_patterns=["tok-live-[0-9a-f]+"], redact_fields=["state.key"])

    @pipeline.phase
    def call(ctx: PhaseContext[Any]) -> Done:
        ctx.log(f"with {ctx.state['key']} and {PATTERN_SECRET}")
        ctx.decide(f"try {PATTERN_SECRET}", reason=f"{ctx.state['key']} is fresh")
        raise RuntimeError(f"401 for {ctx.state['key']} ({PATTERN_SECRET})")

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("v-1", pipeline, storage=storage, scheduler=scheduler, initial_state={"key": FIELD_SECRET})
    scheduler.drain()

    job = job_of(storage, "v-1")
    assert job.error == "401 for [redacted] ([redacted])"
    failure = job.phases[-1].failure
    assert failure is not None
    assert "RuntimeError: 401 for [redacted] ([redacted])" in failure.traceback
    texts = [(entry.message, entry.reason) for entry in job.log]
    assert ("with [redacted] and [redacted]", None) in texts
    assert ("try [redacted]", "[redacted] is fresh") in texts
    stored = _stored(storage, "v-1")
    assert PATTERN_SECRET not in stored
    assert stored.count(FIELD_SECRET) == stored.count('"key": "hunter2')  # only in the states, kept to resume


def test_a_failing_map_item_stores_its_error_and_traceback_redacted(
    storage: Storage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(REDACT, raising=False)
    pipeline: Pipeline[Any] = Pipeline("fan", redact_fields=["state.key"])

    @pipeline.phase
    def split(ctx: PhaseContext[Any]) -> Map:
        return Map(items=[{"key": FIELD_SECRET}], phase="item", then="join")

    @pipeline.phase
    def item(ctx: PhaseContext[Any]) -> Done:
        raise RuntimeError(f"bad {ctx.state['key']}")

    @pipeline.phase
    def join(ctx: PhaseContext[Any]) -> Done:
        return Done(ctx.results)

    scheduler = make_scheduler(pipeline, storage, clock)
    run_pipeline("m-1", pipeline, storage=storage, scheduler=scheduler, initial_state={})
    scheduler.drain()

    job = job_of(storage, "m-1")
    assert job.error is not None
    assert "bad [redacted]" in job.error
    assert FIELD_SECRET not in job.error


def test_a_document_has_its_fields_erased_and_their_values_redacted_in_every_text() -> None:
    redaction = redaction_of(["tok-[0-9]+"], ["state.key"], where="test")
    document = {
        "job": {"input": {"key": "secret-1", "n": 1}, "error": "failed with secret-1 and tok-42"},
        "changes": [{"path": "/key", "change": "changed", "before": "secret-1", "after": "secret-22"}],
        "log": [{"message": "secret-22 seen"}],
    }
    redacted = redacted_document(document, redaction)
    assert redacted["job"] == {"input": {"key": REDACTED, "n": 1}, "error": "failed with [redacted] and [redacted]"}
    assert redacted["changes"][0] == {"path": "/key", "change": "changed", "before": REDACTED, "after": REDACTED}
    assert redacted["log"] == [{"message": "[redacted] seen"}]


def test_a_short_value_is_not_searched_for_in_texts() -> None:
    redaction = redaction_of([], ["state.key"], where="test").knowing({"key": "ab"})
    assert redaction.text("a tab") == "a tab"


def test_a_bad_stack_redaction_is_refused_when_the_settings_are_read() -> None:
    with pytest.raises(ConfigurationError, match=REDACT):
        Settings.from_env({REDACT: '{"patterns": ["tok-("]}'})
    assert Settings.from_env({REDACT: ""}).driver == "direct"
