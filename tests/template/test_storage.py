"""The checkpoint table is the one create_table builds; the bucket is private, TLS-only and outlives the TTL."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

import pytest

from cairn.aws.dynamodb import schema as dynamodb_schema
from cairn.core import ttl
from tests.template.cfn import Resolver, sam_template, sam_transform

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class _Waiter:
    def wait(self, **kwargs: Any) -> None:
        return None


class RecordingDynamoDB:
    """Records what ``create_table`` sends; answers like DynamoDB would."""

    def __init__(self) -> None:
        self.calls: dict[str, dict[str, Any]] = {}

    def create_table(self, **kwargs: Any) -> dict[str, Any]:
        self.calls["create_table"] = kwargs
        return {}

    def update_time_to_live(self, **kwargs: Any) -> dict[str, Any]:
        self.calls["update_time_to_live"] = kwargs
        return {}

    def get_waiter(self, name: str) -> _Waiter:
        assert name == "table_exists"
        return _Waiter()


def normalised(key: str, value: Any) -> Any:
    """Lists whose order DynamoDB ignores, sorted by name."""
    if key == "AttributeDefinitions":
        return sorted(value, key=lambda item: item["AttributeName"])
    if key == "GlobalSecondaryIndexes":
        return sorted(value, key=lambda item: item["IndexName"])
    return value


@pytest.fixture(scope="module")
def create_table_calls() -> dict[str, dict[str, Any]]:
    client = RecordingDynamoDB()
    dynamodb_schema.create_table(cast("DynamoDBClient", client), "jobs")
    return client.calls


@pytest.fixture(scope="module")
def table() -> dict[str, Any]:
    properties: dict[str, Any] = sam_template()["Resources"]["CheckpointTable"]["Properties"]
    return properties


def test_every_property_create_table_sends_is_in_the_template_unchanged(
    create_table_calls: dict[str, dict[str, Any]], table: dict[str, Any]
) -> None:
    sent = {key: value for key, value in create_table_calls["create_table"].items() if key != "TableName"}
    assert sent, "create_table sent nothing"
    for key, value in sent.items():
        assert normalised(key, table.get(key)) == normalised(key, value), key


def test_the_indexes_are_the_ones_the_storage_queries_and_project_what_only_a_status_change_writes(
    table: dict[str, Any],
) -> None:
    indexes = {index["IndexName"]: index for index in table["GlobalSecondaryIndexes"]}
    filters = dynamodb_schema.FILTER_INDEXES
    cost = dynamodb_schema.COST_LISTING_INDEX
    assert set(indexes) == {dynamodb_schema.LISTING_INDEX, dynamodb_schema.STALLED_INDEX, cost, *filters.values()}
    for index in indexes.values():
        keys = {part["AttributeName"] for part in index["KeySchema"]}
        assert keys <= {"owner", "sweepKey", "createdAt", "status", "pipeline", "listCost"}
    # A phase transition changes no index key and no projected attribute: it writes no index. The listing's
    # summary is projected: what a status change writes, never what every transition does.
    assert indexes[dynamodb_schema.STALLED_INDEX]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    listing = indexes[dynamodb_schema.LISTING_INDEX]["Projection"]
    assert listing == {"ProjectionType": "INCLUDE", "NonKeyAttributes": dynamodb_schema.LISTING_ATTRIBUTES}
    assert not {"updatedAt", "expiresAt", "nextPhase", "attempt", "sequence"} & set(listing["NonKeyAttributes"])
    # A filter's index holds the same entries keyed also on the filter's value (status or pipeline, which only a
    # status change or the start writes), with the rest of the listing's summary.
    for key, name in filters.items():
        assert [part["AttributeName"] for part in indexes[name]["KeySchema"]] == ["owner", key, "createdAt"]
        assert [part["KeyType"] for part in indexes[name]["KeySchema"]] == ["HASH", "HASH", "RANGE"]
        projected = indexes[name]["Projection"]["NonKeyAttributes"]
        assert sorted([key, *projected]) == sorted(dynamodb_schema.LISTING_ATTRIBUTES)
    # The cost order holds the same entries keyed on the cost at the last status change (which only a status
    # change or the start writes), with the creation time and the summary.
    assert [part["AttributeName"] for part in indexes[cost]["KeySchema"]] == ["owner", "listCost"]
    assert sorted(indexes[cost]["Projection"]["NonKeyAttributes"]) == sorted(
        ["createdAt", *listing["NonKeyAttributes"]]
    )


def test_the_table_has_the_ttl_create_table_turns_on(
    create_table_calls: dict[str, dict[str, Any]], table: dict[str, Any]
) -> None:
    ttl = create_table_calls["update_time_to_live"]["TimeToLiveSpecification"]
    assert ttl == {"Enabled": True, "AttributeName": dynamodb_schema.TTL_ATTRIBUTE}
    assert table["TimeToLiveSpecification"] == ttl


def test_the_table_has_the_only_extra_properties_a_deployment_adds(table: dict[str, Any]) -> None:
    extra = set(table) - {
        "BillingMode",
        "AttributeDefinitions",
        "KeySchema",
        "GlobalSecondaryIndexes",
        "TimeToLiveSpecification",
    }
    assert extra == {
        "PointInTimeRecoverySpecification",
        "SSESpecification",
        "DeletionProtectionEnabled",
        "StreamSpecification",
    }
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    # Both images: the scheduler's job counts move a job from its old status to its new one.
    assert table["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert table["SSESpecification"] == {  # the AWS owned key, or the deployer's (TableKmsKeyArn)
        "Fn::If": [
            "HasTableKey",
            {"SSEEnabled": True, "SSEType": "KMS", "KMSMasterKeyId": {"Ref": "TableKmsKeyArn"}},
            {"SSEEnabled": True},
        ]
    }
    assert "TableName" not in table, "a fixed name would stop two stacks sharing an account"


def test_the_table_and_bucket_survive_a_replacement_or_a_deleted_stack() -> None:
    resources = sam_template()["Resources"]
    for logical_id in ("CheckpointTable", "StateBucket"):
        assert resources[logical_id]["DeletionPolicy"] == "Retain"
        assert resources[logical_id]["UpdateReplacePolicy"] == "Retain"


def test_retention_covers_two_of_every_allowed_ttl_by_at_least_a_day() -> None:
    template = sam_template()
    allowed = template["Parameters"]["CheckpointTtlHours"]["AllowedValues"]
    mapping = template["Mappings"]["StateRetention"]
    assert set(mapping) == set(allowed)
    for hours in allowed:
        assert mapping[hours]["Days"] == ttl.retention_days(int(hours)) == math.ceil(2 * int(hours) / 24) + 1, hours


@pytest.mark.parametrize(("hours", "days"), [("24", 3), ("48", 5), ("168", 15)])
def test_the_bucket_expires_state_after_the_retention_of_the_ttl(hours: str, days: int) -> None:
    stack = Resolver(sam_transform(CheckpointTtlHours=hours), CheckpointTtlHours=hours)
    rules = {rule["Id"]: rule for rule in stack.properties("StateBucket")["LifecycleConfiguration"]["Rules"]}
    rule = rules["ExpireSpilledState"]
    assert rule["Status"] == "Enabled"
    assert rule["ExpirationInDays"] == days
    assert "Prefix" not in rule, "every object expires"
    assert "Filter" not in rule, "every object expires"
    # the bucket is versioned: what a deletion or an expiry leaves behind goes too
    assert rule["NoncurrentVersionExpiration"]["NoncurrentDays"] >= 1
    assert rules["RemoveExpiredDeleteMarkers"]["ExpiredObjectDeleteMarker"] is True


def test_the_bucket_is_private_and_encrypted() -> None:
    bucket = Resolver(sam_transform()).properties("StateBucket")
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert bucket["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    (encryption,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms", "aws:kms:dsse")


def test_the_bucket_refuses_requests_without_tls() -> None:
    stack = Resolver(sam_transform())
    bucket = stack.arn("StateBucket")
    policy = stack.properties("StateBucketPolicy")
    assert policy["Bucket"] == stack.name("StateBucket")
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Deny"
    assert statement["Principal"] == "*"
    assert statement["Action"] == "s3:*"
    assert sorted(statement["Resource"]) == [bucket, f"{bucket}/*"]
    assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
