"""The AWS managed policies the project's templates attach, as data: the SAM transform names them by ARN
(``ManagedPolicyArns``: a function's ``AWSLambdaBasicExecutionRole``, and ``AWSXrayWriteOnlyAccess`` where tracing
is on), and their documents are AWS's, which no template holds. Only these: a role naming another is refused by
:mod:`idemflow.template.roles` with the ARN it needs added here. The documents are the versions AWS publishes
(IAM console, "AWS managed policies"; the same documents moto ships in ``moto/iam/aws_managed_policies.py``, which a
unit test compares them with)."""

from __future__ import annotations

from typing import Any, Final

MANAGED_POLICIES: Final[dict[str, dict[str, Any]]] = {
    # Version v1 (2015-04-09): writing a function's logs.
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": "*",
            }
        ],
    },
    # Version v2 (2018-08-28): sending traces (Tracing: Active on a function, Tracing.Enabled on a state machine).
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": [
                    "xray:PutTraceSegments",
                    "xray:PutTelemetryRecords",
                    "xray:GetSamplingRules",
                    "xray:GetSamplingTargets",
                    "xray:GetSamplingStatisticSummaries",
                ],
                "Resource": ["*"],
            }
        ],
    },
}


def managed_policy_map() -> dict[str, str]:
    """What the SAM transform's managed-policy loader returns (``sam deploy`` asks IAM's ListPolicies): each policy's
    name to its ARN, so that a function's ``Policies: [AWSLambdaBasicExecutionRole]`` becomes its ARN."""
    return {arn.rsplit("/", 1)[1]: arn for arn in MANAGED_POLICIES}
