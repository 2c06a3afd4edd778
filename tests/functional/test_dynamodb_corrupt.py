"""Corrupt or hostile stored data on DynamoDB and S3 is contained: a CorruptJobError naming the job,
never a raw decoding error, and one unreadable job never breaks a listing, the API's or the sweep."""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cairn import Job, JobStatus, run_pipeline
from cairn.adapters import CorruptJobError
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.dynamodb.schema import history_sk, input_sk, job_pk
from cairn.testing.stack import LocalStack
from tests.functional.api_client import Api
from tests.functional.conftest import Moto
from tests.support import FakeClock, make_scheduler, record_figure, two_phase_pipeline

OWNER = "alice"
DEEP = "[" * 100_000
#: The bytes of a gzip header (RFC 1952) no reader checks: MTIME, XFL and OS.
GZIP_UNREAD_HEADER = range(4, 10)


def started(moto: Moto, clock: FakeClock, *job_ids: str) -> DynamoDBStorage:
    """A store with ``job_ids`` started (running, a checkpoint, an input), one second apart."""
    storage = DynamoDBStorage(
        moto.table, owner=OWNER, client=moto.dynamodb, bucket=moto.bucket, s3_client=moto.s3, clock=clock
    )
    pipeline = two_phase_pipeline("two")
    for job_id in job_ids:
        clock.advance(1)
        scheduler = make_scheduler(pipeline, storage, clock)
        run_pipeline(job_id, pipeline, storage=storage, scheduler=scheduler, initial_state={"doc": job_id * 40})
    return storage


def read_error(storage: DynamoDBStorage, job_id: str, case: str) -> CorruptJobError:
    """The CorruptJobError reading ``job_id`` raises (fails the test, naming ``case``, if it reads)."""
    try:
        storage.get_job(job_id)
    except CorruptJobError as exc:
        return exc
    raise AssertionError(f"{case}: read as a job")


def job_key(job_id: str, sk: str = "JOB") -> dict[str, Any]:
    return {"pk": {"S": job_pk(OWNER, job_id)}, "sk": {"S": sk}}


def set_attribute(moto: Moto, job_id: str, path: str, value: dict[str, Any]) -> None:
    """Overwrite one attribute (``a`` or ``a.b``) of a job item with a raw DynamoDB value."""
    names = {f"#n{index}": part for index, part in enumerate(path.split("."))}
    moto.dynamodb.update_item(
        TableName=moto.table,
        Key=job_key(job_id),
        UpdateExpression=f"SET {'.'.join(names)} = :v",
        ExpressionAttributeNames=names,
        ExpressionAttributeValues={":v": value},
    )
    record_figure("corrupt_records", tried=1)


def remove_attribute(moto: Moto, job_id: str, name: str) -> None:
    moto.dynamodb.update_item(
        TableName=moto.table, Key=job_key(job_id), UpdateExpression="REMOVE #n", ExpressionAttributeNames={"#n": name}
    )
    record_figure("corrupt_records", tried=1)


def gzipped(data: bytes) -> dict[str, Any]:
    return {"M": {"gzip": {"B": gzip.compress(data)}}}


def in_s3(moto: Moto, body: bytes, *, sha256: str | None = None, encoding: str = "gzip") -> dict[str, Any]:
    """A state attribute pointing at an S3 object holding ``body`` (by default with its true hash)."""
    moto.s3.put_object(Bucket=moto.bucket, Key="states/alice/bad/x.json", Body=body)
    reference = {
        "bucket": {"S": moto.bucket},
        "key": {"S": "states/alice/bad/x.json"},
        "sha256": {"S": sha256 or hashlib.sha256(body).hexdigest()},
        "encoding": {"S": encoding},
    }
    return {"M": {"s3": {"M": reference}}}


