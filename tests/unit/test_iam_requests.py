"""What a call asks for in IAM's terms (idemflow/engine/services/iam/requests.py), and the calls each task makes
(idemflow/engine/services/stepfunctions/task_permissions.py). Sources: the Service Authorization Reference's
resource types per action (Amazon DynamoDB, AWS Lambda, Amazon SQS, Amazon SNS, AWS Step Functions, Amazon
EventBridge, Amazon Kinesis), and for ``.sync`` the Step Functions Developer Guide's policies for
``startExecution.sync`` (connect-stepfunctions.html: events:PutTargets, PutRule and DescribeRule on
``rule/StepFunctionsGetEventsForStepFunctionsExecutionRule``)."""

from __future__ import annotations

import pytest

from idemflow.engine.services.iam.requests import action_name, function_arn, queue_arn, resources
from idemflow.engine.services.stepfunctions.task_permissions import SDK_DENIALS, calls, task_calls

R, A = "eu-west-1", "111122223333"


@pytest.mark.parametrize(
    ("service", "operation", "expected"),
    [
        ("dynamodb", "putItem", "dynamodb:PutItem"),
        ("lambda", "invoke", "lambda:InvokeFunction"),
        ("stepfunctions", "StartExecution", "states:StartExecution"),
        ("sqs", "sendMessage", "sqs:SendMessage"),
        # SQS authorizes a batch as the operation it batches (aws/serverless-application-model issue 3633).
        ("sqs", "sendMessageBatch", "sqs:SendMessage"),
        ("sqs", "DeleteMessageBatch", "sqs:DeleteMessage"),
        ("sqs", "ChangeMessageVisibilityBatch", "sqs:ChangeMessageVisibility"),
    ],
)
def test_action_names(service: str, operation: str, expected: str) -> None:
    assert action_name(service, operation) == expected


def test_dynamodb_resources() -> None:
    table = f"arn:aws:dynamodb:{R}:{A}:table/T"
    assert resources("dynamodb", "PutItem", {"TableName": "T"}, R, A) == [table]
    assert resources("dynamodb", "Query", {"TableName": "T", "IndexName": "I"}, R, A) == [f"{table}/index/I"]
    assert resources("dynamodb", "BatchWriteItem", {"RequestItems": {"T": [], "U": []}}, R, A) == [
        table,
        f"arn:aws:dynamodb:{R}:{A}:table/U",
    ]
    transact = {"TransactItems": [{"Put": {"TableName": "T"}}, {"ConditionCheck": {"TableName": "U"}}]}
    assert resources("dynamodb", "TransactWriteItems", transact, R, A) == [table, f"arn:aws:dynamodb:{R}:{A}:table/U"]
    assert resources("dynamodb", "ListTables", {}, R, A) == ["*"]


def test_a_function_is_named_as_invoked() -> None:
    plain = f"arn:aws:lambda:{R}:{A}:function:f"
    assert function_arn("f", R, A) == plain
    assert function_arn(plain, R, A) == plain
    assert function_arn(f"{A}:function:f", R, A) == plain
    assert function_arn("f", R, A, "live") == f"{plain}:live"
    assert function_arn(f"{plain}:3", R, A, "live") == f"{plain}:3"  # the ARN's own qualifier


def test_a_queue_url_names_its_queue() -> None:
    assert queue_arn(f"https://sqs.us-east-2.amazonaws.com/{A}/q", R, "000000000000") == f"arn:aws:sqs:us-east-2:{A}:q"
    assert queue_arn(f"http://localhost:4566/{A}/q", R, "000000000000") == f"arn:aws:sqs:{R}:{A}:q"


def test_events_name_each_bus_once() -> None:
    entries = {"Entries": [{"EventBusName": "b"}, {}, {"EventBusName": "b"}]}
    assert resources("events", "PutEvents", entries, R, A) == [
        f"arn:aws:events:{R}:{A}:event-bus/b",
        f"arn:aws:events:{R}:{A}:event-bus/default",
    ]


def test_an_operation_not_modelled_is_not_decided() -> None:
    assert resources("s3", "GetObject", {"Bucket": "b", "Key": "k"}, R, A) is None
    assert resources("dynamodb", "DescribeLimits", {}, R, A) is None


def test_a_sync_start_also_needs_the_managed_rule() -> None:
    machine = f"arn:aws:states:{R}:{A}:stateMachine:child"
    rule = f"arn:aws:events:{R}:{A}:rule/StepFunctionsGetEventsForStepFunctionsExecutionRule"
    assert calls("states", "startExecution", None, {"StateMachineArn": machine}, R, A) == [
        ("states:StartExecution", machine)
    ]
    assert calls("states", "startExecution", "sync:2", {"StateMachineArn": machine}, R, A) == [
        ("states:StartExecution", machine),
        ("events:PutTargets", rule),
        ("events:PutRule", rule),
        ("events:DescribeRule", rule),
    ]
    assert calls("http", "invoke", None, {}, R, A) is None


def test_an_sdk_task_is_decided_under_iam_s_prefix_and_kept_per_resource() -> None:
    """``aws-sdk:sfn:describeExecution`` is ``states:DescribeExecution`` (the Service Authorization Reference's prefix
    for Step Functions is ``states``), on the execution it names: two executions, two decisions."""
    prefix = SDK_DENIALS["sfn"][0]
    first, second = (f"arn:aws:states:{R}:{A}:execution:m:{n}" for n in ("one", "two"))
    assert task_calls(prefix, "describeExecution", None, {"ExecutionArn": first}, R, A) == [
        ("states:DescribeExecution", first)
    ]
    assert task_calls(prefix, "describeExecution", None, {"ExecutionArn": second}, R, A) == [
        ("states:DescribeExecution", second)
    ]
    assert SDK_DENIALS["eventbridge"][0] == "events"
    assert task_calls("s3", "getObject", None, {"Bucket": "b", "Key": "k"}, R, A) is None


@pytest.mark.parametrize(
    "body",
    [
        {"TableName": "T", "Item": {"TableName": {"S": "U"}}},
        {"Item": {"TableName": {"M": {"x": {"S": "U"}}}}, "TableName": "T"},
        {"TableName": "T", "ExpressionAttributeValues": {":v": {"S": '"TableName": "U"'}}},
    ],
)
def test_the_endpoint_reads_a_one_table_call_s_table_as_its_json_names_it(body: dict[str, object]) -> None:
    import io
    import json

    from idemflow.engine.services.iam import endpoint

    raw = json.dumps(body).encode()
    environ = {"HTTP_X_AMZ_TARGET": "DynamoDB_20120810.PutItem", "CONTENT_LENGTH": str(len(raw))}
    environ["wsgi.input"] = io.BytesIO(raw)  # type: ignore[assignment]
    assert endpoint._request(environ, "dynamodb") == ("PutItem", {"TableName": "T"})
    assert environ["wsgi.input"].read() == raw  # type: ignore[attr-defined]  # put back for the service
