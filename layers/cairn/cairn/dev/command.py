"""``cairn dev``: the command line of the local stack."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..bundle.command_line import add_subcommand, error, number, port_number
from ..core.errors import CairnError
from ..storage.job_files import read_file
from ..testing.api_events import LOCAL_IDENTITY

DRIVERS = ("direct", "stepfunctions")
SUMMARY = "run the template's stack on 127.0.0.1: moto, the functions in worker processes, the HTTP API"
DESCRIPTION = (
    "Deploy template.yaml onto a local moto endpoint and serve its HTTP API on 127.0.0.1, "
    "running each Lambda function in worker processes (timeouts enforced, crashes contained), "
    "the SQS and DynamoDB stream event sources and schedules, and either driver. No AWS account, no Docker."
)


def _parameter(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def _positive(text: str) -> int:
    value = number(text, int, "whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _seconds(text: str) -> float:
    value = number(text, float, "number of seconds")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds over 0, got {text}")
    return value


def add_command(commands: argparse._SubParsersAction[Any]) -> None:
    """Register ``cairn dev``."""
    dev = add_subcommand(commands, "dev", run_dev, SUMMARY, DESCRIPTION)
    dev.add_argument("--template", type=Path, default=Path("template.yaml"), help="default: template.yaml")
    dev.add_argument("--port", type=port_number, default=3000, help="the HTTP API's port (default 3000)")
    dev.add_argument(
        "--aws-port", type=port_number, default=0, help="the local AWS endpoint's port (default: a free one)"
    )
    dev.add_argument(
        "--driver", choices=DRIVERS, help="the template's Driver parameter (default: the template's default)"
    )
    dev.add_argument("--stack-name", default="cairn-dev", help="names the functions and resources (default cairn-dev)")
    dev.add_argument(
        "--parameter",
        type=_parameter,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a template parameter (repeatable)",
    )
    dev.add_argument(
        "--identity", default=LOCAL_IDENTITY, help=f"the caller's principal ARN (default {LOCAL_IDENTITY})"
    )
    dev.add_argument("--concurrency", type=_positive, default=4, help="workers per function at most (default 4)")
    dev.add_argument("--no-reload", action="store_true", help="do not restart workers when the code changes")
    dev.add_argument("--sweep-seconds", type=float, help="tick the template's schedules this often instead")
    dev.add_argument(
        "--skip-waits",
        action="store_true",
        help="time skipping: when nothing can run, the functions' clock jumps to the end of the next wait "
        "(a Sleep, a retry's backoff: an SQS delay or a Wait state), so waits take no real time",
    )
    dev.add_argument(
        "--read-timeout",
        type=_seconds,
        help="seconds the API and the AWS endpoint wait for a client's next bytes, and for a request's line and "
        "headers in all, before answering 408 "
        "(default: $CAIRN_DEV_READ_TIMEOUT, else 10)",
    )
    dev.add_argument(
        "--metrics",
        action="store_true",
        help="print each invocation's EMF metrics blob, as CloudWatch would read it (default: not shown; "
        "CAIRN_DEV_METRICS=1 shows them too)",
    )
    dev.add_argument(
        "--load",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="load a job pulled with `cairn jobs pull` (same id, input, history, checkpoint, status) as your "
        "job, to rerun it from a phase against this working copy (repeatable)",
    )
    dev.add_argument(
        "--replace", action="store_true", help="with --load: replace a local job that has the loaded job's id"
    )


def run_dev(arguments: argparse.Namespace) -> int:
    """Start the stack and serve until Ctrl-C; exit 2 with one line when it cannot start."""
    from .logs import DevLog
    from .metrics import metrics_wanted, worker_metrics
    from .server import DevOptions, DevServer, DevServerError

    for path in arguments.load:  # a file that is not a job file stops the start before anything starts
        try:
            read_file(path)
        except CairnError as exc:
            return error("cairn dev", f"--load: {exc}")
    options = DevOptions(
        template=arguments.template,
        port=arguments.port,
        aws_port=arguments.aws_port,
        driver=arguments.driver,
        stack_name=arguments.stack_name,
        parameters=dict(arguments.parameter),
        identity=arguments.identity,
        concurrency=arguments.concurrency,
        reload=not arguments.no_reload,
        sweep_seconds=arguments.sweep_seconds,
        skip_waits=arguments.skip_waits,
        read_timeout=arguments.read_timeout,
        load=tuple(arguments.load),
        replace_loaded=arguments.replace,
    )
    server = DevServer(options, DevLog(stack_prefix=f"{options.stack_name}-"))
    with worker_metrics(metrics_wanted(arguments.metrics, os.environ)):
        try:
            server.start()
        except (DevServerError, CairnError) as exc:  # a port in use, a template it cannot read or deploy
            return error("cairn dev", str(exc))
        except KeyboardInterrupt:
            return 130
        for line in server.banner():
            print(line, flush=True)
        for path, job in server.loaded:
            print(f"  loaded        {job.job_id} ({job.pipeline}, {job.status.value}) from {path}", flush=True)
        server.serve_forever()
    return 0
