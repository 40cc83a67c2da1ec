"""One boto3 session for the tests' clients of in-process moto (inside ``mock_aws``).

moto's ``mock_aws`` drops boto3's default session each time it starts (so that no credentials of an earlier
mock are kept), and ``boto3.client`` then makes a new one: it registers botocore's few hundred handlers again
and its loader parses botocore's endpoints and each service's model again. A session of the tests' own keeps
them; the credentials it keeps are the first it finds, moto's fake ones, the same in every mock. Clients are
still made per test, inside the test's mock.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3


@cache
def session() -> boto3.session.Session:
    return boto3.session.Session()


def client(service: str, **kwargs: Any) -> Any:
    """``boto3.client(service, **kwargs)``, from the tests' session."""
    return session().client(service, **kwargs)  # type: ignore[call-overload]
