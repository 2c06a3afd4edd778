"""A fair share per owner, as a user sets it up: the setting checked at start-up, on any store, wrapped or not,
and a job waiting for its share never billed against its budget as if its phase had run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cairn import Cairn, ConfigurationError, Done, InlineScheduler, JobStatus, MemoryStorage, PhaseContext, Pipeline
from cairn.core.settings import OWNER_CONCURRENCY, PRICE_REGION, PRICES, Settings
from cairn.core.storage_port import Storage
from cairn.features.owner_share import MAX_OWNER_LIMIT, SlotRequest
from cairn.storage.delegating import DelegatingStorage
from cairn.testing.faults import FaultyStorage
from cairn.testing.plugin import crash_on
from tests.contract.user_adapter import KeyValueStorage
from tests.support import FakeClock

JOB = "waits"
#: Each Lambda request costs exactly $1; nothing else is priced.
DOLLAR_A_REQUEST = {
    "prices": {
        "lambda_requests": 1.0,
        "lambda_gb_seconds:arm64": 0,
        "lambda_gb_seconds:x86_64": 0,
        "dynamodb_write_units": 0,
    }
}


@pytest.fixture(autouse=True)
def _no_share_or_price_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in (OWNER_CONCURRENCY, PRICES, PRICE_REGION):
        monkeypatch.delenv(variable, raising=False)


def one_phase(max_cost_usd: float | None = None) -> Pipeline[Any]:
    pipeline: Pipeline[Any] = Pipeline("single", max_cost_usd=max_cost_usd)

    @pipeline.phase
    def only(ctx: PhaseContext[Any]) -> Done:
        return Done({"ran": ctx.job_id})

    return pipeline


def hold_the_only_slot(store: MemoryStorage, clock: FakeClock) -> None:
    """Another job of the store's owner holds its one slot for a minute."""
    store.owner_concurrency = 1
    now = clock()
    held = SlotRequest(
        owner=store.share_owner, job_id="other", holder="w#1", limit=1, now_ms=now, expires_at=now + 60_000
    )
    assert store.take_slot(held) is None


def look(app: Cairn, job_id: str = JOB) -> None:
    """One advance of the job, at its current sequence (a waiting job's look at its owner's share)."""
    app.advance(job_id, phase="only", sequence=app.get(job_id).sequence)


# -- the setting (CAIRN_OWNER_CONCURRENCY), checked where settings are read


