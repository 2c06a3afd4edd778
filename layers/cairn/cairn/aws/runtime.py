"""What a Lambda function builds once per cold start: settings, clients, storage and schedulers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..clock import Clock, system_clock_ms
from ..errors import ConfigurationError
from ..pipeline import Pipeline
from ..scheduling.base import Scheduler
from ..settings import Settings
from . import clients
from .dynamodb import DynamoDBStorage
from .lambda_scheduler import LambdaInvoker, LambdaScheduler
from .stepfunctions_scheduler import StepFunctionsScheduler

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient


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
        if not self.settings.state_machine_arn:
            raise ConfigurationError("The stepfunctions driver needs CAIRN_STATE_MACHINE_ARN")
        return StepFunctionsScheduler(
            owner=owner,
            pipeline=pipeline.name,
            state_machine_arn=self.settings.state_machine_arn,
            client=self.sfn or clients.default_sfn_client(),
        )
