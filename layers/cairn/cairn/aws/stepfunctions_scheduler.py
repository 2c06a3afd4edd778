"""The Step Functions driver: a (re)start is a new execution; inside one, phases report what comes next."""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from ..core.errors import SchedulingError
from ..scheduling.messages import ScheduledAdvance, ScheduledItem

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class StepFunctionsScheduler:
    """Starts an execution of the pipeline state machine, which resolves ``nextPhase`` from the checkpoint.

    A delay is in seconds, waited by the execution's Wait state (a fraction rounded up to a whole second).
    """

    def __init__(self, *, owner: str, pipeline: str, state_machine_arn: str, client: SFNClient) -> None:
        self.owner = owner
        self.pipeline = pipeline
        self.state_machine_arn = state_machine_arn
        self._client = client

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        """Start an execution for the job (after ``delay`` seconds, waited inside the execution).

        The execution carries ``sequence``: it runs nothing if the job has moved past it by then. The
        Wait state takes whole seconds: a fraction is rounded up, never down (a wait's timeout that
        ended early would find nothing to end).
        """
        name = f"{_NAME_UNSAFE.sub('_', job_id)[:60]}-{uuid.uuid4().hex[:12]}"
        payload = {
            "jobId": job_id,
            "owner": self.owner,
            "pipeline": self.pipeline,
            "sequence": sequence,
            "delay": math.ceil(delay),
        }
        try:
            self._client.start_execution(stateMachineArn=self.state_machine_arn, name=name, input=json.dumps(payload))
        except (ClientError, BotoCoreError) as exc:
            raise SchedulingError(f"Cannot start an execution for job {job_id}: {exc}", retryable=True) from exc

    def schedule_wake(self, job_id: str, *, pipeline: str, phase: str, sequence: int | None) -> None:
        """Start an execution now for a job of any pipeline of this owner (one waiting for its owner's share)."""
        starter = StepFunctionsScheduler(
            owner=self.owner, pipeline=pipeline, state_machine_arn=self.state_machine_arn, client=self._client
        )
        starter.schedule_advance(job_id, phase=phase, sequence=sequence)


class StepRecorder:
    """The scheduler a phase uses inside an execution: it only records the advance for the state machine.

    A job woken for its owner's share is another job, in another execution: the scheduler ``waker`` makes (one
    that starts executions, made on first use) advances it; without one it looks again on its own.
    """

    def __init__(
        self, *, owner: str = "", pipeline: str = "", waker: Callable[[], StepFunctionsScheduler] | None = None
    ) -> None:
        self.owner = owner
        self.pipeline = pipeline
        self.waker = waker
        self.scheduled: ScheduledAdvance | None = None
        self.items: list[ScheduledItem] = []

    def schedule_wake(self, job_id: str, *, pipeline: str, phase: str, sequence: int | None) -> None:
        """Have ``waker`` start an execution for another job now (its own execution, waiting, then finds it moved)."""
        if self.waker is not None:
            self.waker().schedule_wake(job_id, pipeline=pipeline, phase=phase, sequence=sequence)

    def schedule_advance(self, job_id: str, *, phase: str, sequence: int | None = None, delay: float = 0.0) -> None:
        """Remember the advance; the state machine loops (and waits ``delay``, in whole seconds) itself."""
        self.scheduled = ScheduledAdvance(phase=phase, sequence=sequence, delay=math.ceil(delay))

    def schedule_item(self, job_id: str, *, phase: str, fan_out: str, item: int, delay: float = 0.0) -> None:
        """Remember a map item to run; the state machine's ``Map`` state runs it (after ``delay``, whole seconds)."""
        self.items.append(
            ScheduledItem(
                job_id=job_id,
                owner=self.owner,
                pipeline=self.pipeline,
                phase=phase,
                fan_out=fan_out,
                item=item,
                delay=math.ceil(delay),
            )
        )
