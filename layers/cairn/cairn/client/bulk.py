"""``cairn jobs retry|restart|cancel`` on many jobs at once, run on the server (``POST /bulk``), and ``cairn jobs
bulk ID``.

The selection is the listing's (status, pipeline, created-time range, id prefix), made by the API. More jobs
than ``--max`` match: nothing is done, and the error says how to go on. The bulk then runs in the deployment's
scheduler function, a chunk at a time: each job is acted on at most once, its log names the caller and the
bulk, and stopping the command (or ``--no-wait``) does not stop the bulk. The command follows its progress
and prints each job's outcome with the job's status now (``done, now complete``; ``done, now error``: it
failed again). A request sent again after no answer carries the same ``requestId``: the API returns the bulk
the first one started.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from .errors import ApiError, ApiUnreachable
from .http import ApiClient, Json
from .moments import moment
from .options import UsageError

DEFAULT_MAX = 100
"""Jobs one bulk action may touch unless ``--max`` raises it."""
HIGHEST_MAX = 10_000
"""The most ``--max`` accepts (the API's own bound): a bigger sweep is several narrower ones."""
SELECTION_OPTIONS = ("status", "pipeline", "since", "until", "prefix")
POLL_SECONDS = 2.0
"""How often a waiting command asks for the bulk's progress."""
SEND_TRIES = 3
"""Times the bulk request is sent when no answer (or a 5xx) comes back; the same requestId each time."""


@dataclass(frozen=True)
class BulkAction:
    """One action as a bulk command does it: its verb (the API's action) and its past tense."""

    verb: str
    past: str


def _bounded_max(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1 <= value <= HIGHEST_MAX:
        raise argparse.ArgumentTypeError(f"must be from 1 to {HIGHEST_MAX}: {text!r}")
    return value


def add_selection_options(parser: argparse.ArgumentParser, statuses: tuple[str, ...], verb: str) -> None:
    """The options that select jobs for ``verb`` instead of naming one: the listing's filters, --max, --dry-run."""
    group = parser.add_argument_group(f"{verb} every job that matches (instead of ID)")
    group.add_argument("--status", choices=statuses, help="jobs with this status")
    group.add_argument("--pipeline", help="jobs of this pipeline")
    group.add_argument("--since", type=moment, metavar="TIME", help="jobs created at or after TIME (ISO 8601 or 2h)")
    group.add_argument("--until", type=moment, metavar="TIME", help="jobs created at or before TIME")
    group.add_argument("--prefix", metavar="TEXT", help="jobs whose id starts with TEXT")
    group.add_argument(
        "--max",
        type=_bounded_max,
        default=DEFAULT_MAX,
        metavar="N",
        help=f"refuse when more than N jobs match (default: {DEFAULT_MAX}, at most {HIGHEST_MAX})",
    )
    group.add_argument("--dry-run", action="store_true", help="list the jobs it would act on, and act on none")
    group.add_argument(
        "--no-wait", action="store_true", help="print the bulk's id at once (it runs on the server: cairn jobs bulk ID)"
    )


def selects_many(arguments: argparse.Namespace) -> bool:
    """Whether the command names its jobs by filter; a usage error for both an ID and a filter, or neither."""
    filtered = any(getattr(arguments, name, None) is not None for name in SELECTION_OPTIONS)
    if arguments.job_id is not None and filtered:
        raise UsageError("give a job ID or a selection (--status, --pipeline, --since, --until, --prefix), not both")
    if arguments.job_id is None and not filtered:
        raise UsageError("give a job ID, or select jobs with --status, --pipeline, --since, --until or --prefix")
    if not filtered and arguments.dry_run:
        raise UsageError("--dry-run goes with a selection (--status, --pipeline, ...), not with one job ID")
    if not filtered and getattr(arguments, "no_wait", False):
        raise UsageError("--no-wait goes with a selection (--status, --pipeline, ...), not with one job ID")
    if filtered and getattr(arguments, "state", None) is not None:
        raise UsageError("--state goes with one job ID, not with a selection")
    return filtered


def listing_filters(arguments: argparse.Namespace) -> dict[str, Any]:
    """The listing's filters that ``--status``, ``--pipeline``, ``--since``, ``--until`` and ``--prefix`` give."""
    return {
        "status": arguments.status,
        "pipeline": arguments.pipeline,
        "createdFrom": arguments.since,
        "createdTo": arguments.until,
        "idPrefix": arguments.prefix,
    }


def _body(arguments: argparse.Namespace, action: BulkAction, request_id: str) -> Json:
    filters = {name: value for name, value in listing_filters(arguments).items() if value is not None}
    return {
        "action": action.verb,
        "filter": filters,
        "limit": arguments.max,
        "dryRun": bool(arguments.dry_run),
        "requestId": request_id,
    }


def send_bulk(client: ApiClient, body: Json) -> Json:
    """``POST /bulk``, sent again (the same body, so the same ``requestId``) when no answer or a 5xx comes back;
    more jobs than the limit is the UsageError the CLI always gave."""
    for tried in range(1, SEND_TRIES + 1):
        try:
            return client.request("POST", "/bulk", body=body)
        except ApiError as error:
            if error.code == "too_many_jobs":
                raise UsageError(
                    f"more than {body['limit']} jobs match: narrow the selection, or raise --max "
                    f"(up to {HIGHEST_MAX}); nothing was done"
                ) from None
            if error.status < 500 or tried == SEND_TRIES:
                raise
        except ApiUnreachable:
            if tried == SEND_TRIES:
                raise
        print(f"cairn: no answer to the bulk request; sending it again ({tried} of {SEND_TRIES - 1})", file=sys.stderr)
        time.sleep(POLL_SECONDS)
    raise AssertionError("unreachable: the last try returns or raises")


def bulk_path(bulk_id: str, tail: str = "") -> str:
    """The API path of a bulk (and of its ``/jobs``)."""
    return f"/bulk/{quote(bulk_id, safe='')}{tail}"


def follow(client: ApiClient, bulk_id: str) -> Json:
    """The bulk once it has finished, asked every ``POLL_SECONDS``; progress on a terminal."""
    while True:
        bulk = client.request("GET", bulk_path(bulk_id))
        if sys.stderr.isatty():
            settled = bulk["matched"] - bulk["pending"]
            print(f"\r{settled}/{bulk['matched']}", end="", file=sys.stderr, flush=True)
        if bulk.get("finished"):
            if sys.stderr.isatty():
                print(file=sys.stderr)
            return bulk
        time.sleep(POLL_SECONDS)


def outcomes(client: ApiClient, bulk_id: str) -> list[Json]:
    """Every job of the bulk, with its outcome and its status now, in the order the bulk acted on them."""
    jobs: list[Json] = []
    cursor: str | None = None
    while True:
        page = client.request("GET", bulk_path(bulk_id, "/jobs"), query={"cursor": cursor})
        jobs.extend(job for job in page.get("jobs") or [] if isinstance(job, dict))
        cursor = page.get("cursor")
        if not cursor:
            return jobs


def outcome_line(job: Json) -> str:
    """One job's line: ``ID: done, now complete`` (``pending``; ``refused: why, now ...``)."""
    outcome = job.get("outcome") or "pending"
    detail = f": {job['detail']}" if outcome != "done" and job.get("detail") else ""
    return f"{job.get('jobId')}: {outcome}{detail}, now {job.get('status')}"


def progress_line(bulk: Json) -> str:
    """A bulk's progress in one line."""
    state = "finished" if bulk.get("finished") else "running"
    return (
        f"bulk {bulk.get('bulkId')}: {bulk.get('action')} by {bulk.get('by')}, {bulk.get('matched')} jobs: "
        f"{bulk.get('done')} done, {bulk.get('refused')} refused, {bulk.get('errored')} errored, "
        f"{bulk.get('pending')} pending ({state})"
    )


def report(arguments: argparse.Namespace, bulk: Json, jobs: list[Json], past: str | None = None) -> int:
    """Print the bulk's outcomes (``--json``: the bulk and its jobs); 1 when a job was refused or errored."""
    if arguments.json:
        print(json.dumps({"bulk": bulk, "jobs": jobs}, indent=2, ensure_ascii=False))
    else:
        for job in jobs:
            print(outcome_line(job))
    if past is not None:
        refused = int(bulk.get("refused", 0)) + int(bulk.get("errored", 0))
        tail = f"; {refused} refused" if refused else ""
        print(f"{past.capitalize()} {bulk.get('done')} of {_jobs(int(bulk.get('matched', 0)))}{tail}.", file=sys.stderr)
    else:
        print(progress_line(bulk), file=sys.stderr)
    return 1 if int(bulk.get("refused", 0)) + int(bulk.get("errored", 0)) else 0


def run_bulk(arguments: argparse.Namespace, client: ApiClient, *, action: BulkAction) -> int:
    """Start the bulk on the server (or preview it, ``--dry-run``), follow it unless ``--no-wait``, print each
    job's outcome; 0 when every job was acted on, else 1."""
    answer = send_bulk(client, _body(arguments, action, uuid.uuid4().hex))
    if arguments.dry_run:
        ids = [str(job_id) for job_id in answer.get("jobIds") or []]
        if arguments.json:
            print(json.dumps({"dryRun": True, "action": action.verb, "jobIds": ids}, indent=2, ensure_ascii=False))
        else:
            for job_id in ids:
                print(job_id)
            print(f"Would {action.verb} {_jobs(len(ids))}; nothing was done (--dry-run).", file=sys.stderr)
        return 0
    bulk_id = str(answer["bulkId"])
    if arguments.no_wait:
        print(json.dumps(answer, indent=2) if arguments.json else bulk_id)
        print(f"Started bulk {bulk_id} ({_jobs(int(answer['matched']))}): cairn jobs bulk {bulk_id}", file=sys.stderr)
        return 0
    print(f"Bulk {bulk_id}: {action.verb} {_jobs(int(answer['matched']))} on the server", file=sys.stderr)
    bulk = follow(client, bulk_id)
    return report(arguments, bulk, outcomes(client, bulk_id), action.past)


def run_show_bulk(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs bulk ID``: a bulk's progress, then each job's outcome and status now (``--wait``: once done)."""
    bulk = follow(client, arguments.bulk_id) if arguments.wait else client.request("GET", bulk_path(arguments.bulk_id))
    return report(arguments, bulk, outcomes(client, arguments.bulk_id))


def _jobs(count: int) -> str:
    return f"{count} job{'' if count == 1 else 's'}"
