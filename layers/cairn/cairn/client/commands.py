"""``cairn jobs``: start, list, count, show, follow, retry, rerun, signal, nudge, pause, cancel and pull jobs,
and group failures (HTTP API).

Exit status: 0 on success; 1 when the API answered with an error or could not be reached (one
line on stderr); 2 for a usage error; 130 when interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from time import sleep
from typing import Any

from ..bundle.command_line import Parser, add_subcommand
from .bulk import BulkAction, add_selection_options, listing_filters, run_bulk, run_show_bulk, selects_many
from .errors import ApiError, ApiUnreachable, RequestFailed
from .http import TERMINAL_STATUSES, ApiClient, Json
from .moments import moment
from .options import AUTH_MODES, ENV_IDENTITY, ENV_TOKEN, UsageError, api_url, make_auth, positive, read_json
from .pull import add_pull, run_pull
from .render import (
    counts_table,
    diff_lines,
    failures_table,
    final_line,
    job_details,
    jobs_table,
    log_line,
    map_item_details,
    map_lanes,
    nudge_line,
    status_line,
)

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
STATUSES = ("idle", "running", "waiting", "paused", "complete", "error", "cancelled")
DEFAULT_INTERVAL = 2.0
FOLLOW_TRIES = 5
"""How many times in a row ``jobs log --follow`` asks while the API fails transiently (5xx, 429, no answer)."""
SUMMARY = "start, list, count, show, follow, retry, rerun, signal, nudge, pause and cancel jobs, and show their states"
DESCRIPTION = (
    "Call the jobs HTTP API: a local `cairn dev` server (the default) or a deployed stack "
    "(--api https://..., signed with your AWS credentials, or --token for a JWT authorizer)."
)

Action = Callable[[argparse.Namespace, ApiClient], int]


def _connection_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """The options every ``cairn jobs`` action takes, before or after the action's name."""

    def default(value: Any) -> Any:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument(
        "--api", default=default(None), metavar="URL", help="the API's URL (default: $CAIRN_API, else cairn dev's)"
    )
    parser.add_argument(
        "--auth",
        choices=AUTH_MODES,
        default=default(None),
        help="none (local server), iam (SigV4) or jwt (default: jwt with a token, iam for https, else none)",
    )
    parser.add_argument("--token", default=default(None), help=f"a JWT for --auth jwt (default: ${ENV_TOKEN})")
    parser.add_argument("--region", default=default(None), help="the region to sign for (default: from the URL)")
    parser.add_argument(
        "--as",
        dest="identity",
        default=default(None),
        metavar="PRINCIPAL_ARN",
        help=f"the caller a local server acts as (default: ${ENV_IDENTITY})",
    )
    parser.add_argument(
        "--json", action="store_true", default=default(False), help="print the API's JSON (for scripts)"
    )


