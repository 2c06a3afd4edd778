"""Plain-text views of the API's JSON: a job table, a job's details and timeline, log lines, a status line."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..features.cost import format_usd

Json = Mapping[str, Any]
_MISSING = "-"
_RESULT_CHARS = 100
_SAMPLE_CHARS = 80
"""The most characters of a failure group's sample message `cairn jobs failures` prints."""
_ERROR_CHARS = 80
"""The most characters of a failed job's error `cairn jobs list` prints (`cairn jobs show` has it whole)."""
_HASH_PREFIX = "sha256:"  # a hash of the phase's module (cairn.core.versions)
_HEX = frozenset("0123456789abcdef")
_SHORT_HASH = 12
_LONG_HASH = 16  # hex digits from which a version is a hash to shorten (a commit's 40), not a build number
_SHORT_VERSION = 20


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, indent: str = "") -> str:
    """Columns as wide as their widest cell, two spaces apart; no trailing spaces."""
    widths = [max(len(str(row[index])) for row in [headers, *rows]) for index in range(len(headers))]
    lines = [
        indent + "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [headers, *rows]
    ]
    return "\n".join(lines)


def clock_time(ms: Any, *, date: bool = True) -> str:
    """A Unix time in milliseconds as local time (``2025-03-12 19:03:58``; only the time with ``date=False``)."""
    if not isinstance(ms, int | float):
        return _MISSING
    moment = datetime.fromtimestamp(ms / 1000).astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S" if date else "%H:%M:%S")


def age(ms: Any, now_ms: int) -> str:
    """How long ago a Unix time in milliseconds was: ``12s ago``, ``5m ago``, ``3h ago``, ``2d ago``."""
    if not isinstance(ms, int | float):
        return _MISSING
    seconds = max(0, int((now_ms - ms) / 1000))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def duration(ms: Any) -> str:
    """A duration in milliseconds: ``850ms``, ``4.2s``, ``3m 05s``, ``2h 10m``."""
    if not isinstance(ms, int | float):
        return _MISSING
    if ms < 1000:
        return f"{int(ms)}ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, second = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {second:02d}s"
    return f"{minutes // 60}h {minutes % 60:02d}m"


def _text(value: Any) -> str:
    return _MISSING if value is None or value == "" else str(value)


def _error(job: Json) -> str:
    """A failed job's exception type, phase and the first line of its message, shortened (``-`` for another)."""
    if job.get("status") != "error" or job.get("corrupt"):
        return _MISSING
    kind = _text(job.get("errorType") or "failed")
    phase = f" in {job['errorPhase']}" if job.get("errorPhase") else ""
    first = (str(job.get("error") or "").strip().splitlines() or [""])[0]
    return _clipped(f"{kind}{phase}: {first}" if first else f"{kind}{phase}", _ERROR_CHARS)


def jobs_table(jobs: Sequence[Json], now_ms: int) -> str:
    """The listing: job, pipeline, status, when the status last changed, when the job was created (and for a failed
    job its error, when the page has one).

    A listing gives no next phase or attempt (they change between status changes: ``cairn jobs show`` has them).
    """
    if not jobs:
        return "No jobs."
    costed = any("costUsd" in job for job in jobs)  # a listing carries each job's cost (an older API: sorted only)
    failed = any(job.get("status") == "error" for job in jobs)
    rows = [
        [
            _text(job.get("jobId")),
            _text(job.get("pipeline")),
            _text(job.get("status")) + (" (unreadable)" if job.get("corrupt") else "") + _stalled_mark(job),
            age(job.get("updatedAt"), now_ms),
            age(job.get("createdAt"), now_ms),
            *([usd(job.get("costUsd"))] if costed else []),
            *([_error(job)] if failed else []),
        ]
        for job in jobs
    ]
    headers = ["JOB", "PIPELINE", "STATUS", "CHANGED", "CREATED", *(["COST"] if costed else [])]
    return table([*headers, *(["ERROR"] if failed else [])], rows)


