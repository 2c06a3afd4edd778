"""cairn: a pipeline of N no-op phases (each returns ``Next`` to the following one, the last ``Done``).

A step is a phase transition: claim, run, commit (with the file store: the job's JSON file written and
fsynced, its history appended). The front door runs it: ``Cairn(pipeline, storage=..., scheduler=InlineScheduler())``,
``start`` then ``run_until_idle``; timed from ``start`` to the result read back. The store's ``os.fsync`` and
``os.replace`` calls are counted (per step, in ``info``). Runs in the test suite's
``.venv`` (``--store memory`` or ``--store file``); see ``_harness.py`` for the arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "layers" / "cairn"), str(Path(__file__).resolve().parent)]

from _harness import Measure, main  # noqa: E402

from cairn import Cairn, Done, FileStorage, InlineScheduler, MemoryStorage, Next, PhaseContext, Pipeline  # noqa: E402
from cairn.core.storage_port import Storage  # noqa: E402
from cairn.distribution import version  # noqa: E402


def pipeline_of(steps: int) -> Pipeline[Any]:
    """A pipeline of ``steps`` no-op phases ``s0`` ... ``s<steps-1>``, run in that order."""
    pipeline: Pipeline[Any] = Pipeline(f"steps-{steps}")
    for index in range(steps):

        def phase(ctx: PhaseContext[Any], index: int = index) -> Next | Done:
            if index == steps - 1:
                return Done({"steps": steps})
            return Next(f"s{index + 1}", ctx.state)

        pipeline.phase(name=f"s{index}")(phase)
    return pipeline


@contextmanager
def session(arguments: argparse.Namespace) -> Iterator[tuple[Measure, dict[str, Any]]]:
    """A store (in memory, or files in a temporary folder) and a front door per length."""
    calls = {"fsync": 0, "replace": 0}
    fsync, replace = os.fsync, os.replace
    fdatasync = getattr(os, "fdatasync", None) or os.fsync

    def counted_fsync(fd: Any) -> None:
        calls["fsync"] += 1
        fsync(fd)

    def counted_fdatasync(fd: Any) -> None:
        calls["fsync"] += 1
        fdatasync(fd)

    def counted_replace(source: Any, destination: Any) -> None:
        calls["replace"] += 1
        replace(source, destination)

    info: dict[str, Any] = {"store": arguments.store, "cairn": version()}
    with tempfile.TemporaryDirectory(prefix="cairn-peers-") as directory:
        storage: Storage = MemoryStorage() if arguments.store == "memory" else FileStorage(directory)
        info["store"] = type(storage).__name__
        apps: dict[int, tuple[Cairn, Pipeline[Any]]] = {}

        def measure(steps: int) -> float:
            if steps not in apps:
                pipeline = pipeline_of(steps)
                apps[steps] = (Cairn(pipeline, storage=storage, scheduler=InlineScheduler()), pipeline)
            app, pipeline = apps[steps]
            before = dict(calls)
            started = time.perf_counter()
            job = app.start(pipeline, state={"steps": steps})
            app.run_until_idle()
            result = app.get(job.job_id).result
            elapsed = time.perf_counter() - started
            for name, count in calls.items():
                info[f"{name}_calls_per_step"] = round((count - before[name]) / steps, 2)
            if result != {"steps": steps}:
                raise RuntimeError(f"cairn: unexpected result {result!r}")
            return elapsed

        # Counted, not changed: os.fsync and os.fdatasync (both counted as flushes) and os.replace as the store calls
        # them (the last run's, per step).
        with (
            mock.patch.object(os, "fsync", counted_fsync),
            mock.patch.object(os, "fdatasync", counted_fdatasync, create=True),
            mock.patch.object(os, "replace", counted_replace),
        ):
            yield measure, info


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", choices=["memory", "file"], default="file")


if __name__ == "__main__":
    raise SystemExit(main(__doc__ or "", session, options=_options))
