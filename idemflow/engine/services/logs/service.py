"""CloudWatch Logs: named, so the template's log groups resolve, but not written to locally."""

from __future__ import annotations

from idemflow.engine.services.base import Service
from idemflow.template import ResourceType


class Logs(Service):
    name = "logs"
    resource_types = (
        ResourceType(
            "AWS::Logs::LogGroup",
            name_property="LogGroupName",
            arn="arn:aws:logs:{region}:{account}:log-group:{name}:*",
            why_not_served="executions log to the engine's history, not to CloudWatch Logs",
        ),
    )
