"""The files of a new pipeline: its package, its test and the sample events of its phase functions."""

from __future__ import annotations

import textwrap
from pathlib import Path

from ...core.naming import pascal
from ..events import PipelineOutline, dump, phase_events
from .names import PHASES, module_name


def render_init(name: str) -> str:
    """The new package's ``__init__.py``."""
    return f'"""The {name} pipeline: its phases are in ``pipeline.py``, registered in ``functions/pipelines.py``."""\n'


def render_pipeline(name: str) -> str:
    """The new pipeline's module: a state model and two phases that show the API."""
    state = f"{pascal(name)}State"
    return textwrap.dedent(
        f'''\
        """The {name} pipeline: ``start`` -> ``finish``.

        ``start`` checks the input; ``finish`` works through the items and saves the state after each one,
        so a crash re-enters it at the first item not yet saved instead of starting over. What each phase
        needs from Lambda (timeout in seconds, memory in MB, retries) is declared on its decorator;
        ``cairn template sync`` writes it into template.yaml.
        """

        from __future__ import annotations

        from pydantic import BaseModel, Field

        from cairn import Done, Next, PhaseContext, Pipeline, RetryPolicy


        class {state}(BaseModel):
            """The job's state, saved in its checkpoint: the items to process and the results so far."""

            items: list[str] = Field(default_factory=list)
            results: list[str] = Field(default_factory=list)


        pipeline = Pipeline("{name}", state={state})  # the first phase registered runs first


        def process(item: str) -> str:
            """The work done on one item: replace it with the real thing."""
            return item.strip().upper()


        @pipeline.phase(timeout=30, memory=256, retry=RetryPolicy(max_attempts=2))
        def start(ctx: PhaseContext[{state}]) -> Next:
            """Drop blank items, then hand the rest to ``finish``."""
            items = [item for item in ctx.state.items if item.strip()]
            ctx.log(f"{{len(items)}} items to process")
            return Next("finish", ctx.state.model_copy(update={{"items": items, "results": []}}))


        @pipeline.phase(timeout=120, memory=512, retry=RetryPolicy(max_attempts=3, backoff=2.0))
        def finish(ctx: PhaseContext[{state}]) -> Done:
            """Process the items not yet done, saving after each one; the result lists every item's output."""
            state = ctx.state
            for item in state.items[len(state.results) :]:
                state = state.model_copy(update={{"results": [*state.results, process(item)]}})
                ctx.log(f"processed {{item!r}}")
                ctx.save_state(state)  # a crash after this line resumes "finish" at the next item
            return Done({{"results": state.results}})
        '''
    )


def render_test(name: str) -> str:
    """The new pipeline's test: a job to the end, and a crash mid-phase resumed from its checkpoint."""
    module = module_name(name)
    state = f"{pascal(name)}State"
    return textwrap.dedent(
        f'''\
        """The {name} pipeline, run locally: a job to the end, and a worker crash resumed from the checkpoint."""

        from __future__ import annotations

        import pytest

        from cairn import Cairn, JobStatus
        from {module} import pipeline as module
        from {module}.pipeline import {state}, pipeline


        class Crash(BaseException):
            """A process death, simulated: not an Exception, so nothing on the way out catches it."""


        def test_a_job_runs_both_phases_to_the_end() -> None:
            app = Cairn(pipeline)
            app.start(pipeline, "job-1", state={state}(items=["a", " ", "b"]))

            app.run_until_idle()

            job = app.get("job-1")
            assert job.status == JobStatus.COMPLETE
            assert job.result == {{"results": ["A", "B"]}}
            assert [record.phase for record in job.phases] == ["start", "finish"]


        def test_a_crash_mid_finish_resumes_at_the_first_item_not_saved(monkeypatch: pytest.MonkeyPatch) -> None:
            app = Cairn(pipeline)
            processed: list[str] = []

            def dies_on_c_once(item: str) -> str:
                processed.append(item)
                if item == "c" and processed.count("c") == 1:
                    raise Crash("the worker died while processing c")
                return item.upper()

            monkeypatch.setattr(module, "process", dies_on_c_once)
            app.start(pipeline, "job-2", state={{"items": ["a", "b", "c", "d"]}})
            with pytest.raises(Crash):
                app.run_until_idle()

            crashed = app.get("job-2")
            assert crashed.status == JobStatus.RUNNING
            assert crashed.checkpoint is not None
            assert crashed.checkpoint.next_phase == "finish"
            assert crashed.checkpoint.state["results"] == ["A", "B"]

            app.retry("job-2")  # resume: from the checkpoint, taking over the dead worker's claim
            app.run_until_idle()

            job = app.get("job-2")
            assert job.status == JobStatus.COMPLETE
            assert job.result == {{"results": ["A", "B", "C", "D"]}}
            assert processed == ["a", "b", "c", "c", "d"]  # a and b were saved before the crash: not redone
        '''
    )


def render_events(name: str, root: Path) -> dict[Path, str]:
    """The sample events of the new pipeline's phase functions (``sam local invoke -e``), by path under ``root``."""
    return {root / path: dump(event) for path, event in phase_events(PipelineOutline(name, PHASES)).items()}
