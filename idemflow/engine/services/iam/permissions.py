"""Who may do what in a deployed stack: each role of the template, as ``sam deploy`` creates it, and its decisions.

The roles are read with :func:`~idemflow.template.roles.template_roles` (the SAM transform, then the template's
resolver), so a policy template, an implicit role and ``Globals`` expand as on deploy. Each resource that runs
under a role (a function, a state machine, a pipe, a rule's target, an API method's ``Credentials``) is found by
the role's ``assumed_by``; a call it makes is decided by :class:`~idemflow.engine.services.iam.evaluation.Evaluator`.

A role the template does not create (an ARN given as a parameter, say) has policies the engine cannot know: calls
under it are not decided (:meth:`Permissions.decide` answers None), and :meth:`Permissions.unknown_roles` names it.

The session a denial names is AWS's: a function's execution role is assumed with the function's name as the
session name (as the records of Lambda denials show: ``assumed-role/<role>/<function name>``), a state machine's
role with a 32-letter session name of Step Functions' making (the record in aws-deployment-framework issue 460:
``assumed-role/<role>/GGzJDbzYyvarbIioekwoULLKpGuSfJRc``); here a fixed one per role, derived from its name.

Each role has an access key of its own (``ASIA...``, the prefix of temporary credentials): a function's worker
signs its SDK calls with its role's key, and the engine's endpoint decides them under that role. Any other key
(the ``local`` key ``idemflow serve`` prints, a test's) is the account's own user, whom nothing restricts.
"""

from __future__ import annotations

import hashlib
import string
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from idemflow.engine.services.iam.evaluation import Decision, Evaluator
from idemflow.template.roles import Role

MAX_DECISIONS = 65_536
"""A bound on the decisions kept (a call names its resource: a function's calls to many tables, say)."""


def _letters(seed: str, length: int) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    alphabet = string.ascii_letters
    return "".join(alphabet[b % len(alphabet)] for b in (digest * 2)[:length])


def access_key_id(role_arn: str, session: str) -> str:
    """The access key id of a session of a role: ``ASIA`` and 16 upper-case letters and digits, as AWS's temporary
    credentials look; a function's worker signs with it."""
    digest = hashlib.sha256(f"{role_arn}/{session}".encode()).hexdigest().upper()
    return f"ASIA{digest[:16]}"


@dataclass
class Permissions:
    """The roles of a deployed stack, by the resources that run under them."""

    roles: Mapping[str, Role] = field(default_factory=dict)
    """Every role the stack creates, by ``<path>.<LogicalId>`` (a role of the template itself by its logical id)."""

    def __post_init__(self) -> None:
        self._by_resource: dict[tuple[str, str], Role] = {}
        self._by_arn: dict[str, Role] = {}
        for role in self.roles.values():
            self._by_arn[role.arn] = role
            for logical_id in role.assumed_by:
                self._by_resource[(role.path, logical_id)] = role
        self._by_key: dict[str, tuple[str, str]] = {}
        self._evaluators: dict[tuple[str, str], Evaluator] = {}
        self._sessions: dict[str, str] = {}
        self._decided: dict[tuple[str, str, str, str | None], Decision] = {}
        """Decisions without condition keys or a resource policy, the calls tasks and functions make: a decision is
        a function of the role's documents, fixed for this object's life, and of the call."""
        self._services: dict[str, Evaluator] = {}
        self._lock = threading.Lock()
        self.unknown_roles: set[str] = set()
        """Role ARNs that resources run under but the stack does not create: their calls are not decided."""

    def decide_service(
        self, principal: str, action: str, resource: str, resource_policy: Mapping[str, Any] | None, **keys: str
    ) -> Decision:
        """Whether the service ``principal`` (``sns.amazonaws.com``) may perform ``action`` on ``resource``, whose own
        policy is ``resource_policy`` (None: it has none), with the request's condition keys (``aws:SourceArn``...).
        Decisions are cached per principal, by the call, its keys and the policy's text."""
        evaluator = self._services.get(principal)
        if evaluator is None:
            with self._lock:
                evaluator = self._services.setdefault(principal, Evaluator(principal, [], service=True))
        return evaluator.decide(action, resource, keys, resource_policy if resource_policy is not None else {})

    def role_of(self, path: str, logical_id: str) -> Role | None:
        """The role a resource of the stack at ``path`` (``""`` for the template itself) runs under, if the stack
        creates it."""
        return self._by_resource.get((path, logical_id))

    def issue_key(self, role_arn: str, session: str) -> str:
        """The access key of a session of ``role_arn`` named ``session`` (a function's name)."""
        key = access_key_id(role_arn, session)
        self._by_key[key] = (role_arn, session)
        return key

    def role_for_key(self, access_key: str) -> tuple[str, str] | None:
        """The role and session name that sign with ``access_key``, None for any other key."""
        return self._by_key.get(access_key)

    def knows(self, role_arn: str) -> bool:
        return role_arn in self._by_arn

    def decide(
        self,
        role_arn: str,
        action: str,
        resource: str,
        *,
        session: str | None = None,
        context: Mapping[str, str] | None = None,
        resource_policy: Mapping[str, Any] | None = None,
    ) -> Decision | None:
        """Whether a session of ``role_arn`` may perform ``action`` on ``resource``; None when the stack does not
        create that role (its policies are unknown here). ``session``: the session's name (default: a state
        machine's, 32 letters)."""
        plain = context is None and resource_policy is None
        if plain:
            known = self._decided.get((role_arn, action, resource, session))
            if known is not None:
                return known
        role = self._by_arn.get(role_arn)
        if role is None:
            if role_arn:
                self.unknown_roles.add(role_arn)
            return None
        name = session if session is not None else self._sessions.setdefault(role_arn, _letters(role_arn, 32))
        evaluator = self._evaluators.get((role_arn, name))
        if evaluator is None:
            with self._lock:
                evaluator = self._evaluators.get((role_arn, name))
                if evaluator is None:
                    documents = [(policy.name, policy.document) for policy in role.policies]
                    evaluator = self._evaluators[(role_arn, name)] = Evaluator(role_arn, documents, session=name)
        decision = evaluator.decide(action, resource, context, resource_policy)
        if plain and len(self._decided) < MAX_DECISIONS:
            self._decided[(role_arn, action, resource, session)] = decision
        return decision