def client_for(arguments: argparse.Namespace) -> ApiClient:
    """The client the options describe."""
    url = api_url(arguments.api, os.environ)
    auth = make_auth(
        arguments.auth,
        url,
        token=arguments.token or os.environ.get(ENV_TOKEN),
        token_given=arguments.token is not None,
        identity=arguments.identity or os.environ.get(ENV_IDENTITY),
        identity_given=arguments.identity is not None,
        region=arguments.region,
    )
    try:
        return ApiClient(url, auth=auth)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _command(action: Action) -> Callable[[argparse.Namespace], int]:
    """The action with the client built from the options and every expected failure as one line on stderr."""

    def run(arguments: argparse.Namespace) -> int:
        try:
            return action(arguments, client_for(arguments))
        except UsageError as exc:
            print(f"cairn: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except RequestFailed as exc:
            print(f"cairn: error: {exc}", file=sys.stderr)
            return EXIT_FAILED
        except KeyboardInterrupt:
            return EXIT_INTERRUPTED

    return run


def _now_ms() -> int:
    return int(time.time() * 1000)


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _output(arguments: argparse.Namespace, value: Json, text: Callable[[Json], str]) -> int:
    """Print ``value`` as JSON with ``--json``, else as ``text`` renders it."""
    if arguments.json:
        _print_json(value)
    else:
        print(text(value))
    return 0


def _state(arguments: argparse.Namespace) -> Any:
    return None if arguments.state is None else read_json(arguments.state, sys.stdin)


def run_start(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs start PIPELINE [--state] [--id]``: the new job's status line."""
    state = _state(arguments)
    return _output(arguments, client.start(arguments.pipeline, state=state, job_id=arguments.id), status_line)


def run_list(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs list``: a table of the caller's jobs (one page, or every page with ``--all``)."""
    filters = {
        **listing_filters(arguments),
        "sort": arguments.sort,
        "costs": "true",
        "stalled": "true" if arguments.stalled else None,
        "errorType": arguments.error_type,
        "errorPhase": arguments.error_phase,
    }
    if arguments.all:
        page = client.list_all(limit=arguments.limit, **filters)
    else:
        page = client.list(limit=arguments.limit, cursor=arguments.cursor, **filters)
    if arguments.json:
        _print_json(page)
        return 0
    print(jobs_table(page.get("jobs") or [], _now_ms()))
    if page.get("cursor"):
        print(f"More jobs: add --all, or --cursor {page['cursor']}", file=sys.stderr)
    return 0


def run_count(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs count``: how many of the caller's jobs have each status."""
    return _output(arguments, client.counts(), counts_table)


def run_failures(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs failures [--since] [--until] [--pipeline]``: the failure groups of the range, biggest first."""
    report = client.failures(
        since=arguments.since, until=arguments.until, pipeline=arguments.pipeline, limit=arguments.limit
    )
    return _output(arguments, report, failures_table)


def run_show(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs show ID [--state] [--input]``: the job's details and phase timeline."""
    job = client.get(arguments.job_id, include_state=arguments.state, include_input=arguments.input)
    return _output(arguments, job, lambda shown: job_details(shown, _now_ms()))


def run_state(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs state ID PHASE [--diff OTHER]``: the state PHASE was entered with, or what changed since OTHER's."""
    if arguments.diff is None:
        entered = client.entered_state(arguments.job_id, arguments.phase)
        return _output(arguments, entered, lambda shown: json.dumps(shown.get("state"), indent=2, ensure_ascii=False))
    diff = client.state_diff(arguments.job_id, arguments.diff, arguments.phase)
    return _output(arguments, diff, diff_lines)


def run_maps(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs maps ID [--item MAP INDEX]``: each map as one lane, or one item whole."""
    if arguments.item is None:
        return _output(arguments, client.maps(arguments.job_id), map_lanes)
    map_id, index = arguments.item
    return _output(arguments, client.map_item(arguments.job_id, map_id, index), map_item_details)


def _print_entries(arguments: argparse.Namespace, entries: list[Json]) -> None:
    for entry in entries:
        print(json.dumps(entry, ensure_ascii=False) if arguments.json else log_line(entry), flush=True)


def run_log(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs log ID [--follow]``: the log; with ``--follow``, new entries until the job stops, then its end."""
    if not arguments.follow:
        log = client.log(arguments.job_id)
        if arguments.json:
            _print_json(log)
        elif log.get("entries"):
            _print_entries(arguments, log["entries"])
        else:
            print("No log entries.")
        return 0
    printed: list[Json] = []
    while True:
        job, entries = _polled(arguments, client)
        if entries[: len(printed)] != printed:  # a full retry started a new log
            printed = []
        _print_entries(arguments, entries[len(printed) :])
        printed = entries
        if job.get("status") in TERMINAL_STATUSES:
            if not arguments.json:  # --json prints entries only, one a line
                print(final_line(job), flush=True)
            return 0
        sleep(arguments.interval)


def _transient(error: RequestFailed) -> bool:
    """Whether asking again may help: no answer, a server error (5xx) or too many requests (429)."""
    return isinstance(error, ApiUnreachable) or (
        isinstance(error, ApiError) and (error.status >= 500 or error.status == 429)
    )


def _polled(arguments: argparse.Namespace, client: ApiClient) -> tuple[Json, list[Json]]:
    """The job and its log entries for one round of ``--follow``, asked again (after the interval) while the API
    fails transiently, up to FOLLOW_TRIES times in a row; each failure said on stderr, the last one raised."""
    for tried in range(1, FOLLOW_TRIES + 1):
        try:
            job = client.get(arguments.job_id)  # read before the log: a final status's log is whole
            entries: list[Json] = client.log(arguments.job_id).get("entries") or []
            return job, entries
        except RequestFailed as error:
            if not _transient(error) or tried == FOLLOW_TRIES:
                raise
            print(f"cairn: {error}; trying again ({tried} of {FOLLOW_TRIES - 1})", file=sys.stderr, flush=True)
            sleep(arguments.interval)
    raise AssertionError("unreachable: the last try returns or raises")


BULK_RETRY = BulkAction("retry", "retried")
BULK_RESTART = BulkAction("restart", "restarted")
BULK_CANCEL = BulkAction("cancel", "cancelled")


def _retry(mode: str, bulk: BulkAction) -> Action:
    def run(arguments: argparse.Namespace, client: ApiClient) -> int:
        if selects_many(arguments):
            return run_bulk(arguments, client, action=bulk)
        state = _state(arguments)
        return _output(arguments, client.retry(arguments.job_id, mode=mode, state=state), status_line)

    return run


def run_rerun(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs rerun ID --from PHASE [--state]``: the job's status line, restarted at PHASE."""
    state = _state(arguments)
    job = client.retry(arguments.job_id, mode="from", state=state, phase=arguments.phase)
    return _output(arguments, job, status_line)


def run_signal(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs signal ID NAME [--payload]``: the status line of the job the signal woke."""
    payload = None if arguments.payload is None else read_json(arguments.payload, sys.stdin, option="--payload")
    return _output(arguments, client.signal(arguments.job_id, arguments.name, payload=payload), status_line)


def run_pause(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs pause ID``: the paused job's status line."""
    return _output(arguments, client.pause(arguments.job_id), status_line)


def run_nudge(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs nudge ID``: what was scheduled for the stalled job (the API refuses one that is not stalled)."""
    return _output(arguments, client.nudge(arguments.job_id), nudge_line)


def run_cancel(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs cancel ID``: the cancelled job's status line (or each selected job's, with a selection)."""
    if selects_many(arguments):
        return run_bulk(arguments, client, action=BULK_CANCEL)
    job = client.cancel(arguments.job_id)
    if job.pop("alreadyCancelled", False):
        print(f"cairn: job {arguments.job_id} was already cancelled; nothing changed", file=sys.stderr)
    return _output(arguments, job, status_line)


def run_health(arguments: argparse.Namespace, client: ApiClient) -> int:
    """``cairn jobs health``: whether the API's job table answers."""
    return _output(
        arguments, client.health(), lambda health: f"{health.get('status')} (driver: {health.get('driver')})"
    )


def add_command(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add ``cairn jobs start|list|count|failures|show|log|retry|restart|rerun|signal|pause|cancel|health``."""
    jobs = add_subcommand(commands, "jobs", None, SUMMARY, DESCRIPTION)
    _connection_options(jobs, defaults=True)
    actions = jobs.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(jobs))

    def action(name: str, run: Action, summary: str) -> argparse.ArgumentParser:
        parser = add_subcommand(actions, name, _command(run), summary)
        _connection_options(parser, defaults=False)
        return parser

    def job_argument(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("job_id", metavar="ID", help="the job's id")

    def state_option(parser: argparse.ArgumentParser, purpose: str) -> None:
        parser.add_argument("--state", metavar="JSON|@FILE", help=f"{purpose}: JSON, @FILE, or @- for stdin")

    start = action("start", run_start, "start a job of PIPELINE")
    start.add_argument("pipeline", metavar="PIPELINE", help="the pipeline's name")
    state_option(start, "the initial state")
    start.add_argument("--id", metavar="JOB_ID", help="the job's id (default: a new UUID)")
    listing = action("list", run_list, "list your jobs, newest first")
    listing.add_argument("--status", choices=STATUSES, help="only jobs with this status")
    listing.add_argument("--pipeline", help="only jobs of this pipeline")
    listing.add_argument(
        "--since", type=moment, metavar="TIME", help="only jobs created at or after TIME: ISO 8601, or an age like 2h"
    )
    listing.add_argument("--until", type=moment, metavar="TIME", help="only jobs created at or before TIME")
    listing.add_argument("--prefix", metavar="TEXT", help="only jobs whose id starts with TEXT")
    listing.add_argument(
        "--error-type", metavar="TYPE", help="only failed jobs whose exception has this type (- for none raised)"
    )
    listing.add_argument("--error-phase", metavar="PHASE", help="only failed jobs that failed in PHASE")
    listing.add_argument("--limit", type=positive(int), metavar="N", help="jobs a page (the API's default: 50)")
    listing.add_argument("--all", action="store_true", help="follow the cursor through every page")
    listing.add_argument("--cursor", help="the page after the one that printed this cursor")
    listing.add_argument(
        "--sort", choices=["cost"], help="cost: every job the filter lets through, dearest first (a page, or --all)"
    )
    listing.add_argument(
        "--stalled",
        action="store_true",
        help="only stalled jobs: running, but no worker holds one (or its map's items are done and its next phase "
        "never started); cairn jobs show says since when and why, cairn jobs nudge moves one",
    )
    action("count", run_count, "count your jobs by status (exact up to a bound, else at least so many)")
    failures = action("failures", run_failures, "why jobs fail: failed jobs by exception type, phase and pipeline")
    failures.add_argument(
        "--since", type=moment, metavar="TIME", help="jobs created at or after TIME (default: 24h): ISO 8601 or an age"
    )
    failures.add_argument("--until", type=moment, metavar="TIME", help="jobs created at or before TIME (default: now)")
    failures.add_argument("--pipeline", help="only jobs of this pipeline")
    failures.add_argument(
        "--limit", type=positive(int), metavar="N", help="the most failed jobs to read (default and most: 1000)"
    )
    show = action("show", run_show, "show a job: status, phase timeline, usage, error")
    job_argument(show)
    show.add_argument("--state", action="store_true", help="also print the checkpoint's state")
    show.add_argument("--input", action="store_true", help="also print the state the job was started with")
    state = action("state", run_state, "print the state a phase was entered with, or what changed from another's")
    job_argument(state)
    state.add_argument("phase", metavar="PHASE", help="the phase (its state as the job last entered it)")
    state.add_argument("--diff", metavar="OTHER", help="print what changed from OTHER's entry state to PHASE's instead")
    maps = action("maps", run_maps, "show what a job's maps did: items by status, the failed, the slowest")
    job_argument(maps)
    maps.add_argument(
        "--item", nargs=2, metavar=("MAP", "INDEX"), help="show one item whole: attempts, error, traceback, log"
    )
    log = action("log", run_log, "print a job's log entries")
    job_argument(log)
    log.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="keep printing new entries until the job stops (with --json: one entry a line); a server error or "
        f"no answer is asked again, up to {FOLLOW_TRIES} times in a row",
    )
    log.add_argument("--interval", type=positive(float), default=DEFAULT_INTERVAL, metavar="SECONDS", help="default: 2")

    def jobs_argument(parser: argparse.ArgumentParser, verb: str) -> None:
        parser.add_argument("job_id", metavar="ID", nargs="?", help="the job's id (or select jobs with the options)")
        add_selection_options(parser, STATUSES, verb)

    for name, mode, bulk, summary in (
        ("retry", "resume", BULK_RETRY, "resume a job from its checkpoint, or every job a selection matches"),
        ("restart", "full", BULK_RESTART, "start a job again from its first phase, or every job a selection matches"),
    ):
        retry = action(name, _retry(mode, bulk), summary)
        jobs_argument(retry, name.capitalize())
        state_option(retry, "the state to start from when the job starts fresh")
    rerun = action("rerun", run_rerun, "run a job again from the phase --from names")
    job_argument(rerun)
    rerun.add_argument("--from", dest="phase", required=True, metavar="PHASE", help="the phase to run from")
    state_option(rerun, "the state PHASE starts from")
    signal = action("signal", run_signal, "deliver signal NAME to a job waiting for it")
    job_argument(signal)
    signal.add_argument("name", metavar="NAME", help="the signal's name, as the phase's WaitFor names it")
    signal.add_argument(
        "--payload", metavar="JSON|@FILE", help="what the next phase reads as ctx.signal: JSON, @FILE, or @- for stdin"
    )
    job_argument(action("pause", run_pause, "pause a job at its next phase boundary"))
    job_argument(action("nudge", run_nudge, "schedule a stalled job's next phase again now, as the sweep would"))
    jobs_argument(
        action("cancel", run_cancel, "cancel a job, or every job a selection matches (retry resumes)"), "Cancel"
    )
    show_bulk = action("bulk", run_show_bulk, "show a bulk action's progress and each job's outcome and status now")
    show_bulk.add_argument(
        "bulk_id", metavar="BULK_ID", help="the bulk's id (a bulk retry, restart or cancel prints it)"
    )
    show_bulk.add_argument("--wait", action="store_true", help="wait until the bulk has finished")
    action("health", run_health, "check that the API answers")
    add_pull(action("pull", run_pull, "write a job (its input, states, history) to one file, to replay it locally"))
