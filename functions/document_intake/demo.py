"""Run document-intake locally on FileStorage, kill its worker mid-phase, then resume the job.

    python -m document_intake.demo [--store DIR] [--document NAME] [--no-crash]

Run 1 happens in a child process that dies with ``os._exit(137)`` (what a
``kill -9`` looks like to its parent) right after the checkpoint for page 2 is
on disk. This process then shows the checkpoint it finds and resumes the job
with ``run_pipeline(..., retry_mode="resume")`` and ``InlineScheduler.drain()``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import cairn
from cairn import Cairn, CairnError, FileStorage, InlineScheduler, Job, JobStatus, RetryMode

from .pipeline import pipeline
from .progress import Progress, plural, state_of
from .sources import SAMPLES_DIR
from .state import IntakeState
from .watch import WatchedStorage

DEFAULT_STORE = Path(".cairn/demo")
DEFAULT_DOCUMENT = "contract"
CRASH_AFTER_PAGE = 2
CRASH_EXIT_CODE = 137
"""The exit status a shell reports for a process killed by SIGKILL (128 + 9)."""


class DemoError(Exception):
    """Something the demo did not expect; reported on stderr with exit code 1."""


def sample_names() -> list[str]:
    """The sample documents shipped in ``samples/``."""
    return sorted(path.stem for path in SAMPLES_DIR.glob("*.txt"))


def resolve_document(name: str) -> str:
    """The ``document`` source for a sample name (``invoice``), a sample file name, or a file path."""
    if Path(name).name == name:
        for candidate in (SAMPLES_DIR / name, SAMPLES_DIR / f"{name}.txt"):
            if candidate.is_file():
                return candidate.name
    path = Path(name).expanduser()
    if path.is_file():
        return str(path.resolve())
    raise DemoError(f'No document "{name}": use a sample ({", ".join(sample_names())}) or a path to a text file')


def job_id_for(source: str) -> str:
    """A job id derived from the document's file name."""
    return "demo-" + re.sub(r"[^A-Za-z0-9._-]+", "-", Path(source).stem).strip("-._")


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m document_intake.demo",
        description="Run the document-intake pipeline locally, crash its worker mid-extract, and resume it.",
    )
    parser.add_argument(
        "--store",
        type=Path,
        help=f"job store directory (default {DEFAULT_STORE}, emptied first; a given one only loses the demo job)",
    )
    parser.add_argument(
        "--document",
        default=DEFAULT_DOCUMENT,
        help=f"a sample ({', '.join(sample_names())}) or a text file path (default {DEFAULT_DOCUMENT})",
    )
    parser.add_argument("--no-crash", action="store_true", help="run once, in this process, without the crash")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _run(
    storage: FileStorage, job_id: str, document: str, progress: Progress, mode: RetryMode, *, crash: bool = False
) -> None:
    """Start (or resume) the job and drain the scheduler, printing progress as it goes."""

    def on_save(job: Job) -> None:
        if progress.page_saved(job) == CRASH_AFTER_PAGE and crash:
            os._exit(CRASH_EXIT_CODE)  # die on the spot: no cleanup, no commit, like kill -9

    watched = WatchedStorage(storage, on_save=on_save)
    scheduler = InlineScheduler()
    app = Cairn(pipeline, storage=watched, scheduler=scheduler)
    scheduler.bind(progress.advancer(app))
    if mode == RetryMode.RESUME:
        app.retry(job_id)
    elif watched.get_job(job_id) is None:
        app.start(pipeline, job_id, state=IntakeState(document=document))
    else:
        app.retry(job_id, mode=RetryMode.FULL, state=IntakeState(document=document))
    scheduler.drain()


def _worker_env() -> dict[str, str]:
    roots = [str(Path(cairn.__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]
    inherited = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*roots, *([inherited] if inherited else [])])}


def _run_worker(store: Path, document: str) -> int:
    """Run 1 in a child process of this same module; returns its exit code."""
    command = [sys.executable, "-m", __spec__.name if __spec__ else "document_intake.demo"]
    command += ["--worker", "--store", str(store.resolve()), "--document", document]
    return subprocess.run(command, env=_worker_env(), check=False).returncode


def _show_checkpoint(storage: FileStorage, job_id: str, out: Progress) -> None:
    job = storage.get_job(job_id)
    if job is None or job.checkpoint is None:
        raise DemoError(f'No checkpoint for job "{job_id}" in {storage.directory} after the crash')
    state = state_of(job) or IntakeState()
    written = datetime.fromtimestamp(job.checkpoint.created_at / 1000, tz=UTC)
    out.say(f"Checkpoint found on disk: {storage.path_for(job_id)}")
    out.say(f"  status      {job.status.value} (its worker is gone; nothing after the last save was written)")
    out.say(f"  nextPhase   {job.checkpoint.next_phase}")
    out.say(f"  pages done  {state.pages_done} of {len(state.pages)}")
    out.say(f"  createdAt   {job.checkpoint.created_at} ({written.isoformat(timespec='milliseconds')})")
    out.say(f"  store       {storage.health().recommendation}")


