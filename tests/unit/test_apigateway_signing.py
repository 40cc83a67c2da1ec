"""The SigV4 check of an AWS_IAM method (idemflow/engine/services/apigateway/signing.py) against requests signed by
idemflow.client.sign_http_request, i.e. botocore's SigV4Auth, the signer of the AWS SDK for Python: a request
verifies as signed, and any change to what the signature covers (body, a signed header, the path, the query,
the secret, the region or service of the credential scope) does not."""

from __future__ import annotations

import urllib.parse
import urllib.request
from typing import Any

import pytest

from idemflow.client import sign_http_request
from idemflow.engine.services.apigateway import signing

URL = "http://127.0.0.1:8083/restapis/abc/v1/_user_request_/requests?x=1"
BODY = b'{"a": 1}'


def signed_request(**changes: Any) -> dict[str, Any]:
    request = urllib.request.Request(
        URL, data=BODY, headers={"Content-Type": "application/json", "Idempotency-Key": "k"}, method="POST"
    )
    sign_http_request(request, region="us-east-1", access_key="local", secret_key="local")
    parts = urllib.parse.urlsplit(URL)
    headers = {k.title(): v for k, v in request.header_items()}
    headers["Host"] = parts.netloc
    sent = {
        "method": "POST",
        "path": parts.path,
        "query": urllib.parse.parse_qs(parts.query),
        "headers": headers,
        "body": BODY,
        "region": "us-east-1",
    }
    return {**sent, **changes}


def verified(secret: str = "local", **changes: Any) -> bool:
    sent = signed_request(**changes)
    found = signing.read(sent["headers"]["Authorization"])
    assert found is not None and found.access_key == "local" and found.service == "execute-api"
    return signing.verify(found, secret, **sent)


def test_a_request_verifies_as_botocore_signed_it() -> None:
    assert verified()


@pytest.mark.parametrize(
    "changes",
    [
        {"body": b'{"a": 2}'},
        {"path": "/restapis/abc/v1/_user_request_/requests/other"},
        {"query": {"x": ["2"]}},
        {"method": "PUT"},
        {"region": "eu-west-1"},
    ],
    ids=["body", "path", "query", "method", "another region"],
)
def test_a_change_to_what_the_signature_covers_fails_it(changes: dict[str, Any]) -> None:
    assert not verified(**changes)


def test_a_wrong_secret_or_a_changed_signed_header_fails_and_an_unsigned_header_does_not() -> None:
    assert not verified(secret="other")
    headers = signed_request()["headers"]
    # sign_http_request signs every header it is given (the key's among them): each is in SignedHeaders
    assert "idempotency-key" in headers["Authorization"]
    assert not verified(headers={**headers, "Content-Type": "text/plain"})
    assert not verified(headers={**headers, "Idempotency-Key": "other"})
    assert verified(headers={**headers, "User-Agent": "another client"})  # a header not signed is not covered


def test_no_or_another_authorization_is_not_signed() -> None:
    assert signing.read(None) is None
    assert signing.read("Bearer abc") is None
