"""``cairn jobs pull JOB``: one job read through the API (view, history, log, entry states, maps) into one file.

The file (:mod:`cairn.storage.job_file`) is written whole or not at all: to a temporary file beside it,
renamed over the name only once everything was read and redacted. A job the caller cannot read (the
API shows each caller only its own jobs: another owner's answers 404) writes nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..core.errors import InvalidInputError
from ..core.models import Checkpoint, LogEntry, PhaseRecord
from ..storage.job_file import SUFFIX, JobFile, PulledJob, PulledWrite, code_versions, redact, signals_of, unmatched
from .errors import ApiError, RequestFailed
from .http import ApiClient, Json
from .options import UsageError


class NotReadable(RequestFailed):
    """The API would not show the job to this caller (absent, expired, or another owner's)."""


def _checked(job_id: str, call: Any) -> Json:
    try:
        answer: Json = call()
    except ApiError as exc:
        if exc.status in (403, 404):
            raise NotReadable(
                f'cannot read job "{job_id}" as this caller: the API answered {exc.status} (no such job, or one '
                "of another owner: each caller reads only its own jobs); nothing was written"
            ) from None
        raise
    return answer


class UnmatchedRedaction(RequestFailed):
    """A ``--redact`` path reached no field of the job: it would hide nothing, so nothing is written."""

    def __init__(self, job_id: str, paths: list[str]) -> None:
        super().__init__(
            f'--redact {", ".join(paths)} matched no field of job "{job_id}" (its input, states, result or maps): '
            "nothing was redacted by it, so nothing was written; check the path"
        )


def _writes(client: ApiClient, job_id: str) -> list[PulledWrite]:
    """Every write of the job's history, oldest first (the API gives them newest first, a page at a time)."""
    newest_first: list[Json] = []
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        page = _checked(job_id, lambda after=cursor: client.history(job_id, limit=100, cursor=after))
        newest_first.extend(page.get("writes") or [])
        cursor = page.get("cursor")
        if not cursor or cursor in seen:
            break
        seen.add(cursor)
    return [PulledWrite.model_validate(write) for write in reversed(newest_first)]


LOG_PAGE = 500
"""Log entries read a page (the API's most)."""


def _log(client: ApiClient, job_id: str) -> list[LogEntry]:
    """The job's whole log, oldest first, a page at a time."""
    entries: list[LogEntry] = []
    cursor: str | None = None
    path = f"/jobs/{quote(job_id, safe='')}/log"
    while True:
        query = {"limit": LOG_PAGE, "cursor": cursor}
        page = _checked(job_id, lambda query=query: client.request("GET", path, query=query))
        entries.extend(LogEntry.model_validate(entry) for entry in page.get("entries") or [])
        following = page.get("cursor")
        if not following or following == cursor or not page.get("entries"):
            return entries
        cursor = following


def _entries(client: ApiClient, job_id: str, writes: list[PulledWrite], view: Json) -> list[PulledWrite]:
    """The writes with the checkpoint each phase was (last) entered with, on the write that entered it."""
    records = [write.record for write in writes if write.record is not None]
    phases = [name for record in records for name in (record.phase, record.next_phase) if name]
    if view.get("nextPhase"):
        phases.append(view["nextPhase"])
    kept = list(writes)
    for phase in dict.fromkeys(phases):
        try:
            entered = client.entered_state(job_id, phase)
        except ApiError as exc:
            if exc.status != 404:
                raise
            if phase != view.get("nextPhase") or "state" not in view:
                continue  # no entry kept for it (a map's item phase, say)
            # the phase the job waits to enter (not run yet): its entry is the job's checkpoint
            entered = {"state": view["state"], "enteredAt": view.get("checkpointCreatedAt") or 0, **_version(view)}
        entry = Checkpoint(
            next_phase=phase,
            state=entered.get("state"),
            created_at=int(entered["enteredAt"]),
            state_version=entered.get("stateVersion"),
        )
        at = _entering(kept, phase)
        if at is not None:
            kept[at] = kept[at].model_copy(update={"entry": entry})
    return kept


def _version(view: Json) -> Json:
    """The view's ``stateVersion``, when it has one."""
    return {"stateVersion": view["stateVersion"]} if view.get("stateVersion") is not None else {}


def _entering(writes: list[PulledWrite], phase: str) -> int | None:
    """The newest write that entered ``phase`` (a commit moving to it), else the first write (the start)."""
    for index in range(len(writes) - 1, -1, -1):
        record: PhaseRecord | None = writes[index].record
        if record is not None and record.next_phase == phase and record.outcome == "next":
            return index
    free = [index for index, write in enumerate(writes) if write.entry is None]
    return free[0] if free else None


def pull(client: ApiClient, job_id: str, *, redact_paths: list[str], now_ms: int) -> JobFile:
    """The job file of ``job_id`` as the API shows it to this client's caller, with ``redact_paths`` redacted.

    A path that reaches no field of the job (a typo, say) is UnmatchedRedaction: a file that would say it was
    redacted while the field it meant is still there is never written.
    """
    view = _checked(job_id, lambda: client.get(job_id, include_state=True, include_input=True))
    writes = _entries(client, job_id, _writes(client, job_id), view)
    log = _log(client, job_id)
    in_history = sum(len(write.log) for write in writes)
    if len(log) > in_history and writes:  # operator actions not yet in the history: they end the log
        last = writes[-1]
        writes[-1] = last.model_copy(update={"log": [*last.log, *log[in_history:]]})
    maps = _checked(job_id, lambda: client.maps(job_id)).get("maps") or []
    checkpoint = None
    if view.get("nextPhase") is not None:
        checkpoint = Checkpoint(
            next_phase=view["nextPhase"],
            state=view.get("state"),
            created_at=int(view.get("checkpointCreatedAt") or 0),
            state_version=view.get("stateVersion"),
        )
    job = PulledJob.model_validate({**view, "checkpoint": checkpoint, "input": view.get("input")})
    pulled = JobFile(
        pulled_at=now_ms,
        pulled_from=client.base_url,
        job=job,
        history=writes,
        code_versions=code_versions(writes),
        signals=signals_of(writes),
        maps=maps,
    )
    missed = unmatched(pulled, redact_paths)
    if missed:
        raise UnmatchedRedaction(job_id, missed)
    return redact(pulled, redact_paths)


def write_whole(path: Path, text: str, *, force: bool) -> None:
    """``text`` written to ``path`` at once (a temporary file renamed over it); an existing file needs ``force``."""
    if path.exists() and not force:
        raise UsageError(f"{path} exists; add --force to overwrite it")
    directory = path.parent if str(path.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=SUFFIX, dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        if path.exists() and not force:  # appeared meanwhile
            raise UsageError(f"{path} exists; add --force to overwrite it")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def run_pull(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs pull ID [-o FILE] [--redact PATH]... [--force]``: the job written to one file."""
    try:
        now_ms = int(time.time() * 1000)
        pulled = pull(client, arguments.job_id, redact_paths=list(arguments.redact or []), now_ms=now_ms)
    except InvalidInputError as exc:
        raise UsageError(str(exc)) from None
    path = Path(arguments.output or f"{arguments.job_id}{SUFFIX}")
    write_whole(path, pulled.to_json(), force=arguments.force)
    if arguments.json:
        print(pulled.to_json(), end="")
    else:
        writes, redacted = len(pulled.history), ", ".join(pulled.redacted) or "nothing"
        print(f"{path}: job {pulled.job.job_id} ({pulled.job.status.value}), {writes} writes; redacted {redacted}")
    sys.stdout.flush()
    return 0


def add_pull(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``cairn jobs pull``."""
    parser.add_argument("job_id", metavar="ID", help="the job's id (one of yours: the API shows no other owner's)")
    parser.add_argument(
        "-o", "--output", metavar="FILE", help=f"where to write the job (default: ID{SUFFIX} in this folder)"
    )
    parser.add_argument(
        "--redact",
        action="append",
        metavar="PATH",
        help='a dotted path into states, e.g. state.customer.email: replaced by "[redacted]" in the input, every '
        "checkpoint state, the result and the maps, and the value it held wherever else it appears (errors, log "
        "lines, tracebacks) (repeatable); a path that matches no field of the job is an error (exit 1) and nothing "
        "is written",
    )
    parser.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
