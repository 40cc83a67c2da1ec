"""IAM: the template's roles, as ``sam deploy`` creates them, and who runs under each
(:mod:`~idemflow.engine.services.iam.permissions`).

Every role the stack creates exists in moto's IAM (Lambda's CreateFunction needs its role to exist), with its trust
policy; functions and state machines are created with their own role's ARN, so ``$$.Execution.RoleArn`` and
GetFunctionConfiguration name it as on AWS. A resource whose role the stack does not create, and every resource
when permissions are off (``Settings.iam``), runs under the engine's own role, ``idemflow-local``, which nothing
restricts.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from typing import Any

from idemflow.engine.errors import EngineError
from idemflow.engine.services.base import Service
from idemflow.engine.services.iam.callers import Caller, Callers
from idemflow.engine.services.iam.endpoint import refusal
from idemflow.engine.services.iam.evaluation import Decision, session_arn
from idemflow.engine.services.iam.permissions import Permissions
from idemflow.engine.state import EngineState
from idemflow.template import ResourceType, Stack, TemplateError

ENGINE_ROLE = "idemflow-local"
ENGINE_ACCESS_KEY = "local"
"""The key a worker of a function signs with when its role is not decided: the account's own user."""
ENGINE_SECRET_KEY = "local"
"""The secret every worker of a function signs with (its access key says who it is)."""


class Iam(Service):
    name = "iam"
    resource_types = (
        ResourceType(
            "AWS::IAM::Role",
            name_property="RoleName",
            arn="arn:aws:iam::{account}:role/{name}",
            why_not_served="read by the IAM service from the SAM transform's output, not from this reader",
        ),
    )
    moto_backends = ("iam",)
    role_arn = ""
    account = ""
    permissions: Permissions = Permissions()
    callers: Callers = Callers("")

    def open(self) -> None:
        self.role_arn = self.context.client("iam").create_role(
            RoleName=ENGINE_ROLE,
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
        )["Role"]["Arn"]
        self.permissions = Permissions()
        self.callers = Callers("")

    def attach(self, state: EngineState) -> EngineState:
        return dataclasses.replace(state, authorizer=self if self.context.settings.iam else None)

    @property
    def enforced(self) -> bool:
        return self.context.settings.iam and bool(self.permissions.roles)

    def deploy(self, stack: Stack) -> None:
        self.callers = Callers(stack.account_id)
        if not self.context.settings.iam or self.context.template_path is None:
            return
        from idemflow.template.roles import template_roles

        try:
            roles = template_roles(
                self.context.template_path,
                types=self.context.names,
                parameter_overrides=self.context.parameter_overrides,
                stack_name=self.context.stack_name,
                region=self.context.region,
                account_id=stack.account_id,
            )
        except TemplateError as exc:
            raise EngineError(f"cannot read the template's roles: {exc}") from exc
        iam = self.context.client("iam")
        for role in roles.values():
            trust = {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Principal": {"Service": list(role.services)}, "Action": "sts:AssumeRole"}
                ],
            }
            iam.create_role(RoleName=role.name, AssumeRolePolicyDocument=json.dumps(trust))
        self.permissions = Permissions(roles)
        self.account = stack.account_id

    def add_caller(self, name: str, policy: dict[str, Any]) -> tuple[str, str]:
        """Declare an IAM user of the account named ``name`` whose identity policy is ``policy`` (a policy document):
        its access key and secret, to sign requests to an ``AWS_IAM`` method with."""
        caller = self.callers.add(name, policy)
        return caller.access_key, caller.secret_key

    def caller(self, access_key: str) -> Caller | None:
        """Who signs with ``access_key``: the account's own user (``local``), a declared user, or a session of a
        role of the stack (a function's worker: its role's policies decide); None for an unknown key."""
        found = self.callers.of(access_key)
        if found is not None:
            return found
        issued = self.permissions.role_for_key(access_key)
        if issued is None:
            return None
        role_arn, session = issued
        return Caller(
            session_arn(role_arn, session),
            access_key,
            ENGINE_SECRET_KEY,
            lambda action, resource: self.permissions.decide(role_arn, action, resource, session=session),
        )

    def role_arn_of(self, path: str, logical_id: str) -> str:
        """The ARN of the role the resource runs under: its own when permissions are decided and the stack
        creates it, else the engine's."""
        if self.context.settings.iam:
            role = self.permissions.role_of(path, logical_id)
            if role is not None:
                return role.arn
        return self.role_arn

    def access_key_of(self, path: str, logical_id: str, session: str) -> str:
        """The access key a function's worker signs with: a session of its role named ``session`` (the function's
        name, as Lambda names it), or the account's own user when its role's calls are not decided."""
        arn = self.role_arn_of(path, logical_id)
        return self.permissions.issue_key(arn, session) if self.permissions.knows(arn) else ENGINE_ACCESS_KEY

    def wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes] | None:
        if not self.context.settings.iam or not self.permissions.roles:
            return None
        return refusal(self.permissions, self.account, environ, start_response)

    def decide(
        self, role_arn: str, action: str, resource: str, *, session: str | None = None, **keys: str
    ) -> Decision | None:
        """The decision on a call a session of ``role_arn`` makes, None when it is not decided (permissions off,
        or a role the stack does not create)."""
        if not self.context.settings.iam:
            return None
        return self.permissions.decide(role_arn, action, resource, session=session, context=keys or None)

    def decide_service(
        self, principal: str, action: str, resource: str, resource_policy: dict[str, Any] | None, **keys: str
    ) -> Decision | None:
        """The decision on a call the service ``principal`` makes to a resource whose own policy is
        ``resource_policy`` (SNS delivering to a queue), None when permissions are off."""
        if not self.context.settings.iam:
            return None
        return self.permissions.decide_service(principal, action, resource, resource_policy, **keys)
