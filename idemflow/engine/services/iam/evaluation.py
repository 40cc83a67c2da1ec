"""Whether a role may make a call: AWS's policy evaluation logic, for a role's session within one account.

What AWS documents, and this module does (IAM User Guide):

- "Policy evaluation logic" and "Policy evaluation for requests within a single account"
  (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html,
  .../reference_policies_evaluation-logic_policy-eval-basics.html): every request starts implicitly denied; an
  explicit ``Deny`` in any applicable policy overrides any ``Allow``; within one account an ``Allow`` in either the
  identity-based policies or the resource-based policy suffices.
- "IAM JSON policy elements: Action" (.../reference_policies_elements_action.html): the service prefix and action
  name are case insensitive; ``*`` and ``?`` are wildcards; ``NotAction`` applies a statement to every action but
  those listed.
- "IAM JSON policy elements: Resource" and "NotResource" (.../reference_policies_elements_resource.html,
  .../reference_policies_elements_notresource.html): ARNs are matched case sensitively, ``*`` any run of
  characters and ``?`` any one; ``NotResource`` applies a statement to every resource but those listed. Here
  ``*`` matches across the ARN's colons (AWS lets a trailing ``*`` of a segment do so, and recommends wildcards
  within segments: a policy that relies on the difference is not one the templates hold).
- "IAM JSON policy elements: Condition operators" (.../reference_policies_elements_condition_operators.html):
  a statement applies only when every operator of its ``Condition`` holds, an operator holds when every key of it
  does, and a key when any of its values matches; a key absent from the request makes its operator false, but
  for ``...IfExists`` (true) and ``Null``. Operators decided: ``StringEquals``, ``StringNotEquals``,
  ``StringEqualsIgnoreCase``, ``StringNotEqualsIgnoreCase``, ``StringLike``, ``StringNotLike``, ``ArnEquals``,
  ``ArnLike``, ``ArnNotEquals``, ``ArnNotLike`` (an ARN compared segment by segment, the two forms alike),
  ``Bool``, ``Null``, each with ``IfExists``; condition key names are case insensitive. The templates' conditions
  are ``StringEquals`` on ``aws:SourceAccount`` (trust policies) and ``ArnEquals`` on ``aws:SourceArn`` (queue
  policies). Any other operator is a :class:`~idemflow.engine.errors.PolicyError`, never a guess.
- "Troubleshoot access denied error messages" (.../troubleshoot_access-denied.html): a denial reads ``User: <the
  caller's ARN> is not authorized to perform: <action> on resource: <ARN>``, then ``because no <type> policy allows
  the <action> action`` for an implicit deny, or ``with an explicit deny in a <type> policy`` for an explicit one
  (the example of .../troubleshoot_access-denied-authorization-id.html: ``... with an explicit deny in an
  identity-based policy``). A role's session is ``arn:aws:sts::<account>:assumed-role/<role name>/<session>``.

Why not moto's evaluator (``moto/iam/access_control.py``, ``IAMPolicy`` and ``IAMPolicyStatement``, moto 5.2.5),
read and tried (a unit test shows each): it matches actions case sensitively and knows no
``?``; a statement with ``NotResource`` has no ``Resource``, which it takes for a trust policy's, so it allows
every resource; an ``Allow`` whose condition fails is an explicit deny there, where AWS skips the statement; it
decides ``StringEquals`` only, takes any other operator as true, and a key absent from the request as matching.
Each is a wrong decision on a policy the templates hold or a user may write, so the rules above are written here,
small enough to read against the documentation, and moto's evaluator is not used.

Decisions are cached per evaluator (one per role): a decision is a function of the role's documents, which an
evaluator never changes, and of the call (action, resource, and the request's condition keys, part of the key).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from idemflow.engine.errors import PolicyError

IDENTITY_BASED = "identity-based"
RESOURCE_BASED = "resource-based"


@dataclass(frozen=True)
class Statement:
    """Where a statement is: its policy (a name, or a managed policy's ARN), its index there, its ``Sid``."""

    policy: str
    index: int
    sid: str | None
    effect: str
    kind: str
    """:data:`IDENTITY_BASED` or :data:`RESOURCE_BASED`."""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    action: str
    resource: str
    caller: str
    """The ARN AWS names in a denial: the role's session (``arn:aws:sts::...:assumed-role/<role>/<session>``)."""
    statement: Statement | None
    """The statement that decided: the explicit ``Deny``, or the first ``Allow``; None for an implicit deny."""
    needed: str = IDENTITY_BASED
    """The kind of policy whose Allow was missing, for an implicit deny: a service principal's calls are allowed by
    a resource-based policy only."""

    @property
    def explicit_deny(self) -> bool:
        return self.statement is not None and self.statement.effect == "Deny"

    @property
    def message(self) -> str:
        """AWS's AccessDenied message for this decision (empty when allowed)."""
        if self.allowed:
            return ""
        head = f"User: {self.caller} is not authorized to perform: {self.action} on resource: {self.resource}"
        if self.statement is not None:
            article = "an" if self.statement.kind == IDENTITY_BASED else "a"
            return f"{head} with an explicit deny in {article} {self.statement.kind} policy"
        return f"{head} because no {self.needed} policy allows the {self.action} action"


def session_arn(role_arn: str, session: str) -> str:
    """The ARN of a session of a role (``arn:aws:iam::<account>:role/<path/><name>``): the caller a denial names."""
    match = re.fullmatch(r"arn:(?P<partition>[^:]+):iam::(?P<account>\d{12}):role/(?:.*/)?(?P<name>[^/]+)", role_arn)
    if match is None:
        raise PolicyError(f"{role_arn!r} is not a role's ARN")
    return f"arn:{match['partition']}:sts::{match['account']}:assumed-role/{match['name']}/{session}"


def _listed(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


@functools.lru_cache(maxsize=4096)
def _wildcard(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    """``*`` any run of characters, ``?`` any one; everything else literal."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(body, re.DOTALL | (re.IGNORECASE if ignore_case else 0))


def _like(pattern: str, value: str, ignore_case: bool = False) -> bool:
    return _wildcard(pattern, ignore_case).fullmatch(value) is not None


def _arn_like(pattern: str, value: str) -> bool:
    # ArnEquals and ArnLike: "each of the six colon-delimited components of the ARN is checked separately".
    wanted, given = pattern.split(":", 5), value.split(":", 5)
    return len(wanted) == len(given) == 6 and all(_like(w, g) for w, g in zip(wanted, given, strict=True))


_MATCHERS: dict[str, tuple[Callable[[str, str], bool], bool]] = {
    "StringEquals": (lambda want, got: want == got, False),
    "StringNotEquals": (lambda want, got: want == got, True),
    "StringEqualsIgnoreCase": (lambda want, got: want.lower() == got.lower(), False),
    "StringNotEqualsIgnoreCase": (lambda want, got: want.lower() == got.lower(), True),
    "StringLike": (_like, False),
    "StringNotLike": (_like, True),
    "ArnEquals": (_arn_like, False),
    "ArnLike": (_arn_like, False),
    "ArnNotEquals": (_arn_like, True),
    "ArnNotLike": (_arn_like, True),
    "Bool": (lambda want, got: want.lower() == got.lower(), False),
}


def _condition_holds(operator: str, keys: Any, context: Mapping[str, str], where: str) -> bool:
    if not isinstance(keys, dict):
        raise PolicyError(f"{where}: {operator} takes a mapping of condition keys to values")
    if_exists = operator.endswith("IfExists")
    name = operator.removesuffix("IfExists")
    for key, values in keys.items():
        wanted = _listed(values)
        got = context.get(str(key).lower())
        if name == "Null":
            # "Null": true when the key is absent, false when present.
            if (got is None) != (wanted[0].lower() == "true"):
                return False
            continue
        if name not in _MATCHERS:
            raise PolicyError(f"{where}: the condition operator {operator} is not one the local engine decides")
        if got is None:
            if if_exists:
                continue
            return False
        match, negated = _MATCHERS[name]
        matched = any(match(want, got) for want in wanted)
        if matched == negated:
            return False
    return True


def _principal_matches(principal: Any, names: frozenset[str]) -> bool:
    if principal == "*":
        return True
    if not isinstance(principal, dict):
        return False
    for kind in ("AWS", "Service"):
        for value in _listed(principal.get(kind, [])):
            if value == "*" or value in names:
                return True
    return False


@dataclass(frozen=True)
class _Compiled:
    statement: Statement
    actions: tuple[str, ...]
    not_action: bool
    resources: tuple[str, ...]
    not_resource: bool
    condition: dict[str, Any]
    principal: Any


def _compile(document: Mapping[str, Any], policy: str, kind: str) -> list[_Compiled]:
    statements = document.get("Statement") or []
    compiled = []
    for i, raw in enumerate(statements if isinstance(statements, list) else [statements]):
        where = f"{policy}: Statement[{i}]"
        if not isinstance(raw, dict) or raw.get("Effect") not in ("Allow", "Deny"):
            raise PolicyError(f"{where}: a statement has an Effect of Allow or Deny")
        if ("Action" in raw) == ("NotAction" in raw) or ("Resource" in raw) == ("NotResource" in raw):
            raise PolicyError(f"{where}: a statement has Action or NotAction, and Resource or NotResource")
        compiled.append(
            _Compiled(
                Statement(policy, i, raw.get("Sid"), raw["Effect"], kind),
                tuple(_listed(raw.get("Action", raw.get("NotAction")))),
                "NotAction" in raw,
                tuple(_listed(raw.get("Resource", raw.get("NotResource")))),
                "NotResource" in raw,
                dict(raw.get("Condition") or {}),
                raw.get("Principal"),
            )
        )
    return compiled


def _applies(s: _Compiled, action: str, resource: str, context: Mapping[str, str]) -> bool:
    if any(_like(a, action, ignore_case=True) for a in s.actions) == s.not_action:
        return False
    if any(_like(r, resource) for r in s.resources) == s.not_resource:
        return False
    where = f"{s.statement.policy}: Statement[{s.statement.index}].Condition"
    return all(_condition_holds(op, keys, context, where) for op, keys in s.condition.items())


class Evaluator:
    """The decisions for one role's sessions: its identity-based policy documents, fixed for the evaluator's life."""

    def __init__(
        self,
        role_arn: str,
        documents: Iterable[tuple[str, Mapping[str, Any]]],
        session: str = "idemflow",
        *,
        user: bool = False,
        service: bool = False,
    ):
        """``user``: ``role_arn`` is an IAM user's ARN, the caller a denial names as it is. ``service``: it is a service
        principal's name (``sns.amazonaws.com``), which has no identity-based policy: only a resource's policy that
        names it (``"Principal": {"Service": ...}``, or ``"*"``) allows its calls."""
        self.role_arn = role_arn
        self.service = service
        if service:
            self.caller = role_arn
            self._names = frozenset({role_arn})
        else:
            self.caller = role_arn if user else session_arn(role_arn, session)
            account = role_arn.split(":")[4]
            self._names = frozenset({role_arn, self.caller, account, f"arn:aws:iam::{account}:root"})
        self._identity = [s for name, document in documents for s in _compile(document, name, IDENTITY_BASED)]
        self._decide = functools.lru_cache(maxsize=4096)(self._uncached)

    def decide(
        self,
        action: str,
        resource: str,
        context: Mapping[str, str] | None = None,
        resource_policy: Mapping[str, Any] | None = None,
    ) -> Decision:
        """May this role's session perform ``action`` on ``resource``, with the request's condition keys ``context``
        (``aws:SourceArn``...), given the resource's own policy, if it has one?"""
        keys = tuple(sorted((str(k).lower(), str(v)) for k, v in (context or {}).items()))
        policy = json.dumps(resource_policy, sort_keys=True) if resource_policy is not None else None
        decision: Decision = self._decide(action, resource, keys, policy)
        return decision

    def _uncached(self, action: str, resource: str, keys: tuple[tuple[str, str], ...], policy: str | None) -> Decision:
        context = dict(keys)
        applicable = [s for s in self._identity if _applies(s, action, resource, context)]
        if policy is not None:
            applicable += [
                s
                for s in _compile(json.loads(policy), "resource policy", RESOURCE_BASED)
                if _principal_matches(s.principal, self._names) and _applies(s, action, resource, context)
            ]
        deny = next((s.statement for s in applicable if s.statement.effect == "Deny"), None)
        allow = next((s.statement for s in applicable if s.statement.effect == "Allow"), None)
        decided = deny or allow
        needed = RESOURCE_BASED if self.service else IDENTITY_BASED
        return Decision(deny is None and allow is not None, action, resource, self.caller, decided, needed)

    @property
    def cache_info(self) -> Any:
        return self._decide.cache_info()
