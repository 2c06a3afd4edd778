"""A job view whose state is too large for one reply, when a write lands between the view's read and its link's: the
view reads the job again and hands over the state it then names, never a link to a state the view does not show,
even when both checkpoints were written in the same millisecond (the test's clock does not move)."""

from __future__ import annotations

import gzip
import json
from typing import Any

import requests

from cairn import Cairn, Done, Next, PhaseContext, Pipeline
from cairn.aws.api_reads import job_view
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.core.storage_port import StateLink, Storage
from cairn.storage.delegating import DelegatingStorage
from tests.functional.conftest import Moto
from tests.functional.test_dynamodb_large_state import incompressible_text
from tests.support import FakeClock

SIX_MB = 6 * 1024 * 1024


class WriteBeforeTheFirstLink(DelegatingStorage):
    """A store whose first link to a checkpoint's state is read only after ``write`` ran (a phase's commit)."""

    def __init__(self, inner: Storage) -> None:
        super().__init__(inner)
        self.write: Any = None
        self.links = 0

    def checkpoint_link(self, job_id: str, *, expires_in: int = 300) -> StateLink | None:
        self.links += 1
        if self.links == 1:
            self.write()
        return super().checkpoint_link(job_id, expires_in=expires_in)


def three_big_states(blobs: list[str]) -> Pipeline[Any]:
    """``first`` enters ``second`` with ``blobs[0]``, ``second`` enters ``third`` with ``blobs[1]``."""
    pipeline: Pipeline[Any] = Pipeline("big-states")

    @pipeline.phase
    def first(ctx: PhaseContext[Any]) -> Next:
        return Next("second", {"blob": blobs[0]})

    @pipeline.phase
    def second(ctx: PhaseContext[Any]) -> Next:
        return Next("third", {"blob": blobs[1]})

    @pipeline.phase
    def third(ctx: PhaseContext[Any]) -> Done:
        return Done(None)

    return pipeline


def linked_state(url: str) -> Any:
    body = requests.get(url, timeout=60).content  # moto serves the presigned URL
    return json.loads(gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body)


def test_a_commit_between_the_view_and_its_link_makes_the_view_read_again(moto: Moto, clock: FakeClock) -> None:
    blobs = [incompressible_text(SIX_MB), incompressible_text(SIX_MB)]
    inner = DynamoDBStorage(moto.table, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3, clock=clock)
    storage = WriteBeforeTheFirstLink(inner)
    jobs = Cairn(three_big_states(blobs), storage=storage)
    jobs.start("big-states", "raced", state={})
    jobs.run_until_idle(max_steps=1)  # first ran: the job waits to enter second, with blobs[0]
    storage.write = lambda: jobs.run_until_idle(max_steps=1)  # second runs between the view and its link

    view = job_view(jobs, "raced", include_state=True)

    assert storage.links == 2  # the first link named a newer checkpoint than the view read: read again
    assert view.next_phase == "third"
    assert view.state is None
    assert view.state_url is not None
    assert linked_state(view.state_url) == {"blob": blobs[1]}
