"""A request's Signature Version 4, as API Gateway checks it for a method whose authorization is ``AWS_IAM``.

The signature is computed again with botocore's :class:`~botocore.auth.SigV4Auth` (the signer every AWS SDK for
Python uses) from the request's method, path, query, the headers its ``SignedHeaders`` names, the hash of its body,
its ``X-Amz-Date`` and the secret of its access key, and compared in constant time ("Create a signed AWS API
request", IAM User Guide; "Control access to a REST API with IAM permissions", API Gateway developer guide).

What a refused request is answered with ("How do I troubleshoot HTTP 403 errors from API Gateway?",
https://repost.aws/knowledge-center/api-gateway-troubleshoot-403-forbidden, and "How do I troubleshoot signature
mismatch errors when making SigV4 signed requests with IAM authentication to API Gateway?",
https://repost.aws/knowledge-center/api-gateway-iam-sigv4-mismatch):

- not signed: ``Missing Authentication Token`` (MISSING_AUTHENTICATION_TOKEN);
- an access key API Gateway does not know: ``The security token included in the request is invalid.`` with
  ``x-amzn-ErrorType: AccessDeniedException`` (the 403 page's row); the pages name no gateway response type for it,
  and this engine answers it as INVALID_SIGNATURE, the type of a credential it cannot verify;
- a signature that does not match: ``The request signature we calculated does not match the signature you
  provided. Check your AWS Secret Access Key and signing method.`` (INVALID_SIGNATURE).

A request signed in its query string (``X-Amz-Signature``) and a session token (``X-Amz-Security-Token``) are not
read here: such a request is answered as not signed.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlencode

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.compat import HTTPHeaders
from botocore.credentials import Credentials

SERVICE: Final = "execute-api"
MISSING: Final = "Missing Authentication Token"
UNKNOWN_KEY: Final = "The security token included in the request is invalid."
MISMATCH: Final = (
    "The request signature we calculated does not match the signature you provided. "
    "Check your AWS Secret Access Key and signing method."
)
_AUTHORIZATION: Final = re.compile(
    r"AWS4-HMAC-SHA256\s+Credential=(?P<key>[^/,\s]+)/(?P<date>\d{8})/(?P<region>[^/,\s]+)/(?P<service>[^/,\s]+)"
    r"/aws4_request\s*,\s*SignedHeaders=(?P<signed>[^,\s]+)\s*,\s*Signature=(?P<signature>[0-9a-f]{64})\s*"
)


@dataclass(frozen=True)
class Signed:
    """What a request's ``Authorization`` header says."""

    access_key: str
    date: str
    region: str
    service: str
    signed_headers: tuple[str, ...]
    signature: str


def read(authorization: str | None) -> Signed | None:
    """The request's SigV4 ``Authorization``, None when it has none (or one of another form)."""
    match = _AUTHORIZATION.fullmatch((authorization or "").strip())
    if match is None:
        return None
    signed = tuple(match["signed"].lower().split(";"))
    return Signed(match["key"], match["date"], match["region"], match["service"], signed, match["signature"])


class _Named(SigV4Auth):  # type: ignore[misc]
    """SigV4 over exactly the headers the request names in ``SignedHeaders``."""

    def __init__(self, credentials: Credentials, service: str, region: str, names: tuple[str, ...]) -> None:
        super().__init__(credentials, service, region)
        self._names = frozenset(names)

    def headers_to_sign(self, request: Any) -> HTTPHeaders:
        chosen = HTTPHeaders()
        for name, value in request.headers.items():
            if name.lower() in self._names:
                chosen[name.lower()] = value
        return chosen


def verify(
    signed: Signed,
    secret_key: str,
    *,
    method: str,
    path: str,
    query: Mapping[str, list[str]],
    headers: Mapping[str, str],
    body: bytes,
    region: str,
) -> bool:
    """Whether ``signed.signature`` is the signature of this request with ``secret_key``, for ``execute-api`` in
    ``region``."""
    if signed.service != SERVICE or signed.region != region or "host" not in signed.signed_headers:
        return False
    amz_date = next((v for k, v in headers.items() if k.lower() == "x-amz-date"), "")
    if not re.fullmatch(r"\d{8}T\d{6}Z", amz_date) or amz_date[:8] != signed.date:
        return False
    given_hash = next((v for k, v in headers.items() if k.lower() == "x-amz-content-sha256"), None)
    if given_hash is not None and given_hash != hashlib.sha256(body).hexdigest():
        return False
    host = next((v for k, v in headers.items() if k.lower() == "host"), "")
    pairs = [(k, v) for k, values in query.items() for v in values]
    url = f"http://{host}{path}" + (f"?{urlencode(pairs)}" if pairs else "")
    request = AWSRequest(method=method, url=url, headers=dict(headers), data=body)
    request.context["timestamp"] = amz_date
    auth = _Named(Credentials(signed.access_key, secret_key), SERVICE, region, signed.signed_headers)
    canonical = auth.canonical_request(request)
    expected = auth.signature(auth.string_to_sign(request, canonical), request)
    return hmac.compare_digest(expected, signed.signature)