@pytest.mark.parametrize("raw", ["1.5", "two", "-1", str(MAX_OWNER_LIMIT + 1), "1e3"])
def test_a_bad_share_setting_is_refused_at_start_up(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    said = f"CAIRN_OWNER_CONCURRENCY must be a whole number from 0 (no limit) to {MAX_OWNER_LIMIT}, got '{raw}'"
    with pytest.raises(ConfigurationError) as refused:
        Settings.from_env({OWNER_CONCURRENCY: raw})
    assert str(refused.value) == said
    monkeypatch.setenv(OWNER_CONCURRENCY, raw)
    with pytest.raises(ConfigurationError) as refused:
        Cairn(one_phase(), storage=MemoryStorage())
    assert str(refused.value) == said


@pytest.mark.parametrize(("raw", "limit"), [("", 0), ("0", 0), ("3", 3), (str(MAX_OWNER_LIMIT), MAX_OWNER_LIMIT)])
def test_a_good_share_setting_is_read(raw: str, limit: int) -> None:
    assert Settings.from_env({OWNER_CONCURRENCY: raw}).owner_concurrency == limit


def test_a_setting_spoilt_after_start_up_leaves_no_job_claimed(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = one_phase()
    app = Cairn(pipeline, storage=MemoryStorage(clock=clock), scheduler=InlineScheduler(now=clock.monotonic))
    app.start(pipeline, JOB)
    monkeypatch.setenv(OWNER_CONCURRENCY, "two")
    with pytest.raises(ConfigurationError, match="CAIRN_OWNER_CONCURRENCY must be a whole number"):
        look(app)
    job = app.get(JOB)
    assert job.status == JobStatus.RUNNING
    assert job.lease_owner is None  # the claim was given back, not left to its lease
    monkeypatch.setenv(OWNER_CONCURRENCY, "2")  # the setting put right: the sweep revives the job left alone
    app.run_until_idle()  # the start's advance, now stale, runs out
    assert app.get(JOB).status == JobStatus.RUNNING
    clock.advance(600.0)
    assert app.recover() == [JOB]
    app.run_until_idle()
    assert app.get(JOB).status == JobStatus.COMPLETE


# -- the share on any store: wrapped, or refused when the store cannot keep it


@pytest.mark.parametrize("wrap", ["delegating", "crash_on", "faulty"])
def test_a_wrapped_store_keeps_its_share(wrap: str, clock: FakeClock) -> None:
    inner = MemoryStorage(clock=clock)
    hold_the_only_slot(inner, clock)
    wrappers: dict[str, Callable[[], Storage]] = {
        "delegating": lambda: DelegatingStorage(inner),
        "crash_on": lambda: crash_on("pause", storage=inner),
        "faulty": lambda: FaultyStorage(inner),
    }
    wrapped = wrappers[wrap]()
    pipeline = one_phase()
    app = Cairn(pipeline, storage=wrapped, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    app.start(pipeline, JOB)
    look(app)
    job = app.get(JOB)
    assert job.status == JobStatus.RUNNING
    assert job.share_wait == "waiting for its owner's share: 1 of 1 phases running"


def test_a_share_set_for_a_store_that_cannot_keep_it_is_refused_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(OWNER_CONCURRENCY, "1")
    with pytest.raises(ConfigurationError) as refused:
        Cairn(one_phase(), storage=KeyValueStorage())
    assert str(refused.value) == (
        "CAIRN_OWNER_CONCURRENCY=1 sets a fair share per owner, but KeyValueStorage keeps no owners' shares "
        "(Storage.owner_shares() is None): unset CAIRN_OWNER_CONCURRENCY (or set it to 0), or use a store that "
        "keeps them"
    )


def test_a_store_written_before_shares_still_runs_jobs_without_a_share(clock: FakeClock) -> None:
    pipeline = one_phase()
    app = Cairn(pipeline, storage=KeyValueStorage(clock=clock), scheduler=InlineScheduler(now=clock.monotonic))
    app.start(pipeline, JOB)
    app.run_until_idle()
    assert app.get(JOB).status == JobStatus.COMPLETE


# -- waiting for the share: what a look costs, and the budget


def test_a_budgeted_job_waiting_for_its_share_runs_its_phase_once_the_share_frees(clock: FakeClock) -> None:
    store = MemoryStorage(clock=clock)
    hold_the_only_slot(store, clock)
    pipeline = one_phase(max_cost_usd=2.5)
    app = Cairn(
        pipeline,
        storage=store,
        scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep),
        prices=DOLLAR_A_REQUEST,
    )
    app.start(pipeline, JOB)
    for _ in range(5):  # five looks at a full share, each a Lambda request ($1): more than the budget in all
        look(app)
        clock.advance(2.0)
    waiting = app.get(JOB)
    assert waiting.share_wait == "waiting for its owner's share: 1 of 1 phases running"
    assert waiting.usage["lambda_requests"] == 5
    assert waiting.usage["share_wait:lambda_requests"] == 5  # of which waiting: the budget does not count them
    assert waiting.phases == []  # a look adds no phase record
    store.give_slot(store.share_owner, "other", "w#1")
    app.run_until_idle()
    job = app.get(JOB)
    assert job.status == JobStatus.COMPLETE, job.error
    assert job.result == {"ran": JOB}
    assert app.cost(JOB).usd == 6.0  # what the looks cost is in the job's cost all the same


def test_a_look_meters_its_claim_and_release_and_no_history_item(clock: FakeClock) -> None:
    store = MemoryStorage(clock=clock)
    hold_the_only_slot(store, clock)
    pipeline = one_phase()
    app = Cairn(pipeline, storage=store, scheduler=InlineScheduler(now=clock.monotonic, sleep=clock.sleep))
    app.start(pipeline, JOB)
    before = app.get(JOB).usage.get("dynamodb_write_units", 0)
    look(app)
    usage = app.get(JOB).usage
    # the claim and the release update the job's item (no history item is added); the job is noted in the share
    assert usage["dynamodb_write_units"] - before == 3
    assert usage["share_wait:dynamodb_write_units"] == 3
    assert usage["lambda_requests"] == usage["share_wait:lambda_requests"] == 1
