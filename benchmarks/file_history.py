"""Benchmark: a FileStorage transition costs the same at the 1,000th phase as at the 10th.

One job loops through 1,000 phases, each logging a line. Printed: the median time of a transition
over the first and the last 100 phases, their ratio, and the bytes the job file holds at both ends
(the history goes to an append-only file beside it).
Run: ``make bench``, or ``PYTHONPATH=layers/cairn:functions:. .venv/bin/python benchmarks/file_history.py``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from cairn import Done, FileStorage, InlineScheduler, Next, PhaseContext, Pipeline, advance_phase, run_pipeline

PHASES = 1000
WINDOW = 100


def main() -> None:
    """Run the long job and print the figures."""
    pipeline: Pipeline[Any] = Pipeline("long")

    @pipeline.phase
    def loop(ctx: PhaseContext[Any]) -> Next | Done:
        count = ctx.state["count"] + 1
        ctx.log(f"phase {count} of {PHASES}")
        return Next("loop", {"count": count}) if count < PHASES else Done({"count": count})

    with tempfile.TemporaryDirectory() as directory:
        storage = FileStorage(directory)
        scheduler = InlineScheduler()
        timings: list[float] = []
        sizes: list[int] = []
        job_file = Path(directory) / "long-1.json"

        def advance(job_id: str, **message: Any) -> None:
            started = time.perf_counter()
            advance_phase(job_id, pipeline, storage=storage, scheduler=scheduler, **message)
            timings.append((time.perf_counter() - started) * 1000)
            sizes.append(job_file.stat().st_size)

        scheduler.bind(advance)
        run_pipeline("long-1", pipeline, storage=storage, scheduler=scheduler, initial_state={"count": 0})
        scheduler.drain()
        history = (Path(directory) / "long-1.history.jsonl").stat().st_size

    early = statistics.median(timings[:WINDOW])
    late = statistics.median(timings[-WINDOW:])
    print(f"FileStorage, one job of {PHASES} phases (a log line each)")
    print(f"  median transition, phases 1-{WINDOW}:            {early:7.2f} ms")
    print(f"  median transition, phases {PHASES - WINDOW + 1}-{PHASES}:       {late:7.2f} ms")
    print(f"  ratio late / early:                    {late / early:7.2f}x")
    print(f"  job file after phase 1 / {PHASES}:         {sizes[0]} / {sizes[-1]} bytes")
    print(f"  history file at the end:               {history} bytes")


if __name__ == "__main__":
    main()
