"""``cairn dev``: the template's stack on 127.0.0.1, with no AWS account and no Docker.

:class:`DevServer` starts the local AWS endpoint (moto and Lambda's Invoke API), deploys
``template.yaml`` onto it as a CloudFormation stack (:func:`cairn.dev.deployment.deploy`: the SAM
transform, then moto's CloudFormation), runs the functions in worker
processes (:class:`LambdaService`), polls the SQS event sources and the DynamoDB streams, ticks the schedules, serves
the HTTP API (:class:`ApiGateway`) and reloads the code when it changes. With ``skip_waits``
a :class:`TimeSkipper` moves the stack's clock past its waits whenever nothing else can run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from ..bundle.templating import cfnyaml
from ..core.clock import OFFSET_FILE_VARIABLE, system_clock_ms
from ..core.errors import CairnError
from ..testing.api_events import LOCAL_ACCOUNT, LOCAL_IDENTITY
from .aws_endpoint import AwsEndpoint
from .event_sources import ScheduleTimer, SqsPoller
from .gateway import ApiGateway
from .lambda_service import LambdaService, init_failure
from .logs import DevLog
from .reload import CodeWatcher, state_misfits
from .runtimes import interpreter_line
from .stream_poller import StreamPoller
from .time_skipping import TimeSkipper, iso_ms, skip_step_functions_waits
from .wsgi_server import READ_TIMEOUT, read_timeout

REGION = "us-east-1"
LOCAL_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}
_DROPPED_VARIABLES = (
    "AWS_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_DEFAULT_PROFILE",
    OFFSET_FILE_VARIABLE,  # the workers read this server's skipped clock, or the real one: never another's
)
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]
"""The folder holding the ``cairn`` package (what the workers put on their path)."""


class DevServerError(CairnError):
    """``cairn dev`` cannot start (a port in use, a template it cannot deploy)."""


@dataclass
class DevOptions:
    """How ``cairn dev`` runs."""

    template: Path = Path("template.yaml")
    host: str = "127.0.0.1"
    port: int = 3000
    aws_port: int = 0
    driver: str | None = None
    """The template's ``Driver`` parameter (None: the template's default, or ``--parameter Driver=...``)."""
    stack_name: str = "cairn-dev"
    parameters: Mapping[str, str] = field(default_factory=dict)
    identity: str = LOCAL_IDENTITY
    concurrency: int = 4
    reload: bool = True
    warm: bool = True
    """Import every function's handler before serving; one that does not import stops the start (never Ready)."""
    sweep_seconds: float | None = None
    """The period of the template's schedules (None: each schedule's own rate)."""
    skip_waits: bool = False
    """Skip the stack's clock past its waits whenever nothing else can run (:mod:`cairn.dev.time_skipping`)."""
    read_timeout: float | None = None
    """Seconds the API and the AWS endpoint wait for a client's next bytes (None: ``$CAIRN_DEV_READ_TIMEOUT``,
    else :data:`cairn.dev.wsgi_server.READ_TIMEOUT`)."""
    load: tuple[Path, ...] = ()
    """Job files (``cairn jobs pull``) to load into the table once it is deployed (``--load``)."""
    replace_loaded: bool = False
    """Replace a local job with the id of a loaded one (``--replace``); else the start stops there."""