#: Ways a stored state can be wrong: each must read as a CorruptJobError naming the job.
BAD_STATES: dict[str, Callable[[Moto], dict[str, Any]]] = {
    "garbage gzip": lambda moto: {"M": {"gzip": {"B": b"\x1f\x8b not really gzip"}}},
    "truncated gzip": lambda moto: {"M": {"gzip": {"B": gzip.compress(b'{"doc": "' + b"x" * 5000 + b'"}')[:40]}}},
    "gzip of non-utf8": lambda moto: gzipped(b"\xff\xfe\xfa not text"),
    "gzip of deep nesting": lambda moto: gzipped(DEEP.encode()),
    "gzip of a gzip bomb's truncation": lambda moto: {"M": {"gzip": {"B": gzip.compress(b"0" * 10**6)[:-8]}}},
    "json not json": lambda moto: {"M": {"json": {"S": "{not json"}}},
    "json deep nesting": lambda moto: {"M": {"json": {"S": DEEP}}},
    "json as a number": lambda moto: {"M": {"json": {"N": "12"}}},
    "unknown encoding": lambda moto: {"M": {"zstd": {"B": b"\x00"}}},
    "two encodings": lambda moto: {"M": {"json": {"S": "1"}, "gzip": {"B": b"\x00"}}},
    "a string": lambda moto: {"S": "state"},
    "s3 garbage with its own hash": lambda moto: in_s3(moto, b"garbage, hashed to match"),
    "s3 deep nesting with its own hash": lambda moto: in_s3(moto, DEEP.encode(), encoding="json"),
    "s3 truncated gzip with its own hash": lambda moto: in_s3(moto, gzip.compress(b"[1, 2, 3]" * 100)[:30]),
    "s3 wrong hash": lambda moto: in_s3(moto, gzip.compress(b"[1]"), sha256="0" * 64),
    "s3 reference without a hash": lambda moto: {"M": {"s3": {"M": {"bucket": {"S": "b"}, "key": {"S": "k"}}}}},
    "s3 reference as a list": lambda moto: {"M": {"s3": {"L": [{"S": "b"}]}}},
}


def test_a_corrupt_state_is_a_corrupt_job_error_naming_the_job(moto: Moto, clock: FakeClock) -> None:
    cases = sorted(BAD_STATES)
    bad = [f"bad-{number}" for number in range(len(cases))]
    storage = started(moto, clock, "good", *bad)
    for job_id, case in zip(bad, cases, strict=True):
        set_attribute(moto, job_id, "checkpoint.state", BAD_STATES[case](moto))

    for job_id, case in zip(bad, cases, strict=True):
        assert job_pk(OWNER, job_id) in str(read_error(storage, job_id, case)), case
    assert [job.job_id for job in storage.list_jobs()] == ["good"]
    listed = storage.list_page().jobs  # listings read no state: every job shows
    assert sorted(summary.job_id for summary in listed) == sorted(["good", *bad])
    assert not any(summary.corrupt for summary in listed)


#: Job items with attributes of the wrong type, or missing: the item itself is unreadable.
BAD_ATTRIBUTES: dict[str, tuple[str, dict[str, Any] | None]] = {
    "status unknown": ("status", {"S": "zombie"}),
    "status a number": ("status", {"N": "3"}),
    "attempt a string": ("attempt", {"S": "one"}),
    "attempt a float": ("attempt", {"N": "1.5"}),
    "createdAt a string": ("updatedAt", {"S": "yesterday"}),
    "expiresAt a string": ("expiresAt", {"S": "soon"}),
    "expiresAt enormous": ("expiresAt", {"N": "1E+30"}),
    "expiresAt fractional": ("expiresAt", {"N": "99999999999.5"}),
    "jobId a list": ("jobId", {"L": [{"S": "bad"}]}),
    "pipeline a map": ("pipeline", {"M": {}}),
    "error a number": ("error", {"N": "7"}),
    "usage deep nesting": ("usage", {"S": DEEP}),
    "usage not json": ("usage", {"S": "{"}),
    "usage a list": ("usage", {"S": "[1, 2]"}),
    "checkpoint a string": ("checkpoint", {"S": "checkpoint"}),
    "checkpoint without nextPhase": (
        "checkpoint",
        {"M": {"createdAt": {"N": "1"}, "state": {"M": {"json": {"S": "1"}}}}},
    ),
    "jobId missing": ("jobId", None),
    "status missing": ("status", None),
    "sequence missing": ("sequence", None),
    "updatedAt missing": ("updatedAt", None),
}


