"""What a Lambda function builds once per cold start: settings, clients, storage and schedulers.

:meth:`Runtime.cairn` puts them behind the front door (:class:`cairn.Cairn`)
for one owner's jobs: cheap enough to build per request or per event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..app import Cairn
from ..core.clock import Clock, system_clock_ms
from ..core.errors import ConfigurationError, SchedulingError
from ..core.pipeline import Pipeline
from ..core.registry import PipelineRegistry
from ..core.scheduler_port import ItemScheduler, Scheduler
from ..core.settings import Settings
from ..core.storage_port import Storage
from . import clients
from .dynamodb import DynamoDBStorage
from .lambda_scheduler import LambdaInvoker, LambdaScheduler
from .stepfunctions_scheduler import StepFunctionsScheduler

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient

    from .dynamodb.status_counts import StatusCounts


@dataclass
class Runtime:
    """Settings and AWS clients for one process; clients are injected in tests, else built lazily."""

    settings: Settings = field(default_factory=Settings.from_env)
    dynamodb: DynamoDBClient | None = None
    s3: S3Client | None = None
    lambda_client: LambdaInvoker | None = None
    sqs: SQSClient | None = None
    sfn: SFNClient | None = None
    clock: Clock = system_clock_ms
    _storage: DynamoDBStorage | None = field(default=None, init=False, repr=False)
    _status_counts: StatusCounts | None = field(default=None, init=False, repr=False)

    def storage(self, owner: str) -> DynamoDBStorage:
        """The job store as seen by ``owner``."""
        if self._storage is None:
            self._storage = DynamoDBStorage(
                client=self.dynamodb or clients.default_dynamodb_client(),
                s3_client=self.s3,
                settings=self.settings,
                clock=self.clock,
            )
        return self._storage.for_owner(owner)

    def status_counts(self) -> StatusCounts:
        """What applies the table's stream to each owner's counts (one a process: it remembers what it read)."""
        if self._status_counts is None:
            self._status_counts = self.storage("default").status_counts()
        return self._status_counts

    def lambda_scheduler(self, owner: str, pipeline: Pipeline[Any]) -> LambdaScheduler:
        """The direct driver's scheduler for one owner's jobs of ``pipeline``."""
        return LambdaScheduler(
            owner=owner,
            pipeline=pipeline,
            settings=self.settings,
            lambda_client=self.lambda_client or clients.default_lambda_client(),
            sqs_client=self.sqs or (clients.default_sqs_client() if self.settings.delay_queue_url else None),
            clock=self.clock,
        )

    def start_scheduler(self, owner: str, pipeline: Pipeline[Any]) -> Scheduler:
        """What starts or retries a job: a phase invoke (direct) or a new execution (stepfunctions)."""
        if self.settings.driver == "direct":
            return self.lambda_scheduler(owner, pipeline)
        return self.execution_scheduler(owner, pipeline.name)

    def execution_scheduler(self, owner: str, pipeline: str) -> StepFunctionsScheduler:
        """The stepfunctions driver's scheduler for one owner's jobs of ``pipeline``: each advance a new execution."""
        if not self.settings.state_machine_arn:
            raise ConfigurationError("The stepfunctions driver needs CAIRN_STATE_MACHINE_ARN")
        return StepFunctionsScheduler(
            owner=owner,
            pipeline=pipeline,
            state_machine_arn=self.settings.state_machine_arn,
            client=self.sfn or clients.default_sfn_client(),
        )

    def cairn(
        self,
        owner: str,
        pipelines: Pipeline[Any] | PipelineRegistry,
        *,
        scheduler: Scheduler | None = None,
    ) -> Cairn:
        """The front door onto ``owner``'s jobs of ``pipelines``, in this deployment's table.

        Without a ``scheduler`` advances are started under the configured
        driver (:meth:`start_scheduler`). For one pipeline its scheduler is
        built now, so a misconfigured driver fails before anything is written;
        for a registry each pipeline's is built when a job of it first needs
        one (a front door that only reads, pauses or cancels builds none).
        """
        storage = self.storage(owner)
        if scheduler is None:
            if isinstance(pipelines, Pipeline):
                scheduler = self.start_scheduler(owner, pipelines)
            else:
                scheduler = PipelineSchedulers(
                    pipelines, storage, lambda pipeline: self.start_scheduler(owner, pipeline)
                )
        return Cairn(pipelines, storage=storage, scheduler=scheduler)


class PipelineSchedulers:
    """A scheduler for the jobs of several pipelines: each advance goes to the scheduler of its job's pipeline.

    The scheduler port names the job, not its pipeline: with one pipeline
    there is nothing to look up; with several the job's routing fields name
    it (one read, as :meth:`cairn.Cairn.advance` does). Schedulers are built
    by ``build`` on first use, one per pipeline.
    """

    def __init__(
        self, pipelines: PipelineRegistry, storage: Storage, build: Callable[[Pipeline[Any]], Scheduler]
    ) -> None:
        self.pipelines = pipelines
        self.storage = storage
        self._build = build
        self._schedulers: dict[str, Scheduler] = {}

    def for_pipeline(self, pipeline: Pipeline[Any]) -> Scheduler:
        """The scheduler of ``pipeline``'s jobs."""
        if pipeline.name not in self._schedulers:
            self._schedulers[pipeline.name] = self._build(pipeline)
        return self._schedulers[pipeline.name]

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        """Schedule the advance with the scheduler of the job's pipeline."""
        self._of(job_id, phase).schedule_advance(job_id, phase=phase, sequence=sequence, delay=delay)

    def schedule_item(self, job_id: str, *, phase: str, fan_out: str, item: int, delay: float = 0.0) -> None:
        """Schedule a map item's advance with the scheduler of the job's pipeline."""
        scheduler = self._of(job_id, phase)
        if not isinstance(scheduler, ItemScheduler):
            raise SchedulingError(f'The scheduler of job "{job_id}" does not run map items')
        scheduler.schedule_item(job_id, phase=phase, fan_out=fan_out, item=item, delay=delay)

    def _of(self, job_id: str, phase: str) -> Scheduler:
        names = self.pipelines.names
        if len(names) == 1:
            name = names[0]
        else:
            route = self.storage.get_route(job_id)
            if route is None:
                raise SchedulingError(f'Job "{job_id}" is gone; its advance of "{phase}" was not scheduled')
            name = route.pipeline
        return self.for_pipeline(self.pipelines.get(name))
