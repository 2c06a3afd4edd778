"""Every principal a real caller uses is a valid owner, and the owner is the principal, not its session."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from cairn.aws.api_auth import owner_key, principal_key
from cairn.core.ids import validate_owner
from tests.events import load_event
from tests.functional.api_client import JOB, Api, Reply, for_job, with_body

ACCOUNT = "123456789012"
SSO_ROLE = "AWSReservedSSO_AdministratorAccess_0123456789abcdef"
SSO_SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/{SSO_ROLE}/some.person@example.com"
DEPLOYER = f"arn:aws:sts::{ACCOUNT}:assumed-role/deployer"
LONG_SESSION = "a-very-long-session-name.for-a.person@subdomain.example-corporation.com"


def iam_event(name: str, user_arn: str, user_id: str | None = None) -> dict[str, Any]:
    """Sample event ``api/<name>`` as signed by the IAM principal ``user_arn``."""
    event = load_event(f"api/{name}")
    iam = event["requestContext"]["authorizer"]["iam"]
    session = user_arn.rsplit("/", 1)[-1]
    iam.update(userArn=user_arn, userId=user_id or f"AROAEXAMPLEROLEID0001:{session}")
    return event


def create(api: Api, user_arn: str, job_id: str = JOB) -> Reply:
    body = {"pipeline": "document-intake", "jobId": job_id, "state": {"document": "invoice.txt"}}
    return api.send(with_body(iam_event("create-job", user_arn), body))


def get(api: Api, user_arn: str, job_id: str = JOB) -> Reply:
    return api.send(for_job(iam_event("get-job", user_arn), job_id))


def listed(api: Api, user_arn: str) -> list[str]:
    reply = api.send(iam_event("list-jobs", user_arn))
    assert reply.status == 200, reply.body
    return [job["jobId"] for job in reply.body["jobs"]]


def test_an_identity_center_user_with_an_email_session_over_128_characters_owns_its_jobs(api: Api) -> None:
    caller = f"{SSO_SESSION[: -len('some.person@example.com')]}{LONG_SESSION}"
    assert len(caller) > 128

    assert create(api, caller).status == 202
    api.run()

    reply = get(api, caller)
    assert (reply.status, reply.body["status"]) == (200, "complete")
    assert api.stored(owner=f"arn:aws:iam::{ACCOUNT}:role/{SSO_ROLE}").status.value == "complete"


def test_two_sessions_of_one_role_see_the_same_jobs(api: Api) -> None:
    assert create(api, f"{DEPLOYER}/ci-run-4711").status == 202

    assert get(api, f"{DEPLOYER}/ci-run-4712").status == 200
    assert listed(api, f"{DEPLOYER}/ecs-task-0f1e2d3c4b5a") == [JOB]


def test_another_role_neither_sees_nor_lists_the_job(api: Api) -> None:
    assert create(api, f"{DEPLOYER}/ci-run-4711").status == 202

    other = f"arn:aws:sts::{ACCOUNT}:assumed-role/deployer-prod/ci-run-4711"
    assert get(api, other).status == 404
    assert listed(api, other) == []
    same_role_other_account = "arn:aws:sts::210987654321:assumed-role/deployer/ci-run-4711"
    assert get(api, same_role_other_account).status == 404


@pytest.mark.parametrize("session", ["alice,bob", "team=data", "some.person@example.com", "a,b=c@d"])
def test_session_names_with_commas_equals_and_at_signs_are_callers_like_any_other(api: Api, session: str) -> None:
    assert create(api, f"{DEPLOYER}/{session}").status == 202
    assert get(api, f"{DEPLOYER}/another-session").status == 200


def test_a_role_name_the_owner_rule_refuses_is_hashed_and_still_kept_apart(api: Api) -> None:
    with_comma = f"arn:aws:sts::{ACCOUNT}:assumed-role/ops,admin/session"
    assert create(api, with_comma).status == 202

    assert get(api, f"arn:aws:sts::{ACCOUNT}:assumed-role/ops,admin/other").status == 200
    assert get(api, f"arn:aws:sts::{ACCOUNT}:assumed-role/ops_admin/session").status == 404


def test_an_iam_user_with_a_long_path_is_an_owner_and_distinct_from_a_user_sharing_its_prefix(api: Api) -> None:
    path = "/".join(["division", "department", "team", "project"] * 5)
    alice, alicia = (f"arn:aws:iam::{ACCOUNT}:user/{path}/{name}" for name in ("alice", "alicia"))
    assert len(alice) > 128

    assert create(api, alice).status == 202
    assert get(api, alice).status == 200
    assert get(api, alicia).status == 404


def test_a_jwt_owner_is_its_issuer_and_subject(api: Api) -> None:
    event = load_event("api/create-job-jwt")
    claims = event["requestContext"]["authorizer"]["jwt"]["claims"]
    body = {"pipeline": "document-intake", "jobId": JOB, "state": {"document": "invoice.txt"}}
    assert api.send(with_body(event, body)).status == 202

    same_subject_other_issuer = for_job(load_event("api/get-job"), JOB)
    same_subject_other_issuer["requestContext"]["authorizer"] = {
        "jwt": {"claims": {**claims, "iss": "https://other-issuer.example.com"}, "scopes": []}
    }
    assert api.send(same_subject_other_issuer).status == 404
    assert api.stored(owner=f"{claims['iss']}|{claims['sub']}").job_id == JOB


def test_cognito_identities_sharing_a_role_are_different_owners(api: Api) -> None:
    pool_role = f"arn:aws:sts::{ACCOUNT}:assumed-role/Cognito_PoolAuth_Role/CognitoIdentityCredentials"

    def as_identity(event: dict[str, Any], identity: str) -> dict[str, Any]:
        event["requestContext"]["authorizer"]["iam"]["cognitoIdentity"] = {
            "amr": ["authenticated"],
            "identityId": identity,
            "identityPoolId": "us-east-1:11111111-2222-3333-4444-555555555555",
        }
        return event

    first, second = "us-east-1:aaaaaaaa-0000-0000-0000-000000000001", "us-east-1:aaaaaaaa-0000-0000-0000-000000000002"
    body = {"pipeline": "document-intake", "jobId": JOB, "state": {"document": "invoice.txt"}}
    assert api.send(with_body(as_identity(iam_event("create-job", pool_role), first), body)).status == 202

    assert api.send(for_job(as_identity(iam_event("get-job", pool_role), first), JOB)).status == 200
    assert api.send(for_job(as_identity(iam_event("get-job", pool_role), second), JOB)).status == 404


# -- the rule itself


@pytest.mark.parametrize(
    ("principal", "key"),
    [
        (SSO_SESSION, f"arn:aws:iam::{ACCOUNT}:role/{SSO_ROLE}"),
        (f"arn:aws-us-gov:sts::{ACCOUNT}:assumed-role/r/s", f"arn:aws-us-gov:iam::{ACCOUNT}:role/r"),
        (f"arn:aws:iam::{ACCOUNT}:user/alice", f"arn:aws:iam::{ACCOUNT}:user/alice"),
        (f"arn:aws:iam::{ACCOUNT}:root", f"arn:aws:iam::{ACCOUNT}:root"),
        (f"arn:aws:sts::{ACCOUNT}:federated-user/bob", f"arn:aws:sts::{ACCOUNT}:federated-user/bob"),
    ],
)
def test_the_principal_of_an_arn_is_the_role_for_a_session_and_the_arn_otherwise(principal: str, key: str) -> None:
    assert principal_key(principal) == key


@pytest.mark.parametrize(
    "key",
    ["x" * 129, "ops,admin", "(leading)", "a" + "#" * 5, "é-accented", ",", "issuer|sha256:" + "0" * 64],
)
def test_a_key_the_owner_rule_refuses_becomes_a_valid_owner_named_by_its_digest(key: str) -> None:
    owner = owner_key(key)

    assert validate_owner(owner) == owner
    assert owner.endswith(f"|sha256:{hashlib.sha256(key.encode()).hexdigest()}")


def test_a_valid_key_is_kept_as_it_is() -> None:
    key = f"arn:aws:iam::{ACCOUNT}:role/{SSO_ROLE}"
    assert owner_key(key) == key