#: What only a listing reads (reading the job does not): the status-time fields its index projects.
LISTED_ONLY: dict[str, tuple[str, dict[str, Any] | None]] = {
    "statusAt a string": ("statusAt", {"S": "yesterday"}),
    "statusExpiresAt enormous": ("statusExpiresAt", {"N": "1E+30"}),
    "statusExpiresAt a string": ("statusExpiresAt", {"S": "soon"}),
}

#: The attributes a listing reads (those its index projects): a bad one shows as a corrupt summary.
SUMMARY_FIELDS = {"status", "pipeline", "error", "statusAt", "statusExpiresAt"}


def test_a_job_item_of_the_wrong_shape_is_named_and_listed_as_corrupt(
    moto: Moto, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    shapes = BAD_ATTRIBUTES | LISTED_ONLY
    cases = sorted(shapes)
    bad = {f"bad-{number:02}": case for number, case in enumerate(cases)}
    storage = started(moto, clock, "good", *bad, "newer")
    for job_id, case in bad.items():
        name, value = shapes[case]
        if value is None:
            remove_attribute(moto, job_id, name)
        else:
            set_attribute(moto, job_id, name, value)

    for job_id, case in bad.items():
        if case not in LISTED_ONLY:
            assert job_pk(OWNER, job_id) in str(read_error(storage, job_id, case)), case
    assert [job.job_id for job in storage.list_jobs()] == ["newer", "good"]
    with caplog.at_level(logging.WARNING, logger="cairn.aws.dynamodb"):
        page = storage.list_page(limit=100)
    assert [summary.job_id for summary in page.jobs] == ["newer", *sorted(bad, reverse=True), "good"]
    corrupt = {summary.job_id: summary for summary in page.jobs if summary.corrupt}
    assert {bad[job_id] for job_id in corrupt} == {case for case in cases if shapes[case][0] in SUMMARY_FIELDS}
    for job_id, summary in corrupt.items():
        assert summary.error is not None
        assert summary.error.startswith("unreadable: ")
        assert job_pk(OWNER, job_id) in caplog.text
    running = storage.list_page(status=JobStatus.RUNNING, limit=100).jobs
    assert {summary.job_id for summary in running} >= {"newer", "good"}


def test_a_corrupt_input_or_history_item_is_named(moto: Moto, clock: FakeClock) -> None:
    storage = started(moto, clock, "good", "bad", "worse")
    job = storage.get_job("bad")
    assert job is not None
    assert job.input_token is not None
    assert job.history_head is not None
    moto.dynamodb.update_item(
        TableName=moto.table,
        Key=job_key("bad", input_sk(job.input_token)),
        UpdateExpression="SET #i = :v",
        ExpressionAttributeNames={"#i": "input"},
        ExpressionAttributeValues={":v": {"M": {"gzip": {"B": b"garbage"}}}},
    )
    worse = storage.get_job("worse")
    assert worse is not None
    assert worse.history_head is not None
    moto.dynamodb.update_item(
        TableName=moto.table,
        Key=job_key("worse", history_sk(worse.run, worse.sequence, worse.history_head)),  # the start's own item
        UpdateExpression="SET #h = :v",
        ExpressionAttributeNames={"#h": "history"},
        ExpressionAttributeValues={":v": {"S": DEEP}},
    )
    record_figure("corrupt_records", tried=2)

    for job_id in ("bad", "worse"):
        with pytest.raises(CorruptJobError, match=job_pk(OWNER, job_id)):
            storage.get_job(job_id)
        with pytest.raises(CorruptJobError, match=job_pk(OWNER, job_id)):
            storage.get_job_view(job_id)  # the view reads the same items: it names them too
    assert [job.job_id for job in storage.list_jobs()] == ["good"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_damage_to_a_stored_gzip_value_reads_as_corrupt_or_as_the_value(
    moto: Moto, clock: FakeClock, data: st.DataObject
) -> None:
    storage = DynamoDBStorage(moto.table, owner=OWNER, client=moto.dynamodb, clock=clock)
    if storage.get_route("fuzzed") is None:  # the first example starts the job; the others damage it again
        run_pipeline(
            "fuzzed",
            two_phase_pipeline("two"),
            storage=storage,
            scheduler=make_scheduler(two_phase_pipeline("two"), storage, clock),
            initial_state={"words": ["cairn"] * 200},
        )
    written = {"words": ["cairn", "stone"] * 20}
    packed = bytearray(gzip.compress(json.dumps(written).encode(), mtime=0))
    damage = data.draw(st.sampled_from(["flip", "unseen flip", "cut", "random"]))
    if damage == "flip":
        bit = data.draw(st.integers(0, len(packed) * 8 - 1))
        packed[bit // 8] ^= 1 << (bit % 8)
    elif damage == "unseen flip":  # the header's time, extra flags and OS bytes: gzip reads none of them
        bit = data.draw(st.integers(GZIP_UNREAD_HEADER.start * 8, GZIP_UNREAD_HEADER.stop * 8 - 1))
        packed[bit // 8] ^= 1 << (bit % 8)
    elif damage == "cut":
        packed = packed[: data.draw(st.integers(1, len(packed) - 1))]
    else:
        packed = bytearray(data.draw(st.binary(min_size=1, max_size=300)))
    set_attribute(moto, "fuzzed", "checkpoint.state", {"M": {"gzip": {"B": bytes(packed)}}})

    job: Job | None = None
    error: str | None = None
    try:
        job = storage.get_job("fuzzed")  # a flip gzip cannot see (in its header's name or time fields) changes nothing
    except CorruptJobError as exc:
        error = str(exc)
    if error is not None:
        assert damage != "unseen flip", error
        assert job_pk(OWNER, "fuzzed") in error
    else:  # read: then as the value written, never another one
        assert job is not None
        assert job.checkpoint is not None
        assert job.checkpoint.state == written


def test_the_sweep_skips_an_unreadable_job_and_revives_the_others(
    moto: Moto, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    storage = started(moto, clock, "stalled-1", "bad", "stalled-2")
    set_attribute(moto, "bad", "updatedAt", {"S": "not a time"})
    clock.advance(600)

    with caplog.at_level(logging.WARNING, logger="cairn.aws.dynamodb"):
        found = storage.stalled_jobs(idle_seconds=60)

    assert sorted(job.job_id for job in found) == ["stalled-1", "stalled-2"]
    assert job_pk(OWNER, "bad") in caplog.text


def test_the_api_lists_an_unreadable_job_as_corrupt_beside_the_others(
    api: Api, stack: LocalStack, stack_clock: FakeClock
) -> None:
    for job_id in ("job-a", "job-b", "job-c"):
        stack_clock.advance(1)
        api.create(job_id)
    table, client = stack.runtime.settings.table_name, stack.runtime.dynamodb
    assert table is not None
    assert client is not None
    [key] = [
        {"pk": item["pk"], "sk": item["sk"]}
        for item in client.scan(TableName=table)["Items"]
        if item["sk"]["S"] == "JOB" and item["jobId"]["S"] == "job-b"
    ]
    client.update_item(
        TableName=table,
        Key=key,
        UpdateExpression="SET #s = :v",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":v": {"N": "42"}},
    )
    record_figure("corrupt_records", tried=1)

    reply = api.call("list-jobs")

    assert reply.status == 200, reply.body
    jobs = {job["jobId"]: job for job in reply.body["jobs"]}
    assert sorted(jobs) == ["job-a", "job-b", "job-c"]
    assert jobs["job-b"]["corrupt"] is True
    assert jobs["job-b"]["error"].startswith("unreadable: ")
    assert not jobs["job-a"]["corrupt"]
    assert not jobs["job-c"]["corrupt"]
