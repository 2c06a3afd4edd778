"""The events API Gateway's HTTP API (payload format 2.0) sends the API function, built from a request.

One home for the event's shape: ``cairn dev`` turns each real HTTP request into one, and tests
build them to call the API function as a signed-in caller would. The caller is IAM (``iam_caller``,
what a SigV4-signed request gets) or JWT (``jwt_caller``), or nobody for a public route.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode

LOCAL_ACCOUNT = "123456789012"
"""The account of local callers and resources (moto's default)."""

LOCAL_IDENTITY = f"arn:aws:iam::{LOCAL_ACCOUNT}:user/local"
"""The caller ``cairn dev`` acts as unless told otherwise."""

API_ID = "local"


def iam_caller(user_arn: str) -> dict[str, Any]:
    """The authorizer context of a SigV4-signed request by the principal ``user_arn``."""
    account = user_arn.split(":")[4] if user_arn.count(":") >= 5 else LOCAL_ACCOUNT
    user_id = "AIDA" + uuid.uuid5(uuid.NAMESPACE_URL, user_arn).hex[:17].upper()
    return {
        "iam": {
            "accessKey": "AKIALOCALDEVELOPMENT",
            "accountId": account,
            "callerId": user_id,
            "cognitoIdentity": None,
            "principalOrgId": None,
            "userArn": user_arn,
            "userId": user_id,
        }
    }


def jwt_caller(subject: str, issuer: str | None = None, **claims: Any) -> dict[str, Any]:
    """The authorizer context of a request with a JWT for ``subject`` (from ``issuer``) that the authorizer accepted."""
    all_claims: dict[str, Any] = {"sub": subject, **claims}
    if issuer is not None:
        all_claims["iss"] = issuer
    return {"jwt": {"claims": all_claims, "scopes": None}}


def http_api_event(
    method: str,
    path: str,
    *,
    query: str | Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    body: bytes | str | None = None,
    caller: Mapping[str, Any] | None = None,
    route_key: str = "$default",
    path_parameters: Mapping[str, str] | None = None,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """The event API Gateway sends for one request; ``caller`` is an authorizer context (None: public route).

    A body that is not UTF-8 text is sent base64-encoded, as API Gateway sends it. Header names are
    lower-cased; repeated query parameters are joined with commas, as in the real event.
    """
    raw_query = query if isinstance(query, str) else urlencode(dict(query or {}))
    lowered = {name.lower(): value for name, value in (headers or {}).items()}
    now = time.time()
    request_id = base64.b64encode(uuid.uuid4().bytes[:10]).decode()
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": lowered,
        "requestContext": {
            "accountId": LOCAL_ACCOUNT,
            "apiId": API_ID,
            "domainName": lowered.get("host", "127.0.0.1"),
            "domainPrefix": API_ID,
            "http": {
                "method": method.upper(),
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": request_id,
            "routeKey": route_key,
            "stage": "$default",
            "time": datetime.fromtimestamp(now, UTC).strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": False,
    }
    if caller is not None:
        event["requestContext"]["authorizer"] = dict(caller)
    pairs = parse_qsl(raw_query, keep_blank_values=True)
    if pairs:
        joined: dict[str, str] = {}
        for key, value in pairs:
            joined[key] = f"{joined[key]},{value}" if key in joined else value
        event["queryStringParameters"] = joined
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    if body:
        data = body.encode() if isinstance(body, str) else body
        try:
            event["body"] = data.decode("utf-8")
        except UnicodeDecodeError:
            event["body"], event["isBase64Encoded"] = base64.b64encode(data).decode(), True
    return event


def response_body(response: Mapping[str, Any]) -> bytes:
    """The bytes of an API function's response body (decoded when it is base64)."""
    body = str(response.get("body") or "")
    return base64.b64decode(body) if response.get("isBase64Encoded") else body.encode()
