"""Small pipelines for the DynamoDB tests."""

from __future__ import annotations

from typing import Any

from cairn import Done, Next, PhaseContext, Pipeline, RetryPolicy, WaitFor

PHASES = ["fetch", "split", "extract", "publish"]


def four_phase_pipeline() -> Pipeline[Any]:
    """Four phases that each log a line and an annotation; the last returns the collected trail."""
    pipeline: Pipeline[Any] = Pipeline("four-phase")

    def make(name: str, following: str | None) -> None:
        def phase(ctx: PhaseContext[Any]) -> Next | Done:
            ctx.log(f"{name} ran")
            ctx.observe(f"{name} saw {len(ctx.state['trail'])} earlier phases")
            ctx.add_usage(steps=1)
            state = {"trail": [*ctx.state["trail"], name]}
            return Next(following, state) if following else Done(state)

        pipeline.phase(name=name)(phase)

    for index, name in enumerate(PHASES):
        make(name, PHASES[index + 1] if index + 1 < len(PHASES) else None)
    return pipeline


def approval_pipeline() -> Pipeline[Any]:
    """``ask`` waits for the signal ``approval``; ``decide`` finishes with the request and the signal's payload."""
    pipeline: Pipeline[Any] = Pipeline("approval")

    @pipeline.phase(name="ask")
    def ask(ctx: PhaseContext[Any]) -> WaitFor:
        ctx.log("waiting for approval")
        return WaitFor("approval", "decide", {"request": ctx.state})

    @pipeline.phase(name="decide")
    def decide(ctx: PhaseContext[Any]) -> Done:
        return Done({"request": ctx.state["request"], "approval": ctx.signal})

    return pipeline


def _total_with_tax(total: Any) -> Any:
    return total * 1.2  # a str total: TypeError


def pricing_pipeline() -> Pipeline[Any]:
    """``price`` raises TypeError (a bug in the user's code) on a string total, on each of its two attempts."""
    pipeline: Pipeline[Any] = Pipeline("pricing")

    @pipeline.phase(name="price", retry=RetryPolicy(max_attempts=2, backoff=0, jitter=False, retry_on=(TypeError,)))
    def price(ctx: PhaseContext[Any]) -> Done:
        return Done({"total": _total_with_tax(ctx.state["total"])})

    return pipeline


def flaky_pipeline(broken: set[str]) -> Pipeline[Any]:
    """``work`` fails (RuntimeError, no retry) while its job's id is in ``broken``; then it finishes with its state."""
    pipeline: Pipeline[Any] = Pipeline("flaky")

    @pipeline.phase(name="work", retry=RetryPolicy(max_attempts=1))
    def work(ctx: PhaseContext[Any]) -> Done:
        if ctx.job_id in broken:
            raise RuntimeError("the upstream service is down")
        ctx.log("work done")
        return Done(ctx.state)

    return pipeline
