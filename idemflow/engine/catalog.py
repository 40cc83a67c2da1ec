"""The services the embedded engine runs, one package each (``idemflow/engine/services/``), listed here and
nowhere else.

The engine opens, deploys and starts them in this order and stops them in the reverse order; the
template is read with the resource types they declare. A resource of a type no service declares (or
declares with no reader) is accepted and listed by ``idemflow serve`` and ``idemflow run`` as not served.
"""

from __future__ import annotations

from idemflow.engine.services.apigateway.service import ApiGateway
from idemflow.engine.services.base import Service
from idemflow.engine.services.cloudformation.service import CloudFormation
from idemflow.engine.services.dynamodb.service import DynamoDB
from idemflow.engine.services.events.service import Events
from idemflow.engine.services.iam.service import Iam
from idemflow.engine.services.kinesis.service import Kinesis
from idemflow.engine.services.lambda_.service import Lambda
from idemflow.engine.services.logs.service import Logs
from idemflow.engine.services.pipes.service import Pipes
from idemflow.engine.services.s3.service import S3
from idemflow.engine.services.sns.service import Sns
from idemflow.engine.services.sqs.service import Sqs
from idemflow.engine.services.stepfunctions.service import StepFunctions
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
