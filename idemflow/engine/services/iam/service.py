"""IAM: the one role the engine's functions and state machines run with. Permissions are not enforced
locally, so the template's roles are named (Ref and Fn::GetAtt work) but not created."""

from __future__ import annotations

import json

from idemflow.engine.services.base import Service
from idemflow.template import ResourceType

ENGINE_ROLE = "idemflow-local"


class Iam(Service):
    name = "iam"
    resource_types = (
        ResourceType(
            "AWS::IAM::Role",
            name_property="RoleName",
            arn="arn:aws:iam::{account}:role/{name}",
            why_not_served="permissions are not enforced locally",
        ),
    )
    moto_backends = ("iam",)
    role_arn = ""

    def open(self) -> None:
        self.role_arn = self.context.client("iam").create_role(
            RoleName=ENGINE_ROLE,
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
        )["Role"]["Arn"]
