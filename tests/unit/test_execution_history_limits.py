"""Where a Step Functions execution hands its job on, and where a map's slot ends (cairn.aws.execution_history)."""

from __future__ import annotations

import pytest

from cairn.aws.execution_history import (
    HISTORY_EVENT_LIMIT,
    ITEMS_PER_SLOT,
    SEQUENCES_PER_EXECUTION,
    execution_name,
    hand_off,
    slot_goes_on,
)

WORST_EVENTS_PER_SEQUENCE = 60
"""A failed task retried six times, the failure recorded, a backoff waited, the job resolved again."""


def test_the_limits_leave_room_for_the_costliest_loop() -> None:
    assert SEQUENCES_PER_EXECUTION * WORST_EVENTS_PER_SEQUENCE < HISTORY_EVENT_LIMIT
    assert ITEMS_PER_SLOT * 32 < HISTORY_EVENT_LIMIT  # an item retried six times after Lambda's errors


@pytest.mark.parametrize(
    ("since", "ran_at", "reached", "handed"),
    [
        (0, 398, 400, True),  # the execution started at 0 and the job reached 400
        (0, 396, 398, False),
        (1_001, 1_399, 1_401, True),
        (1_001, 1_397, 1_399, False),
        (None, 398, 400, True),  # a job's first execution: each multiple of the limit crossed
        (None, 400, 402, False),
        (None, None, 402, False),
        (True, 398, 400, True),  # not a sequence: as if none was given
        ("0", 398, 400, True),
    ],
)
def test_an_execution_hands_on_once_the_job_is_far_enough_past_where_it_started(
    since: object, ran_at: int | None, reached: int, handed: bool
) -> None:
    reply = hand_off("job-1", since=since, ran_at=ran_at, scheduled={"phase": "p", "sequence": reached, "delay": 3})
    assert (reply is not None) == handed
    if reply is not None:
        assert reply == {"name": execution_name("job-1", reached), "sequence": reached, "delay": 3}


@pytest.mark.parametrize("scheduled", [None, {}, {"phase": "p", "sequence": None}, {"phase": "p", "sequence": "9"}])
def test_nothing_to_hand_on_when_the_phase_asked_for_no_advance_with_a_sequence(scheduled: object) -> None:
    assert hand_off("job-1", since=0, ran_at=10_000, scheduled=scheduled) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("job_id", ["j", "a" * 128, "Weird.id_with-every.char_" * 5])
def test_a_handed_on_execution_name_fits_step_functions_with_the_parents_hash(job_id: str) -> None:
    name = execution_name(job_id, 10**11)
    assert len(name) + 1 + 32 <= 80
    assert set(name) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
    assert name == execution_name(job_id, 10**11)  # a retried start names the same execution
    assert name != execution_name(job_id, 10**11 + 2)
    assert execution_name("a" * 30 + "x", 4) != execution_name("a" * 30 + "y", 4)  # long ids kept apart


@pytest.mark.parametrize("width", [1, 3, 10])
def test_every_slot_ends_after_at_most_the_items_per_slot(width: int) -> None:
    count = ITEMS_PER_SLOT * width * 2 + 7
    for slot in range(width):
        ran, item = 1, slot
        while item + width < count:
            if not slot_goes_on(item, item + width):
                assert ran == ITEMS_PER_SLOT  # every round of a slot is a full one
                ran = 0
            ran, item = ran + 1, item + width
            assert ran <= ITEMS_PER_SLOT


def test_an_items_retry_goes_on_in_its_slot() -> None:
    assert slot_goes_on(ITEMS_PER_SLOT - 1, ITEMS_PER_SLOT - 1)
