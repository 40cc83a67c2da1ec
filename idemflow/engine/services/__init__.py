"""The services the embedded engine runs, one module each, listed here and nowhere else.

The engine opens, deploys and starts them in this order and stops them in the reverse order; the
template is read with the resource types they declare. A resource of a type no service declares (or
declares with no reader) is accepted and listed by ``idemflow serve`` and ``idemflow run`` as not served.
"""

from __future__ import annotations

from idemflow.engine.services.apigateway import ApiGateway
from idemflow.engine.services.base import Service
from idemflow.engine.services.cloudformation import CloudFormation
from idemflow.engine.services.dynamodb import DynamoDB
from idemflow.engine.services.events import Events
from idemflow.engine.services.iam import Iam
from idemflow.engine.services.kinesis import Kinesis
from idemflow.engine.services.lambda_ import Lambda
from idemflow.engine.services.logs import Logs
from idemflow.engine.services.pipes import Pipes
from idemflow.engine.services.s3 import S3
from idemflow.engine.services.sns import Sns
from idemflow.engine.services.sqs import Sqs
from idemflow.engine.services.stepfunctions import StepFunctions
from idemflow.template import ResourceType

SERVICES: tuple[type[Service], ...] = (
    Iam,
    Logs,
    DynamoDB,
    Sqs,
    Sns,
    Kinesis,
    S3,
    Lambda,
    StepFunctions,
    Pipes,
    Events,
    ApiGateway,
    CloudFormation,
)


def resource_types(services: tuple[type[Service], ...] = SERVICES) -> dict[str, ResourceType]:
    """Every resource type the services declare, by type name."""
    types: dict[str, ResourceType] = {}
    for service in services:
        for spec in service.resource_types:
            if spec.type in types:
                raise ValueError(f"{spec.type} is declared by two services")
            types[spec.type] = spec
    return types


__all__ = ["SERVICES", "Service", "resource_types"]
