"""Who may call an API method whose authorization is ``AWS_IAM``: IAM users of the account, each with an access key.

The engine knows three kinds of callers. The account's own user, ``arn:aws:iam::<account>:user/local``, signs
with the ``local`` key (secret ``local``) that ``idemflow serve`` prints and every client of the engine uses: like
an administrator of the account, nothing restricts it. A test or a user declares others with
:meth:`~idemflow.engine.services.iam.service.Iam.add_caller`, each with its identity policy, decided by
:class:`~idemflow.engine.services.iam.evaluation.Evaluator` as AWS decides an IAM user's request. A function's
worker signs with its role's session key (secret ``local``, :meth:`~idemflow.engine.services.iam.service.Iam
.caller`): it calls as ``arn:aws:sts::<account>:assumed-role/<role>/<function>``, under its role's policies.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from idemflow.engine.errors import PolicyError
from idemflow.engine.services.iam.evaluation import Decision, Evaluator

LOCAL_ACCESS_KEY = "local"
LOCAL_SECRET_KEY = "local"
LOCAL_USER = "local"
_NAME = re.compile(r"[\w+=,.@-]{1,64}")
"""An IAM user name ("IAM object quotas": 64 characters; "CreateUser": ``[\\w+=,.@-]+``)."""


@dataclass(frozen=True)
class Caller:
    arn: str
    """The user's ARN: ``$context.identity.userArn``, and the caller a denial names."""
    access_key: str
    secret_key: str
    decider: Callable[[str, str], Decision | None] | None
    """Its decision on an action and a resource; None for the account's own user, whom nothing restricts."""

    def decide(self, action: str, resource: str) -> Decision | None:
        return None if self.decider is None else self.decider(action, resource)


class Callers:
    """The account's users that sign requests, by access key."""

    def __init__(self, account: str) -> None:
        self.account = account
        local = Caller(f"arn:aws:iam::{account}:user/{LOCAL_USER}", LOCAL_ACCESS_KEY, LOCAL_SECRET_KEY, None)
        self._by_key: dict[str, Caller] = {LOCAL_ACCESS_KEY: local}
        self._lock = threading.Lock()

    def add(self, name: str, policy: Mapping[str, Any]) -> Caller:
        """A user named ``name`` whose identity policy is ``policy``, with a new access key (``AKIA...``, the prefix of
        a user's long-term keys) and its secret."""
        if not _NAME.fullmatch(name) or name == LOCAL_USER:
            raise PolicyError(f"{name!r} is not a user name a test may declare (1 to 64 of [\\w+=,.@-], not 'local')")
        arn = f"arn:aws:iam::{self.account}:user/{name}"
        digest = hashlib.sha256(arn.encode()).hexdigest()
        key = f"AKIA{digest[:16].upper()}"
        secret = hashlib.sha256(f"{arn}#secret".encode()).hexdigest()[:40]
        caller = Caller(arn, key, secret, Evaluator(arn, [(f"{name}-policy", policy)], user=True).decide)
        with self._lock:
            self._by_key[key] = caller
        return caller

    def of(self, access_key: str) -> Caller | None:
        return self._by_key.get(access_key)
