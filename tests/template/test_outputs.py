"""The stack's outputs give a first-time user what the first call needs: the API's URL and the ARN to allow."""

from __future__ import annotations

from fnmatch import fnmatchcase

import pytest

from tests.template.cfn import ACCOUNT, PARTITION, REGION
from tests.template.stacks import stack


@pytest.mark.parametrize("auth", ["IAM", "JWT"])
def test_the_invoke_arn_covers_every_route_of_this_api_and_no_other(auth: str) -> None:
    overrides = {"ApiAuth": auth} if auth == "IAM" else {"ApiAuth": auth, "JwtIssuer": "https://i", "JwtAudience": "a"}
    resolver = stack(**overrides)
    outputs = resolver.template["Outputs"]
    invoke_arn = resolver.resolve(outputs["ApiInvokeArn"]["Value"])
    api = resolver.ref("HttpApi")
    url = resolver.resolve(outputs["ApiUrl"]["Value"])
    assert url.startswith(f"https://{api}.execute-api.{REGION}.")

    for method, path in (("POST", "jobs"), ("GET", "jobs/job-1"), ("POST", "jobs/job-1/signals/approval")):
        route = f"arn:{PARTITION}:execute-api:{REGION}:{ACCOUNT}:{api}/$default/{method}/{path}"
        assert fnmatchcase(route, invoke_arn), route
    other_api = f"arn:{PARTITION}:execute-api:{REGION}:{ACCOUNT}:other00000/$default/POST/jobs"
    assert not fnmatchcase(other_api, invoke_arn)
    assert "execute-api:Invoke" in outputs["ApiInvokeArn"]["Description"]
