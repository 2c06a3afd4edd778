"""Property test: a job survives any schedule of process deaths and lost responses, on every storage.

At every storage call a schedule may kill the process just before or just
after the call, or let a write land and lose its response, any number of times
(see :mod:`tests.contract.fault_schedules`). Whatever the schedule, the job
completes with the crash-free result; each committed unit of work is counted
once (usage per committed phase equals the crash-free run's); work is redone
only since the last checkpoint, at most once per death, and never for a lost
response; and no job is left running with nothing scheduled once the sweep has
run. On DynamoDB, responses are also lost at the AWS call level (botocore).

Schedules: every single fault of the crash-free run with each recovery; pairs
of faults (all of them on memory, a fixed sample elsewhere); hypothesis-drawn
lists of any length. The session ends with the count of schedules run per
storage (tests/conftest.py); ``make proof`` runs CAIRN_PROOF_SCALE times more.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from cairn import FileStorage, MemoryStorage
from cairn.core.errors import StorageError
from cairn.testing.faults import WRITES, Fault, FaultyStorage, SimulatedCrash
from cairn.testing.serialised import one_call_at_a_time
from tests.aws import REGION, dynamodb_client
from tests.contract.fault_schedules import (
    AWS_WRITES,
    CRASHES,
    INITIAL_STATE,
    ITEMS,
    LOOPS,
    SCALE,
    Backend,
    Baseline,
    BotocoreBackend,
    DynamoDBBackend,
    Run,
    Schedule,
    crash_free,
    pair_schedules,
    run_schedule,
    sampled,
    schedules,
    single_fault_schedules,
)
from tests.support import FakeClock, counters

#: Per storage: how many pairs of faults (a fixed sample; all of them once SCALE makes it more) and hypothesis
#: examples, each times SCALE. A DynamoDB schedule on moto takes ~0.2 s, a file one ~20 ms, a memory one ~1 ms.
PAIRS = {"memory": 3000, "file": 500, "dynamodb": 30}
EXAMPLES = {"memory": 400, "file": 250, "dynamodb": 20, "dynamodb-botocore": 25}
PARTS = 4
"""How many tests deal out the single-fault schedules between them (every part runs on every store)."""


@pytest.fixture(autouse=True)
def quiet_engine() -> Iterator[None]:
    """The engine logs every failure and resend; thousands of schedules need none of it captured."""
    engine = logging.getLogger("cairn")
    disabled = engine.disabled
    engine.disabled = True
    yield
    engine.disabled = disabled


@pytest.fixture
def fault_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory", "file", "dynamodb"])
def backend(request: pytest.FixtureRequest, tmp_path: Path, fault_clock: FakeClock) -> Iterator[Backend]:
    """One storage under test; DynamoDB is moto in-process with a serialised client."""
    if request.param == "memory":
        yield Backend("memory", MemoryStorage(clock=fault_clock), fault_clock)
    elif request.param == "file":
        yield Backend("file", FileStorage(tmp_path / "jobs", clock=fault_clock), fault_clock)
    else:
        with mock_aws():
            yield DynamoDBBackend("dynamodb", fault_clock, one_call_at_a_time(dynamodb_client()))


@pytest.fixture
def botocore_backend(fault_clock: FakeClock) -> Iterator[BotocoreBackend]:
    """DynamoDB on moto whose workers' client has botocore retries off, so a lost response reaches cairn."""
    with mock_aws():
        no_retries = Config(retries={"mode": "standard", "max_attempts": 1})
        losing = boto3.client("dynamodb", region_name=REGION, config=no_retries)
        yield BotocoreBackend("dynamodb-botocore", fault_clock, one_call_at_a_time(dynamodb_client()), losing)


def fires(fault: Fault, operations: list[str]) -> bool:
    """Whether ``fault`` is injected in a run that made ``operations``: a death at any call it made, a lost
    response at a write."""
    return fault.operation < len(operations) and (fault.kind in CRASHES or operations[fault.operation] in WRITES)


def faults_fired(run: Run, schedule: Schedule, baseline: Baseline) -> int:
    """Check that every fault of ``schedule`` at a call the run made was injected, and that its first fault did
    fire when it falls on the crash-free run's calls (with each message delivered once, the run is that run up to
    its first fault); how many fired.

    So a schedule whose faults all miss is never passed as if it had been survived.
    """
    fired = [fault for fault in schedule.faults if fires(fault, run.operations)]
    deaths = sum(fault.kind in CRASHES for fault in fired)
    assert run.crashes == deaths, schedule.describe()
    if not schedule.lost_calls:  # AWS-level losses add resends, and numbers, of their own
        assert run.lost == len(fired) - deaths, schedule.describe()
        if schedule.faults and not schedule.duplicates and fires(schedule.faults[0], baseline.operations):
            assert fired[:1] == [schedule.faults[0]], f"the first fault never fired: {schedule.describe()}"
    return len(fired)


def hypothesis_settings(examples: int) -> settings:
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


