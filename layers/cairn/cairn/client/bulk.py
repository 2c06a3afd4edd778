"""``cairn jobs retry|restart|cancel`` on many jobs at once: every job a filter selects, bounded, one result a job.

The selection is the listing's (status, pipeline, created-time range, id prefix, applied by the API
across pages). More jobs than ``--max`` match: nothing is done, and the error says how to go on.
Each job is then acted on once, through the same request as for one job: a job whose status changed
in between is refused by the API (409) and reported, never acted on twice.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from threading import Lock
from typing import Any

from .errors import RequestFailed
from .http import ApiClient, Json
from .moments import moment
from .options import UsageError

DEFAULT_MAX = 100
"""Jobs one bulk action may touch unless ``--max`` raises it."""
HIGHEST_MAX = 10_000
"""The most ``--max`` accepts: a bigger sweep is several narrower ones."""
PARALLEL_REQUESTS = 4
"""Requests in flight at once: a hundred jobs take seconds, and the API is never flooded."""
SELECTION_OPTIONS = ("status", "pipeline", "since", "until", "prefix")
PAGE_SIZE = 100

JobRequest = Callable[[ApiClient, str], Json]


@dataclass(frozen=True)
class BulkAction:
    """One action as a bulk command does it: its verb, its past tense and the request it sends for one job."""

    verb: str
    past: str
    request: JobRequest


@dataclass(frozen=True)
class BulkResult:
    """What one job's request gave: the job as the API returned it, or the error that refused it."""

    job_id: str
    job: Json | None = None
    error: str | None = None

    def as_json(self) -> Json:
        """The result as ``--json`` prints it."""
        if self.job is not None:
            return {"jobId": self.job_id, "ok": True, "job": self.job}
        return {"jobId": self.job_id, "ok": False, "error": self.error}


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


def selects_many(arguments: argparse.Namespace) -> bool:
    """Whether the command names its jobs by filter; a usage error for both an ID and a filter, or neither."""
    filtered = any(getattr(arguments, name, None) is not None for name in SELECTION_OPTIONS)
    if arguments.job_id is not None and filtered:
        raise UsageError("give a job ID or a selection (--status, --pipeline, --since, --until, --prefix), not both")
    if arguments.job_id is None and not filtered:
        raise UsageError("give a job ID, or select jobs with --status, --pipeline, --since, --until or --prefix")
    if not filtered and arguments.dry_run:
        raise UsageError("--dry-run goes with a selection (--status, --pipeline, ...), not with one job ID")
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


def select(client: ApiClient, arguments: argparse.Namespace) -> list[Json]:
    """The jobs the selection matches, newest first; UsageError when more than ``--max`` match."""
    filters = listing_filters(arguments)
    jobs: list[Json] = []
    seen: set[str] = set()
    cursor: str | None = None
    while True:
        page = client.list(limit=PAGE_SIZE, cursor=cursor, **filters)
        for job in page.get("jobs") or []:
            if isinstance(job, dict) and isinstance(job.get("jobId"), str) and job["jobId"] not in seen:
                seen.add(job["jobId"])
                jobs.append(job)
        if len(jobs) > arguments.max:
            raise UsageError(
                f"more than {arguments.max} jobs match: narrow the selection, or raise --max "
                f"(up to {HIGHEST_MAX}); nothing was done"
            )
        cursor = page.get("cursor")
        if not cursor:
            return jobs


def act_on_each(client: ApiClient, job_ids: list[str], request: JobRequest) -> list[BulkResult]:
    """``request`` for each job once, a few at a time; each job's result, in the order given; progress on a terminal."""
    finished = iter(range(1, len(job_ids) + 1))
    counting = Lock()

    def one(job_id: str) -> BulkResult:
        try:
            result = BulkResult(job_id, job=request(client, job_id))
        except RequestFailed as exc:
            result = BulkResult(job_id, error=str(exc))
        with counting:
            done = next(finished)
        if sys.stderr.isatty():
            print(f"\r{done}/{len(job_ids)}", end="", file=sys.stderr, flush=True)
        return result

    with ThreadPoolExecutor(max_workers=PARALLEL_REQUESTS) as pool:
        results = list(pool.map(one, job_ids))
    if sys.stderr.isatty() and job_ids:
        print(file=sys.stderr)
    return results


def run_bulk(
    arguments: argparse.Namespace,
    client: ApiClient,
    *,
    action: BulkAction,
    line: Callable[[Json], str],
) -> int:
    """Select, then (unless ``--dry-run``) act on each selected job; 0 when every job's request succeeded, else 1."""
    jobs = select(client, arguments)
    ids = [job["jobId"] for job in jobs]
    if arguments.dry_run:
        if arguments.json:
            print(json.dumps({"dryRun": True, "action": action.verb, "jobs": jobs}, indent=2, ensure_ascii=False))
        else:
            for job in jobs:
                print(f"{job['jobId']}  {job.get('pipeline', '')}  {job.get('status', '')}")
            print(f"Would {action.verb} {_jobs(len(ids))}; nothing was done (--dry-run).", file=sys.stderr)
        return 0
    results = act_on_each(client, ids, action.request)
    refused = [result for result in results if result.error is not None]
    if arguments.json:
        body: dict[str, Any] = {"action": action.verb, "results": [result.as_json() for result in results]}
        print(json.dumps(body, indent=2, ensure_ascii=False))
    else:
        for result in results:
            print(line(result.job) if result.job is not None else f"{result.job_id}: refused: {result.error}")
    done = len(results) - len(refused)
    tail = f"; {len(refused)} refused" if refused else ""
    print(f"{action.past.capitalize()} {done} of {_jobs(len(results))}{tail}.", file=sys.stderr)
    return 1 if refused else 0


def _jobs(count: int) -> str:
    return f"{count} job{'' if count == 1 else 's'}"