def _stalled_mark(job: Json) -> str:
    """`` (stalled)`` after a listed job's status when the API marks it stalled."""
    return " (stalled)" if job.get("stalled") is True else ""


def stalled_lines(stalled: Any, now_ms: int) -> list[tuple[str, str]]:
    """A stalled job's fields in ``cairn jobs show``: since when, why, and what the sweep will do and when."""
    if not isinstance(stalled, dict):
        return []
    sweep_by = stalled.get("sweepBy")
    when = f" by {clock_time(sweep_by)}" if isinstance(sweep_by, int | float) else " at its next run"
    return [
        (
            "Stalled",
            f"since {clock_time(stalled.get('since'))} ({age(stalled.get('since'), now_ms)}): "
            f"{_text(stalled.get('why'))}",
        ),
        ("Next", f"the sweep will {_text(stalled.get('sweep'))}{when}; cairn jobs nudge does it now"),
    ]


def nudge_line(nudge: Json) -> str:
    """``cairn jobs nudge``: what was scheduled."""
    again = "" if nudge.get("first", True) else " (a nudge at this sequence was already recorded; runs once)"
    return (
        f"{_text(nudge.get('jobId'))}: {_text(nudge.get('phase'))} scheduled again at sequence "
        f"{_text(nudge.get('sequence'))}{again}"
    )


def usd(value: Any) -> str:
    """Dollars as ``cairn jobs`` shows them (``-`` for none)."""
    return format_usd(float(value)) if isinstance(value, int | float) else _MISSING


def cost_line(cost: Json) -> str:
    """The job's cost: the dollars, the prices' region and date, and any meter the prices leave out."""
    line = f"{usd(cost.get('usd'))} (at {_text(cost.get('region'))} prices of {_text(cost.get('pricesDate'))})"
    unpriced = cost.get("unpriced") or []
    return line + (f"; not priced: {', '.join(unpriced)}" if unpriced else "")


def failures_table(report: Json) -> str:
    """``cairn jobs failures``: each group (exception type, phase, pipeline), its count, its newest failure and a
    sample message, biggest first; then how to list a group's jobs."""
    groups = report.get("groups") or []
    if not groups:
        return "No failed jobs in this range."
    exact = report.get("exact") is not False
    rows = [
        [
            _text(group.get("type") or "(no exception)"),
            _text(group.get("phase")),
            _text(group.get("pipeline")),
            _text(group.get("count")) if exact else f"{_text(group.get('count'))}+",
            clock_time(group.get("newestAt")),
            _clipped(_text(group.get("sample")), _SAMPLE_CHARS),
        ]
        for group in groups
    ]
    lines = [table(["EXCEPTION", "PHASE", "PIPELINE", "JOBS", "NEWEST", "SAMPLE"], rows)]
    if not exact:
        lines.append(f"More failed jobs than one read examines ({report.get('examined')}): each count is at least so.")
    return "\n".join(lines)


