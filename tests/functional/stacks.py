"""A local stack of this bundle's pipelines and some more, in-process on moto: the functional tests' one recipe."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto import mock_aws

from cairn.core.pipeline import Pipeline
from cairn.core.registry import PipelineRegistry
from cairn.testing.stack import LocalStack
from pipelines import PIPELINES
from tests.aws import dynamodb_client, s3_client, sqs_client
from tests.support import FakeClock


@contextmanager
def moto_stack(clock: FakeClock, *more: Pipeline[Any]) -> Iterator[LocalStack]:
    """The bundle's pipelines and ``more`` (phase functions and scheduler, direct driver) on moto, on ``clock``."""
    with mock_aws():
        yield LocalStack.create(
            PipelineRegistry([*PIPELINES, *more]) if more else PIPELINES,
            dynamodb=dynamodb_client(),
            s3=s3_client(),
            sqs=sqs_client(),
            clock=clock,
        )
