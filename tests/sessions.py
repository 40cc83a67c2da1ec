"""One boto3 session, and one client per service and settings, for the tests' calls to in-process moto (inside
``mock_aws``).

moto's ``mock_aws`` drops boto3's default session each time it starts (so that no credentials of an earlier
mock are kept), and ``boto3.client`` then makes a new one: it registers botocore's few hundred handlers again
and its loader parses botocore's endpoints and each service's model again. A session of the tests' own keeps
them; the credentials it keeps are the first it finds, moto's fake ones, the same in every mock.

A client is kept too: making one copies the session's handlers and builds its endpoint rules again, and what
a test asks of it reaches whichever mock is running (moto's stubber is one of botocore's own handlers,
switched on and off by ``mock_aws``), so nothing of one test's moto reaches the next through it. A handler a
test registers on a kept client it unregisters itself, as ``raw_bodies`` does; settings other than a region
(a ``Config``) make a client of their own, kept under that object.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3


@cache
def session() -> boto3.session.Session:
    return boto3.session.Session()


def client(service: str, **kwargs: Any) -> Any:
    """``boto3.client(service, **kwargs)``, from the tests' session, made once per service and settings."""
    return _client(service, tuple(sorted(kwargs.items())))


@cache
def _client(service: str, settings: tuple[tuple[str, Any], ...]) -> Any:
    return session().client(service, **dict(settings))  # type: ignore[call-overload]