def _clipped(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def counts_table(counts: Json) -> str:
    """``cairn jobs count``: each status and its count (``at least N`` where the API could only bound it)."""
    exact = bool(counts.get("exact"))
    by_status = counts.get("counts") or {}

    def shown(value: Any) -> str:
        return _text(value) if exact else f"at least {_text(value)}"

    rows = [[str(status), shown(value)] for status, value in by_status.items()]
    if isinstance(counts.get("stalled"), int):  # a part of running
        rows.append(["  of which stalled", shown(counts["stalled"])])
    if counts.get("unreadable"):
        rows.append(["unreadable", shown(counts["unreadable"])])
    rows.append(["total", shown(counts.get("total"))])
    note = "" if exact else "\nMore jobs than a count reads: each figure is a lower bound."
    return table(["STATUS", "JOBS"], rows) + note


def _outcome(record: Json) -> str:
    outcome = _text(record.get("outcome"))
    if outcome == "next" and record.get("nextPhase"):
        return f"next -> {record['nextPhase']}"
    return outcome


def short_version(version: Any) -> str:
    """A phase run's code version as a column shows it, like a short git hash: ``sha256:3f2a9c1b7d4e`` is
    ``3f2a9c1b7d4e``, a commit's 40 hex digits their first 12; ``lambda:7`` or a short build id as it is, a
    long one cut (``--json`` has it whole)."""
    if not isinstance(version, str) or not version:
        return _MISSING
    shown = version.removeprefix(_HASH_PREFIX) or version
    if len(shown) >= _LONG_HASH and all(char in _HEX for char in shown.lower()):
        return shown[:_SHORT_HASH]
    return shown if len(shown) <= _SHORT_VERSION else shown[: _SHORT_VERSION - 1] + "…"


def code_changes(phases: Sequence[Json]) -> list[str | None]:
    """For each phase run, the code version the previous run of the same phase ran when its own differs, else None.

    Runs without a version (records written before cairn kept one) are skipped: they neither change nor compare.
    """
    last: dict[Any, str] = {}
    changes: list[str | None] = []
    for record in phases:
        version, phase = record.get("codeVersion"), record.get("phase")
        before = last.get(phase)
        changes.append(before if isinstance(version, str) and version and before not in (None, version) else None)
        if isinstance(version, str) and version:
            last[phase] = version
    return changes


def _code(record: Json, before: str | None) -> str:
    return short_version(record.get("codeVersion")) + (" (changed)" if before is not None else "")


def timeline(phases: Sequence[Json], costs: Sequence[Any] | None = None) -> str:
    """One row per finished phase run: phase, attempt, outcome, start time, duration, the code it ran (marked
    ``(changed)`` where it differs from the previous run of the same phase), its cost (``costs``, one per run,
    when given) and its error, if any."""
    priced = costs is not None and len(costs) == len(phases)
    errors = any(record.get("error") for record in phases)
    versions = any(record.get("codeVersion") for record in phases)
    rows = []
    for index, (record, before) in enumerate(zip(phases, code_changes(phases), strict=True)):
        started, ended = record.get("startedAt"), record.get("endedAt")
        took = ended - started if isinstance(started, int) and isinstance(ended, int) else None
        row = [
            _text(record.get("phase")),
            _text(record.get("attempt")),
            _outcome(record),
            clock_time(started),
            duration(took),
            *([usd(costs[index])] if priced and costs is not None else []),
            *([_code(record, before)] if versions else []),
        ]
        rows.append([*row, str(record.get("error") or "")] if errors else row)
    headers = [
        "PHASE",
        "ATTEMPT",
        "OUTCOME",
        "STARTED",
        "DURATION",
        *(["COST"] if priced else []),
        *(["CODE"] if versions else []),
        *(["ERROR"] if errors else []),
    ]
    return table(headers, rows, indent="  ")


def last_failure(phases: Sequence[Json]) -> list[str]:
    """The newest failed attempt's exception type and traceback, indented (no lines if none failed)."""
    for record in reversed(phases):
        failure = record.get("failure")
        if isinstance(failure, dict) and failure.get("type"):
            where = f'phase "{_text(record.get("phase"))}", attempt {_text(record.get("attempt"))}'
            lines = [f"Last failure ({where}): {failure['type']}"]
            trace = str(failure.get("traceback") or "")
            lines.extend(f"  {line}" for line in trace.splitlines())
            return lines
    return []


def _pausing(job: Json) -> str:
    """`` (pausing: ...)`` for a paused job whose worker still runs its phase (it stops when that run ends)."""
    if job.get("status") != "paused" or not isinstance(job.get("claimedAt"), int):
        return ""
    return f" (pausing: phase {_text(job.get('nextPhase'))} is still running since {clock_time(job['claimedAt'])})"


def _compact(value: Any, limit: int = _RESULT_CHARS) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _saved(ms: Any, now_ms: int) -> str:
    """`` (checkpoint saved <time>, <age>)`` when the API says when the checkpoint was written."""
    return f" (checkpoint saved {clock_time(ms)}, {age(ms, now_ms)})" if isinstance(ms, int | float) else ""


def job_details(job: Json, now_ms: int) -> str:
    """Everything ``cairn jobs show`` prints: the job's fields (a wait's too), timeline, usage, error and result."""
    fields = [
        ("Job", _text(job.get("jobId"))),
        ("Pipeline", _text(job.get("pipeline"))),
        ("Status", _text(job.get("status")) + _pausing(job)),
        ("Attempt", _text(job.get("attempt"))),
        ("Next phase", _text(job.get("nextPhase")) + _saved(job.get("checkpointCreatedAt"), now_ms)),
        ("Created", f"{clock_time(job.get('createdAt'))} ({age(job.get('createdAt'), now_ms)})"),
        ("Updated", f"{clock_time(job.get('updatedAt'))} ({age(job.get('updatedAt'), now_ms)})"),
    ]
    if job.get("waitingFor") is not None:
        deadline = job.get("waitDeadline")
        until = f" (until {clock_time(deadline)})" if isinstance(deadline, int | float) else ""
        fields.append(("Waiting for", f"{job['waitingFor']}{until}"))
    fields.extend(stalled_lines(job.get("stalled"), now_ms))
    if job.get("shareWait"):  # past its owner's fair share (cairn.features.owner_share)
        fields.append(("Held", _text(job["shareWait"])))
    if isinstance(job.get("wakeAt"), int | float):
        fields.append(("Wakes at", clock_time(job["wakeAt"])))
    if isinstance(job.get("stateVersion"), int):  # absent: version 1, or no checkpoint (State migrations)
        fields.append(("State", f"saved as state_version {job['stateVersion']}"))
    usage = job.get("usage") or {}
    if usage:
        fields.append(("Usage", ", ".join(f"{name}={value}" for name, value in sorted(usage.items()))))
    cost = job.get("cost")
    if isinstance(cost, dict):
        fields.append(("Cost", cost_line(cost)))
    cut = job.get("cutShort")
    if isinstance(cut, dict):
        ran = f"{clock_time(cut.get('startedAt'))} until the cancel at {clock_time(cut.get('endedAt'), date=False)}"
        fields.append(("Cut short", f"phase {_text(cut.get('phase'))} ran from {ran}"))
    if job.get("error"):
        fields.append(("Error", str(job["error"])))
    if job.get("result") is not None:
        fields.append(("Result", _compact(job["result"])))
    width = max(len(name) for name, _ in fields) + 2
    lines = [f"{name + ':':<{width}}{value}" for name, value in fields]
    phases = job.get("phases") or []
    older = job.get("historyCursor") is not None  # the view holds the newest records only
    lines.append(("Phases (the newest runs):" if older else "Phases:") if phases else "Phases:  none finished yet")
    if phases:
        lines.append(timeline(phases, cost.get("phases") if isinstance(cost, dict) else None))
    if older:
        lines.append(f"  Older runs: GET /jobs/{job.get('jobId')}/history?cursor=<historyCursor> (see --json)")
    lines.extend(last_failure(phases))
    for field, title in (("input", "Input (what Start over uses):"), ("state", "State:")):
        if field in job:
            lines.append(title)
            lines.append(json.dumps(job[field], indent=2, ensure_ascii=False, default=str))
    return "\n".join(lines)


def log_line(entry: Json) -> str:
    """One log entry: time, phase, kind (or level for a plain line), message and a decision's reason."""
    kind = entry.get("kind") or "log"
    label = (entry.get("level") or "info") if kind == "log" else kind
    line = f"{clock_time(entry.get('timestamp'), date=False)}  {_text(entry.get('phase')):<10} {label:<11} "
    line += str(entry.get("message", ""))
    if entry.get("reason"):
        line += f" (reason: {entry['reason']})"
    return line


def status_line(job: Json) -> str:
    """``<job> (<pipeline>): <status>, next phase <phase>, attempt <n>`` after a change to a job."""
    parts = [f"{_text(job.get('jobId'))} ({_text(job.get('pipeline'))}): {_text(job.get('status'))}{_pausing(job)}"]
    if job.get("nextPhase"):
        parts.append(f"next phase {job['nextPhase']}")
    parts.append(f"attempt {_text(job.get('attempt'))}")
    return ", ".join(parts)


def final_line(job: Json) -> str:
    """How a job ended, on one line: ``Job complete: <short result>``, ``Job error: <error>``, ``Job cancelled``."""
    status = _text(job.get("status"))
    if status == "complete":
        return f"Job complete: {_compact(job.get('result'))}"
    if job.get("error"):
        return f"Job {status}: {job['error']}"
    return f"Job {status}"


def _shown(value: Any) -> str:
    """A value of a diff on one line: compact JSON, cut to a screen's width."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _side(change: Json, side: str) -> str:
    """One side of a change on one line; a value the API cut (``beforeCut``/``afterCut``) says so and its size."""
    size = change.get(f"{side}Cut")
    if not isinstance(size, int):
        return _shown(change.get(side))
    start = str(change.get(side, "")).removesuffix("…")
    return f"{start[:60]}... (cut: {size} characters of JSON)"


def diff_lines(diff: Json) -> str:
    """``GET /jobs/{id}/diff`` as lines: ``~ /path: before -> after``, ``+ /path: after``, ``- /path: before``.

    A value the API cut shows its start and its whole size."""
    before, after = diff.get("from", {}), diff.get("to", {})
    lines = [f"From {before.get('phase')} to {after.get('phase')}:"]
    for change in diff.get("changes", []):
        path = change.get("path") or "(the whole state)"
        kind = change.get("change")
        if kind == "added":
            lines.append(f"+ {path}: {_side(change, 'after')}")
        elif kind == "removed":
            lines.append(f"- {path}: {_side(change, 'before')}")
        else:
            lines.append(f"~ {path}: {_side(change, 'before')} -> {_side(change, 'after')}")
    if not diff.get("changes"):
        lines.append("  No change: both phases were entered with the same state.")
    if diff.get("truncated"):
        lines.append("  ... and more changes (the list stops there)")
    return "\n".join(lines)


def _item_line(item: Json) -> str:
    error = f": {item.get('errorType') or 'error'}: {item.get('error')}" if item.get("error") else ""
    ran = item.get("ranMs")
    took = f"  ran {ran / 1000:.3f} s" if isinstance(ran, int | float) else ""
    when = clock_time(item.get("updatedAt"), date=False)
    return f"    item {item.get('index')}  {item.get('status')}  attempt {item.get('attempt')}  {when}{took}{error}"


def map_lanes(maps: Json) -> str:
    """``GET /jobs/{id}/maps`` as lines: each map's items by status, then its failed and slowest items."""
    lanes = maps.get("maps") or []
    if not lanes:
        return "No map: this job has run none."
    lines: list[str] = []
    for lane in lanes:
        counts = lane.get("counts", {})
        lines.append(
            f"Map {lane.get('id')}: {lane.get('count')} items of {lane.get('phase')} "
            f"(from {lane.get('startedBy')}, then {lane.get('then')}): "
            f"{counts.get('done', 0)} done, {counts.get('failed', 0)} failed, {counts.get('pending', 0)} pending; "
            f"{lane.get('attempts')} attempts"
        )
        if lane.get("failed"):
            lines.append("  Failed:")
            lines.extend(_item_line(item) for item in lane["failed"])
        if lane.get("slowest"):
            lines.append("  Slowest:")
            lines.extend(_item_line(item) for item in lane["slowest"])
    return "\n".join(lines)


def map_item_details(item: Json) -> str:
    """``GET /jobs/{id}/maps/{mapId}/items/{index}`` as lines: status, attempts, error and traceback, log."""
    lines = [_item_line(item).strip()]
    failure = item.get("failure") or {}
    if failure.get("traceback"):
        lines.append("Traceback:")
        lines.append(str(failure["traceback"]))
    for entry in item.get("log") or []:
        lines.append(log_line(entry))
    return "\n".join(lines)
