"""The services a function's policies name (``Function.sdk_services``): the fork server loads their models before
it forks the function's workers (tests/functional/test_forkserver.py shows what that spares a worker)."""

from __future__ import annotations

from typing import Any

import pytest

from idemflow.engine.services.lambda_.service import sdk_services
from idemflow.engine.stack import resolve_stack
from tests.paths import TEMPLATE_PATH

pytestmark = pytest.mark.unit


def test_the_templates_functions_name_the_services_their_statements_allow() -> None:
    functions = {f.logical_id: f for f in resolve_stack(TEMPLATE_PATH).all_functions()}
    assert functions["ChargeFunction"].sdk_services == ("dynamodb",)  # Powertools' records and the ledger
    assert functions["ClockFunction"].sdk_services == ()  # no policy: it calls nothing


@pytest.mark.parametrize(
    ("policies", "services"),
    [
        (None, ()),
        ("AWSLambdaBasicExecutionRole", ()),  # a managed policy: no way to know, nothing loaded
        ([{"Statement": [{"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"}]}], ("sqs",)),
        ({"Statement": {"Action": ["dynamodb:GetItem", "s3:GetObject"], "Resource": "*"}}, ("dynamodb", "s3")),
        (
            [{"Statement": [{"Action": {"Fn::If": ["C", "states:StartExecution", "sns:Publish"]}}]}],
            ("sns", "stepfunctions"),
        ),
        (
            [{"DynamoDBCrudPolicy": {"TableName": "t"}}, {"SQSSendMessagePolicy": {"QueueName": "q"}}],
            ("dynamodb", "sqs"),
        ),
        ([{"Statement": [{"Action": "*", "Resource": "*"}]}], ()),
        # Only actions: a condition's branch elsewhere (a Resource, a Sid) names nothing.
        (
            [{"Statement": [{"Sid": "sqs:Send", "Action": "sns:Publish", "Resource": {"Fn::If": ["C", "s3:x", "*"]}}]}],
            ("sns",),
        ),
    ],
)
def test_statements_actions_and_sam_policy_templates_name_their_services(
    policies: Any, services: tuple[str, ...]
) -> None:
    assert sdk_services(policies) == services