def ensure_free(host: str, port: int) -> None:
    """DevServerError when ``host:port`` cannot be bound (another server has it)."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise DevServerError(
                f"{host}:{port} is already in use ({exc.strerror}): is another cairn dev running? "
                "Stop it, or choose another port with --port"
            ) from None


def worker_environment(aws_url: str) -> dict[str, str]:
    """What every worker inherits: this environment, local credentials, the local endpoint, cairn on the path."""
    environment = {key: value for key, value in os.environ.items() if key not in _DROPPED_VARIABLES}
    inherited = [str(Path(entry).resolve()) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    package_root = str(_PACKAGE_ROOT)
    environment.update(LOCAL_CREDENTIALS)
    environment.update(
        AWS_ENDPOINT_URL=aws_url,
        PYTHONPATH=os.pathsep.join(dict.fromkeys([package_root, *inherited])),
        POWERTOOLS_TRACE_DISABLED="true",
        AWS_XRAY_SDK_ENABLED="false",
        PYTHONUNBUFFERED="1",
    )
    return environment


def covered_lines(covered: Mapping[str, list[str]]) -> list[str]:
    """The banner's lines for the resource types moto's CloudFormation does not create, and what stands in."""
    from .coverage import COVERED

    lines = []
    for kind, logical_ids in sorted(covered.items()):
        what = COVERED.get(kind, "not created locally")
        lines.append(f"  local runner  {kind} ({len(logical_ids)}): {what}")
    return lines


class DevServer:
    """The local stack: start it, serve until stopped, stop it."""

    def __init__(self, options: DevOptions, log: DevLog | None = None) -> None:
        self.options = options
        self.log = log or DevLog(stack_prefix=f"{options.stack_name}-")
        self.stopping = threading.Event()
        self.aws: AwsEndpoint | None = None
        self.lambdas: LambdaService | None = None
        self.gateway: ApiGateway | None = None
        self.skipper: TimeSkipper | None = None
        self._restore_waits: Callable[[], None] | None = None
        self.deployment: Any = None
        self.read_timeout = READ_TIMEOUT
        self.loaded: list[tuple[Path, Any]] = []
        """The job files loaded (``--load``), each with the job it made."""

    def _client(self, service: str) -> Any:
        import boto3

        assert self.aws is not None
        return boto3.client(
            service,  # type: ignore[call-overload]
            endpoint_url=self.aws.url,
            region_name=REGION,
            aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )

    def start(self) -> None:
        """Start everything; DevServerError (nothing left running) when it cannot."""
        from .deployment import deploy

        options = self.options
        if not options.template.is_file():
            raise DevServerError(
                f"No template at {options.template}: run cairn dev in the project folder or pass --template"
            )
        ensure_free(options.host, options.port)
        try:
            self.read_timeout = options.read_timeout or read_timeout()
        except ValueError as exc:
            raise DevServerError(str(exc)) from None
        try:
            self.aws = AwsEndpoint(options.host, options.aws_port, read_timeout=self.read_timeout)
        except OSError as exc:
            raise DevServerError(f"{options.host}:{options.aws_port} (--aws-port) is already in use: {exc}") from None
        try:
            self.aws.start(execute_state_machines=True)
            self.deployment = deploy(
                options.template,
                client=self._client,
                stack_name=options.stack_name,
                parameters=self.parameters(),
                region=REGION,
                account=LOCAL_ACCOUNT,
            )
            if options.load:
                from .loading import load_files

                self.loaded = load_files(
                    self.deployment,
                    self._client,
                    options.load,
                    identity=options.identity,
                    replace=options.replace_loaded,
                )
            self._start_functions()
        except BaseException:
            self.stop()
            raise

    def parameters(self) -> dict[str, str]:
        """The template parameters given, with ``--driver`` as the ``Driver`` parameter when it is set."""
        parameters = dict(self.options.parameters)
        if self.options.driver is not None:
            declared = cfnyaml.load(self.options.template.read_text(encoding="utf-8")).get("Parameters") or {}
            if "Driver" not in declared:
                raise DevServerError(f"{self.options.template} has no Driver parameter for --driver to set")
            parameters["Driver"] = self.options.driver
        return parameters

    def _start_functions(self) -> None:
        options, deployment = self.options, self.deployment
        assert self.aws is not None
        if deployment.api is None:
            raise DevServerError(f"{options.template} has no function with HttpApi events: there is no API to serve")
        environment = worker_environment(self.aws.url)
        if options.skip_waits:
            self.skipper = TimeSkipper(self.log, self.stopping)
            environment.update(self.skipper.environment)
        sqs = self._client("sqs")
        self.lambdas = LambdaService(
            deployment.functions,
            environment,
            self.log,
            region=REGION,
            account=LOCAL_ACCOUNT,
            concurrency=options.concurrency,
            sqs=sqs,
        )
        self.aws.lambdas.service = self.lambdas
        if options.warm:
            self._warm(self.lambdas)
        sources = [source for function in deployment.functions.values() for source in function.sqs_sources]
        if self.skipper is not None:
            self.skipper.watch([source.queue_arn for source in sources], self.lambdas, {deployment.api.function_name})
        for function in deployment.functions.values():
            for source in function.sqs_sources:
                working = self.skipper.working if self.skipper is not None else contextlib.nullcontext
                SqsPoller(sqs, source, function.name, self.lambdas, self.stopping, working).thread.start()
            for stream in function.stream_sources:
                working = self.skipper.working if self.skipper is not None else contextlib.nullcontext
                streams = self._client("dynamodbstreams")
                StreamPoller(streams, stream, function.name, self.lambdas, self.stopping, working).thread.start()
            for schedule in function.schedules:
                period = options.sweep_seconds or schedule.every_seconds
                if period:
                    ScheduleTimer(schedule, function.name, self.lambdas, self.stopping, period).thread.start()
        self.gateway = ApiGateway(
            deployment.api.routes,
            deployment.api.function_name,
            self.lambdas,
            self.log,
            identity=options.identity,
            host=options.host,
            port=options.port,
            admin={"/_cairn/invocations": self.lambdas.running, "/_cairn/info": self.info},
            read_timeout=self.read_timeout,
        )
        self.gateway.start()
        if self.skipper is not None:
            self._restore_waits = skip_step_functions_waits(self.skipper)
            self.skipper.start()
        if options.reload:
            roots = {function.code_uri for function in deployment.functions.values()}
            CodeWatcher(roots, self._reload, self.stopping).thread.start()

    def _warm(self, lambdas: LambdaService) -> None:
        """Start one worker of each function; DevServerError naming each function whose handler does not load."""
        failed = lambdas.warm()
        if failed:
            template = self.options.template
            raise DevServerError(
                "; ".join(init_failure(lambdas.functions[name], error) for name, error in sorted(failed.items()))
                + f": fix the Handler or CodeUri in {template} (cairn template check --template {template} "
                "names what is wrong)"
            )

    def _reload(self, paths: list[Path]) -> None:
        if self.lambdas is None:
            return
        shown = ", ".join(str(path.name) for path in paths[:3]) + (" ..." if len(paths) > 3 else "")
        misfits = state_misfits(self.options.template)
        if misfits:
            self.lambdas.hold()
            self.log.say(
                "reload",
                f"code changed ({shown}) but not reloaded: the workers keep the code they loaded until a change fits",
                level="WARNING",
            )
            for line in misfits:
                self.log.say("reload", line, level="WARNING")
            return
        self.lambdas.retire()
        self.log.say("reload", f"code changed ({shown}): the next invocations run the new code")

    def info(self) -> dict[str, Any]:
        """What runs where: for ``GET /_cairn/info`` and the banner."""
        deployment = self.deployment
        return {
            "api": self.gateway.url if self.gateway else None,
            "awsEndpoint": self.aws.url if self.aws else None,
            "driver": deployment.parameters.get("Driver") if deployment else self.options.driver,
            "stack": self.options.stack_name,
            "identity": self.options.identity,
            "table": deployment.table_name if deployment else None,
            "stateMachine": deployment.state_machine.arn if deployment and deployment.state_machine else None,
            "functions": sorted(deployment.functions) if deployment else [],
            "outputs": deployment.outputs if deployment else {},
            "covered": deployment.covered if deployment else {},
            "clock": self.clock(),
        }

    def clock(self) -> dict[str, Any]:
        """The stack's clock: whether it skips waits, its offset from real time, what it reads now."""
        if self.skipper is not None:
            return self.skipper.info()
        now = system_clock_ms()
        return {"skipWaits": False, "offsetMs": 0, "nowMs": now, "now": iso_ms(now), "skips": 0}

    def banner(self) -> list[str]:
        """The lines printed once the server is ready."""
        info = self.info()
        lines = [
            f"cairn dev: {self.options.template} deployed as stack {info['stack']} (driver {info['driver']}): "
            "the SAM transform, then CloudFormation (moto)",
            f"  API           {info['api']}   (as {info['identity']}; header X-Cairn-Identity to act as another)",
            f"  dashboard     {info['api']}/",
            f"  AWS endpoint  {info['awsEndpoint']}   (AWS_ENDPOINT_URL for boto3 and the AWS CLI)",
            f"  table         {info['table']}",
        ]
        if info["stateMachine"]:
            lines.append(f"  state machine {info['stateMachine']}")
        lines.append(f"  functions     {', '.join(self.log.short_name(name) for name in info['functions'])}")
        if self.deployment is not None:
            lines.append(interpreter_line(list(self.deployment.functions.values())))
        lines += covered_lines(info["covered"])
        if self.options.reload:
            lines.append("  reload        on: a change to the functions' code starts new workers")
        if self.skipper is not None:
            lines.append(
                "  skip waits    on: when nothing can run, the stack's clock skips to the end of the next wait "
                f"(an SQS delay, a Wait state); the functions read it through {OFFSET_FILE_VARIABLE}"
            )
        lines.append("Ready. Ctrl-C stops.")
        return lines

    def serve_forever(self) -> None:
        """Block until Ctrl-C (SIGINT) or SIGTERM, then stop cleanly."""

        def stop(signum: int, frame: FrameType | None) -> None:
            self.stopping.set()

        previous = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}
        try:
            while not self.stopping.wait(0.5):
                pass
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
            self.log.say("dev", "stopping: workers, API and AWS endpoint")
            self.stop()

    def stop(self) -> None:
        """Stop the API, the event sources, every worker and the AWS endpoint."""
        self.stopping.set()
        if self.gateway is not None:
            self.gateway.stop()
            self.gateway = None
        if self.lambdas is not None:
            self.lambdas.close()
            self.lambdas = None
        if self.aws is not None:
            self.aws.stop()
            self.aws = None
        if self._restore_waits is not None:
            self._restore_waits()
            self._restore_waits = None
        if self.skipper is not None:
            self.skipper.close()
        sys.stdout.flush()
