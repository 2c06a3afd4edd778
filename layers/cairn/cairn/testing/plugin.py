"""pytest fixtures for testing your own pipelines (registered as the ``cairn`` pytest plugin by the dev extra).

- ``cairn_clock``: a clock that moves only when slept on or advanced, so retry backoffs and delays
  take no real time;
- ``cairn_local``: makes a :class:`cairn.Cairn` for your pipelines on memory storage (or the storage
  you pass, such as ``cairn_dynamodb``) with an inline scheduler on that clock: ``start``, then
  ``run_until_idle()``; ``cairn_local.load(FILE)`` loads a job pulled from an API (``cairn jobs pull``);
- :func:`crash_on`: a storage whose worker dies (:class:`SimulatedCrash`) at the n-th call of one
  storage operation (``"save"``, ``"commit"``...), as a process killed there would;
- ``cairn_aws``: moto in-process for the test, with fake credentials set meanwhile;
- ``cairn_dynamodb``: a :class:`~cairn.aws.dynamodb.DynamoDBStorage` on a fresh table and state
  bucket in moto, on ``cairn_clock``;
- ``cairn_api``: makes an :class:`~cairn.testing.api.ApiClient` for your pipelines: the API, phase
  functions and scheduler on moto, called as a signed-in owner.

The last three need moto and boto3 (``pip install "cairn-lambda[dev]"``); they are imported only when a
test asks for them, so the plugin loads without them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import pytest

from ..app import Cairn
from ..core.pipeline import Pipeline
from ..core.registry import PipelineRegistry
from ..core.storage_port import Storage
from ..scheduling.inline import InlineScheduler
from ..storage.delegating import DelegatingStorage
from ..storage.job_files import load_job_file
from ..storage.memory import MemoryStorage
from .api_events import LOCAL_IDENTITY
from .clock import SkippingClock
from .faults import SimulatedCrash

if TYPE_CHECKING:
    from ..aws.dynamodb import DynamoDBStorage
    from .api import ApiClient, Caller

_T = TypeVar("_T")
Pipelines = Pipeline[Any] | Iterable[Pipeline[Any]] | PipelineRegistry


class CrashOn(DelegatingStorage):
    """A storage whose worker dies at the ``nth`` call of ``operation``, before the call is made."""

    def __init__(self, inner: Storage, operation: str, nth: int = 1) -> None:
        super().__init__(inner)
        self.operation = operation
        self.nth = nth
        self.calls = 0

    @property
    def crashed(self) -> bool:
        """Whether the worker has died."""
        return self.calls >= self.nth

    def around(self, name: str, operation: Callable[[], _T]) -> _T:
        if name == self.operation:
            self.calls += 1
            if self.calls == self.nth:
                raise SimulatedCrash(f"the worker died at {name} #{self.nth}")
        return operation()


def crash_on(operation: str, nth: int = 1, *, storage: Storage | None = None) -> CrashOn:
    """``storage`` (memory by default) with a worker that dies at the ``nth`` call of ``operation``.

    Operations: ``start_job``, ``claim``, ``save`` (a phase's ``ctx.save_state``), ``commit`` (a phase's
    outcome), ``pause``, ``cancel``, ``get_job``. The job is left as a real crash leaves it; a
    ``retry`` of it resumes from its checkpoint.
    """
    return CrashOn(storage if storage is not None else MemoryStorage(), operation, nth)


def local_cairn(pipelines: Pipelines, *, clock: SkippingClock, storage: Storage | None = None) -> Cairn:
    """A front door for ``pipelines`` on ``storage`` (memory by default), advanced in-process on ``clock``."""
    scheduler = InlineScheduler(now=clock.monotonic, sleep=clock.sleep)
    chosen = storage if storage is not None else MemoryStorage(clock=clock)
    layer: Storage | None = chosen
    while layer is not None:  # the wrappers and the store they wrap all read the same clock
        layer.clock = clock
        layer = layer.inner if isinstance(layer, DelegatingStorage) else None
    return Cairn(pipelines, storage=chosen, scheduler=scheduler)


class LocalCairns:
    """The ``cairn_local`` fixture: call it with your pipelines for a :class:`cairn.Cairn`; ``load`` a pulled job.

    ``cairn_local(pipelines, storage=None)`` makes a front door on a fresh memory store (or ``storage``),
    as it always has. Once a job was loaded (``load``), calls without ``storage`` use the store holding
    the loaded jobs (``loaded_storage``), so that the Cairn you make sees them.
    """

    def __init__(self, clock: SkippingClock) -> None:
        self.clock = clock
        self.loaded_storage: Storage | None = None

    def __call__(self, pipelines: Pipelines, *, storage: Storage | None = None) -> Cairn:
        """A front door for ``pipelines`` on ``storage`` (default: a fresh memory store, or the loaded jobs')."""
        return local_cairn(pipelines, clock=self.clock, storage=storage if storage is not None else self.loaded_storage)

    def load(self, path: str | os.PathLike[str], *, storage: Storage | None = None, replace: bool = False) -> str:
        """Load the job file at ``path`` (``cairn jobs pull``) into ``storage`` (default: a memory store); its id.

        The job keeps its id, input, history, checkpoint, status and usage; its log ends with the line
        "Loaded from FILE, pulled from API at TIME". A job with that id in the store is refused unless
        ``replace``. Rerun it from a phase with ``cairn_local(pipelines).retry(job_id, mode="from", phase=...)``.
        """
        target = storage if storage is not None else self.loaded_storage
        if target is None:
            target = MemoryStorage(clock=self.clock)
        job = load_job_file(target, path, replace=replace)
        if storage is None:
            self.loaded_storage = target
        return job.job_id


def _needs_dev_extra(fixture: str, missing: ImportError) -> NoReturn:
    """Fail the test that asked for ``fixture``: the dev extra (moto, boto3) is not installed."""
    pytest.fail(f'{fixture} needs moto and boto3: pip install "cairn-lambda[dev]" ({missing})', pytrace=False)


@pytest.fixture
def cairn_clock() -> SkippingClock:
    """A clock that skips time: retry backoffs and delays take none."""
    return SkippingClock()


@pytest.fixture
def cairn_local(cairn_clock: SkippingClock) -> LocalCairns:
    """Makes a :class:`cairn.Cairn` for your pipelines on memory storage (or ``storage=``) and ``cairn_clock``.

    ``cairn_local.load(FILE)`` loads a pulled job (``cairn jobs pull``) and returns its id: see :class:`LocalCairns`.
    """
    return LocalCairns(cairn_clock)


@pytest.fixture
def cairn_aws() -> Iterator[None]:
    """moto in-process for the test, with fake credentials and region set meanwhile: no call leaves the machine."""
    try:
        from .moto_aws import fake_aws
    except ImportError as missing:
        _needs_dev_extra("cairn_aws", missing)
    with fake_aws():
        yield


@pytest.fixture
def cairn_dynamodb(cairn_aws: None, cairn_clock: SkippingClock) -> DynamoDBStorage:
    """A DynamoDBStorage on a fresh table and state bucket in moto, on ``cairn_clock``.

    Run your pipeline on it with ``cairn_local(pipeline, storage=cairn_dynamodb)``.
    """
    try:
        from .dynamodb import moto_storage
    except ImportError as missing:
        _needs_dev_extra("cairn_dynamodb", missing)
    return moto_storage(clock=cairn_clock)


@pytest.fixture
def cairn_api(cairn_aws: None, cairn_clock: SkippingClock) -> Callable[..., ApiClient]:
    """Makes an ApiClient for your pipelines: ``cairn_api(pipelines, owner=<IAM principal ARN>)``.

    The API, phase functions and scheduler run in-process on moto and on ``cairn_clock``.
    """
    try:
        from .api import ApiClient
    except ImportError as missing:
        _needs_dev_extra("cairn_api", missing)

    def make(pipelines: Pipelines, *, owner: Caller = LOCAL_IDENTITY) -> ApiClient:
        return ApiClient.on_moto(pipelines, clock=cairn_clock, owner=owner)

    return make


__all__ = [
    "CrashOn",
    "LocalCairns",
    "SimulatedCrash",
    "SkippingClock",
    "cairn_api",
    "cairn_aws",
    "cairn_clock",
    "cairn_dynamodb",
    "cairn_local",
    "crash_on",
    "local_cairn",
]