def _show_result(storage: FileStorage, job_id: str, out: Progress) -> None:
    job = storage.get_job(job_id)
    if job is None:
        raise DemoError(f'Job "{job_id}" is missing from {storage.directory}')
    if job.status != JobStatus.COMPLETE or not isinstance(job.result, dict):
        raise DemoError(f'Job "{job_id}" ended {job.status.value}: {job.error or "no result"}')
    result = job.result
    document, fields = result["document"], result["fields"]
    references = ", ".join(f"{kind} {value}" for kind, value in fields["references"].items())
    parties = "; ".join(f"{party['role']}: {party['name']}" for party in fields["parties"])
    labelled = [f"{date['value']} ({date['label']})" for date in fields["dates"] if date["label"]]
    totals = ", ".join(f"{key} {amount['currency']} {amount['value']}" for key, amount in fields["totals"].items())
    checks = result["checks"]
    usage = ", ".join(f"{key}={value:g}" for key, value in sorted(job.usage.items()))
    once = " (each page extracted once)" if job.usage.get("pages") == document["pages"] else ""
    out.say(f"Job {job_id}: {job.status.value}")
    out.say(f'  document    "{document["title"]}" ({document["kind"]}, {plural(document["pages"], "page")})')
    out.say(f"  references  {references or '-'}")
    out.say(f"  parties     {parties or '-'}")
    out.say(f"  dates       {len(fields['dates'])} found; labelled: {', '.join(labelled) or '-'}")
    out.say(f"  totals      {totals or '-'}")
    out.say(f"  emails      {', '.join(fields['emails']) or '-'}")
    if checks:
        out.say(f"  checks      {sum(check['passed'] for check in checks)} of {len(checks)} passed")
    out.say(f"  phases      {' -> '.join(record.phase for record in job.phases)}")
    out.say(f"  usage       {usage}{once}")
    out.say(f"  job file    {storage.path_for(job_id)}")


def _reset(store: Path | None, job_id: str) -> tuple[Path, str]:
    if store is None:
        shutil.rmtree(DEFAULT_STORE, ignore_errors=True)
        return DEFAULT_STORE, "emptied"
    FileStorage(store).delete(job_id)
    return store, f'job "{job_id}" removed'


def demo(args: argparse.Namespace) -> int:
    """The demo as seen from the parent process."""
    document = resolve_document(args.document)
    job_id = job_id_for(document)
    store, reset = _reset(args.store, job_id)
    storage = FileStorage(store)
    out = Progress()
    out.say("document-intake demo")
    out.say(f"  document  {document}")
    out.say(f"  store     {store} ({reset})")
    out.say(f"  job       {job_id}")
    out.say()
    if args.no_crash:
        out.say("Run - in this process, no crash")
        _run(storage, job_id, document, out, RetryMode.FULL)
    else:
        out.say(f"Run 1 - a worker process starts the job; it is killed right after page {CRASH_AFTER_PAGE} is saved")
        code = _run_worker(store, document)
        job = storage.get_job(job_id)
        if code == CRASH_EXIT_CODE:
            out.say(f"  CRASH    worker process died (exit code {code}) right after the page {CRASH_AFTER_PAGE} save")
        elif code != 0:
            raise DemoError(f"the worker process failed unexpectedly with exit code {code}")
        elif job is None or job.status != JobStatus.COMPLETE:
            status = job.status.value if job else "missing"
            raise DemoError(f"the job stopped before the crash point: {status}: {job.error if job else ''}")
        else:
            out.say(f"  worker finished: the document has fewer than {CRASH_AFTER_PAGE} pages, so no crash")
        if job is None or job.status != JobStatus.COMPLETE:
            out.say()
            _show_checkpoint(storage, job_id, out)
            out.say()
            out.say('Run 2 - resume in this process: run_pipeline(..., retry_mode="resume") + InlineScheduler.drain()')
            _run(storage, job_id, document, out, RetryMode.RESUME)
    out.say()
    _show_result(storage, job_id, out)
    return 0


def worker(args: argparse.Namespace) -> int:
    """Run 1, in the child process: start the job from scratch; die after the chosen page is saved."""
    document = resolve_document(args.document)
    store = args.store or DEFAULT_STORE
    _run(FileStorage(store), job_id_for(document), document, Progress(), RetryMode.FULL, crash=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; exit code 0 on success, 1 with a message on stderr otherwise."""
    args = _parse(argv)
    try:
        return worker(args) if args.worker else demo(args)
    except (DemoError, CairnError, OSError) as exc:
        print(f"demo failed: {exc}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