def test_the_crash_free_run(backend: Backend) -> None:
    baseline = crash_free(backend)
    assert baseline.result == {"items": list(ITEMS), "looped": list(LOOPS), "checksum": "3:15"}
    # the six commits below count a transition each (check's retry counts none)
    assert counters(baseline.usage) == {"items": 3, "loops": 3, "checks": 2, "finishes": 1, "transitions": 6}
    assert baseline.transitions == [
        ("collect", "next", "loop"),
        ("loop", "next", "loop"),
        ("loop", "next", "loop"),
        ("loop", "next", "check"),
        ("check", "next", "finish"),
        ("finish", "done", None),
    ]
    assert [outcome for _, _, outcome, _ in baseline.records].count("retry") == 1
    assert baseline.effects == [
        *(("collect", item) for item in ITEMS),
        *(("loop", item) for item in LOOPS),
        ("check", "fail"),
        ("check", "pass"),
        ("finish", "3:15"),
    ]
    assert INITIAL_STATE["collected"] == []  # the drivers share it: no phase may change it
    assert baseline.operations.count("save") == len(ITEMS) + 1
    # Delivered twice, every message costs one more (refused) claim and changes nothing else.
    twice = crash_free(backend, duplicates=True)
    assert twice.operations.count("claim") == 2 * baseline.operations.count("claim")
    assert (twice.result, twice.usage, twice.records, twice.effects) == (
        baseline.result,
        baseline.usage,
        baseline.records,
        baseline.effects,
    )


@pytest.mark.parametrize("part", range(PARTS), ids=[f"part{number + 1}of{PARTS}" for number in range(PARTS)])
@pytest.mark.parametrize("duplicates", [False, True], ids=["once", "twice"])
def test_every_single_fault_at_every_call(backend: Backend, duplicates: bool, part: int) -> None:
    """Every message delivered once, then twice (on DynamoDB, slow on moto, every sixth fault unless ``make proof``).

    The schedules are dealt into PARTS tests, so that test workers share the slow stores' schedules.
    """
    baseline = crash_free(backend, duplicates=duplicates)
    schedules = list(single_fault_schedules(baseline.operations, duplicates=duplicates))
    if duplicates and backend.name == "dynamodb" and SCALE == 1:
        schedules = schedules[::6]
    for schedule in schedules[part::PARTS]:
        run = run_schedule(backend, baseline, schedule)
        # Each fault is at a call of the crash-free run, so each one must actually have been injected.
        deaths = sum(fault.kind in CRASHES for fault in schedule.faults)
        assert (run.crashes, run.lost) == (deaths, len(schedule.faults) - deaths), schedule.describe()


def test_pairs_of_faults(backend: Backend) -> None:
    baseline = crash_free(backend)
    every_pair = pair_schedules(len(baseline.operations) + 8)
    chosen = sampled(every_pair, PAIRS[backend.name] * SCALE, seed=len(every_pair))
    fired = [faults_fired(run_schedule(backend, baseline, schedule), schedule, baseline) for schedule in chosen]
    # Pairs start within the crash-free run's calls but for the last 8: nearly every schedule fires a fault.
    once = [schedule for schedule in chosen if not schedule.duplicates]
    within = [schedule for schedule in once if fires(schedule.faults[0], baseline.operations)]
    assert sum(count > 0 for count in fired) >= len(within) > len(once) // 2


def test_any_schedule_of_faults(backend: Backend) -> None:
    baseline = crash_free(backend)

    fired: list[int] = []

    @hypothesis_settings(EXAMPLES[backend.name])
    @given(schedule=schedules(calls=2 * len(baseline.operations), max_faults=12))
    def check(schedule: Schedule) -> None:
        fired.append(faults_fired(run_schedule(backend, baseline, schedule), schedule, baseline))

    check()
    assert sum(count > 0 for count in fired) > len(fired) // 4, f"faults fired per schedule: {fired}"


def lost_aws_writes(baseline: Baseline) -> list[int]:
    return [number for number, name in enumerate(baseline.aws_calls) if name in AWS_WRITES]


def test_every_lost_aws_response(botocore_backend: BotocoreBackend) -> None:
    baseline = crash_free(botocore_backend)
    writes = lost_aws_writes(baseline)
    assert len(writes) >= len([name for name in baseline.operations if name in WRITES])
    for number in writes:
        run = run_schedule(botocore_backend, baseline, Schedule(lost_calls=frozenset({number})))
        assert (run.crashes, run.lost, run.processes) == (0, 1, 1)


def test_any_set_of_lost_aws_responses_with_deaths(botocore_backend: BotocoreBackend) -> None:
    baseline = crash_free(botocore_backend)
    calls = 2 * len(baseline.aws_calls)
    fired: list[int] = []

    @hypothesis_settings(EXAMPLES[botocore_backend.name])
    @given(
        schedule=st.one_of(
            schedules(calls=len(baseline.operations), aws_calls=calls, max_faults=0),
            schedules(calls=2 * len(baseline.operations), aws_calls=calls, max_faults=4, kinds=CRASHES),
        )
    )
    # Found in CI: the death just after call 27 falls on a call whose AWS response is lost (it raises).
    @example(
        schedule=Schedule(
            (Fault(0, "crash-before"), Fault(27, "crash-after")), lost_calls=frozenset({32}), duplicates=True
        )
    )
    def check(schedule: Schedule) -> None:
        run = run_schedule(botocore_backend, baseline, schedule)
        faults_fired(run, schedule, baseline)
        fired.append(run.crashes + run.lost)

    check()
    assert sum(count > 0 for count in fired) > len(fired) // 4, f"faults fired per schedule: {fired}"


def test_a_death_just_after_a_call_that_raised_still_dies() -> None:
    """A process dies once the call returns, whether it answered or raised: the schedule's death is not skipped."""

    class Failing(MemoryStorage):
        def get_job(self, job_id: str) -> None:
            raise StorageError("read timed out", retryable=True)

    process = FaultyStorage(Failing(), [Fault(0, "crash-after")])
    with pytest.raises(SimulatedCrash, match="after storage operation #0"):
        process.get_job("any")
    assert process.operations == ["get_job"]
