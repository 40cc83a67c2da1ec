"""Permissions as AWS enforces them: each call is decided under the role that makes it, and a call its role does not
allow fails as it fails on AWS. Each test removes one grant from a copy of the real template.yaml (read and edited
as data, written back as JSON, which CloudFormation and SAM read as they read YAML).

Sources of the denials' shapes:
- a task's: the TaskFailed of an execution recorded on AWS (awslabs/aws-deployment-framework issue 460):
  ``"error": "Lambda.AWSLambdaException", "cause": "User: arn:aws:sts::<account>:assumed-role/<role>/<session> is
  not authorized to perform: lambda:InvokeFunction on resource: <function ARN> because no identity-based policy
  allows the lambda:InvokeFunction action (Service: AWSLambda; Status Code: 403; Error Code: AccessDeniedException;
  Request ID: <id>; Proxy: null)"``; DynamoDB's by the same rule (the SDK for Java's class for a code it has none
  for, ``DynamoDB.AmazonDynamoDBException``, recorded for a ValidationException in LocalStack's AWS-validated
  test_task_service_dynamodb.snapshot.json);
- an SDK call's: IAM User Guide, "Troubleshoot access denied error messages"
  (https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_access-denied.html): ``User: <caller ARN> is not
  authorized to perform: <action> on resource: <ARN> because no identity-based policy allows the <action>
  action``; a function's caller is ``assumed-role/<execution role>/<function name>`` (the reports of Lambda
  denials, e.g. aws-samples/aws-serverless-workshop-innovator-island issue 97).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from idemflow.engine import Engine, registry
from idemflow.engine.services.iam.service import Iam
from idemflow.template.loader import load_template
from tests.paths import PROJECT_ROOT, TEMPLATE_PATH
from tests.polling import wait_until

PAYLOAD = {"amount": 5, "currency": "EUR", "customerId": "c-1"}


def _documents(template: dict[str, Any], logical_id: str) -> list[dict[str, Any]]:
    """The inline policy documents of a SAM resource's Policies, each branch of an Fn::If too."""
    found = []
    pending = list(template["Resources"][logical_id]["Properties"]["Policies"])
    while pending:
        policy = pending.pop(0)
        if isinstance(policy, dict) and "Fn::If" in policy:
            pending.extend(policy["Fn::If"][1:])
        elif isinstance(policy, dict) and "Statement" in policy:
            found.append(policy)
    return found


def _statements(template: dict[str, Any], logical_id: str) -> list[dict[str, Any]]:
    return [s for document in _documents(template, logical_id) for s in document["Statement"]]


def _statement(template: dict[str, Any], logical_id: str, sid: str) -> dict[str, Any]:
    found = [s for s in _statements(template, logical_id) if s.get("Sid") == sid]
    assert len(found) == 1, f"{logical_id} has no statement {sid}: the test must follow the template"
    return found[0]


def without_action(logical_id: str, sid: str, action: str) -> Callable[[dict[str, Any]], None]:
    def edit(template: dict[str, Any]) -> None:
        statement = _statement(template, logical_id, sid)
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert action in actions
        statement["Action"] = [a for a in actions if a != action]

    return edit


def without_statement(logical_id: str, sid: str) -> Callable[[dict[str, Any]], None]:
    def edit(template: dict[str, Any]) -> None:
        statement = _statement(template, logical_id, sid)
        for document in _documents(template, logical_id):
            if statement in document["Statement"]:
                document["Statement"].remove(statement)

    return edit


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for folder in ("statemachine", "functions", "layers"):
        shutil.copytree(PROJECT_ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(TEMPLATE_PATH, tmp_path / "template.yaml")
    return tmp_path


def without_role_statement(role: str, sid: str) -> Callable[[dict[str, Any]], None]:
    """An AWS::IAM::Role's inline policy statement removed."""

    def edit(template: dict[str, Any]) -> None:
        found = False
        for policy in template["Resources"][role]["Properties"]["Policies"]:
            statements = policy["PolicyDocument"]["Statement"]

            def named(statement: Any) -> bool:  # a statement, or an Fn::If whose branch is it
                branches = statement.get("Fn::If", [None])[1:] if isinstance(statement, dict) else []
                return statement.get("Sid") == sid or any(isinstance(b, dict) and b.get("Sid") == sid for b in branches)

            kept = [s for s in statements if not named(s)]
            found = found or len(kept) < len(statements)
            policy["PolicyDocument"]["Statement"] = kept or [
                {"Effect": "Deny", "Action": "none:None", "Resource": "*"}  # a policy holds one statement at least
            ]
        assert found, f"{role} has no statement {sid}: the test must follow the template"

    return edit


def without_role_action(role: str, sid: str, action: str) -> Callable[[dict[str, Any]], None]:
    """One action of an AWS::IAM::Role's inline policy statement removed."""

    def edit(template: dict[str, Any]) -> None:
        for policy in template["Resources"][role]["Properties"]["Policies"]:
            for statement in policy["PolicyDocument"]["Statement"]:
                if isinstance(statement, dict) and statement.get("Sid") == sid:
                    assert action in statement["Action"], f"{role}/{sid} has no {action}: follow the template"
                    statement["Action"] = [a for a in statement["Action"] if a != action]
                    return
        raise AssertionError(f"{role} has no statement {sid}: the test must follow the template")

    return edit


def edited(project: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    template = load_template(TEMPLATE_PATH)
    edit(template)
    path = project / "template.yaml"
    path.write_text(json.dumps(template, indent=1))
    return path


@pytest.fixture
def engine_for(project: Path) -> Iterator[Callable[..., Engine]]:
    started: list[Engine] = []

    def start(edit: Callable[[dict[str, Any]], None], **options: Any) -> Engine:
        engine = Engine(edited(project, edit), wait_time_scale=0, **options).start()
        started.append(engine)
        return engine

    yield start
    for engine in started:
        engine.stop()


def _denial(role: str, session: str, action: str, resource: str) -> str:
    return (
        rf"User: arn:aws:sts::\d{{12}}:assumed-role/{re.escape(role)}/{session} is not authorized to perform: "
        rf"{re.escape(action)} on resource: {re.escape(resource)} because no identity-based policy allows the "
        rf"{re.escape(action)} action"
    )


def test_a_state_machine_role_without_put_item_fails_the_lock_and_runs_nothing(
    engine_for: Callable[..., Engine],
) -> None:
    engine = engine_for(without_action("IdempotentStateMachine", "IdempotencyRecords", "dynamodb:PutItem"))
    table = engine.workflow.idempotency_table
    outcome = engine.run({"idempotencyKey": "order-1", "payload": PAYLOAD})

    assert outcome.status == "FAILED"
    assert outcome.path[-1] == "AcquireLock"
    assert outcome.error == "DynamoDB.AmazonDynamoDBException"
    role = f"{engine.stack_name}-IdempotentStateMachineRole"
    arn = f"arn:aws:dynamodb:{engine.region}:123456789012:table/{table}"
    assert re.match(_denial(role, "[A-Za-z]{32}", "dynamodb:PutItem", arn), outcome.cause or "")
    assert re.search(
        r"\(Service: AmazonDynamoDBv2; Status Code: 400; Error Code: AccessDeniedException; Request ID: [^;]+; "
        r"Proxy: null\)$",
        outcome.cause or "",
    )
    assert engine.workflow.record("order-1") is None  # no lock left behind
    assert engine.workflow.invocation_counts("order-1")[engine.workflow.side_effect_function] == 0


def test_with_permissions_off_the_same_template_runs(engine_for: Callable[..., Engine]) -> None:
    engine = engine_for(without_action("IdempotentStateMachine", "IdempotencyRecords", "dynamodb:PutItem"), iam=False)
    assert engine.run({"idempotencyKey": "order-1", "payload": PAYLOAD}).status == "SUCCEEDED"


def test_without_the_hook_a_task_runs_whatever_its_role(engine_for: Callable[..., Engine]) -> None:
    engine = engine_for(without_action("IdempotentStateMachine", "IdempotencyRecords", "dynamodb:PutItem"))
    registry.apply(without=["task-permissions"], hooks_too=True)
    assert engine.run({"idempotencyKey": "order-1", "payload": PAYLOAD}).status == "SUCCEEDED"


def test_a_state_machine_role_without_the_invoke_grant_fails_as_lambda_fails_it(
    engine_for: Callable[..., Engine],
) -> None:
    engine = engine_for(without_statement("IdempotentStateMachine", "InvokeSideEffect"))
    outcome = engine.run({"idempotencyKey": "order-1", "payload": PAYLOAD})

    # Retried as Lambda's transient error, then an unknown outcome: the definition cannot tell this denial from
    # a failure after the function ran, so the key stays locked until its lease ends (docs/runbook.md).
    assert (outcome.status, outcome.error) == ("FAILED", "IdempotencyOutcomeUnknown")
    assert (engine.workflow.record("order-1") or {}).get("status") == "IN_PROGRESS"
    failures = [e["taskFailedEventDetails"] for e in engine.history(outcome.arn) if e["type"] == "TaskFailed"]
    assert failures, "the invoke is refused by a TaskFailed"
    role = f"{engine.stack_name}-IdempotentStateMachineRole"
    function = engine.workflow.side_effect_function
    arn = f"arn:aws:lambda:{engine.region}:123456789012:function:{function}"
    for failure in failures:
        assert failure["error"] == "Lambda.AWSLambdaException"
        assert re.match(_denial(role, "[A-Za-z]{32}", "lambda:InvokeFunction", arn), failure["cause"])
        assert "(Service: AWSLambda; Status Code: 403; Error Code: AccessDeniedException;" in failure["cause"]
    assert engine.workflow.invocation_counts("order-1")[function] == 0  # the side effect never ran


def test_a_function_role_without_its_ledger_write_fails_the_charge_and_releases_the_key(
    engine_for: Callable[..., Engine],
) -> None:
    engine = engine_for(without_action("ChargeFunction", "LedgerWrites", "dynamodb:PutItem"))
    outcome = engine.run({"idempotencyKey": "order-1", "payload": PAYLOAD})

    assert outcome.status == "FAILED"
    function = engine.workflow.side_effect_function
    ledger = engine.stack.tables["LedgerTable"].name if engine.stack else ""
    arn = f"arn:aws:dynamodb:{engine.region}:123456789012:table/{ledger}"
    # The execution's cause is the function's error message, one line (its stack trace stays in the history).
    assert outcome.error == "ClientError"
    cause = outcome.cause or ""
    assert cause.startswith("An error occurred (AccessDeniedException) when calling the PutItem operation: ")
    assert re.search(
        _denial(f"{engine.stack_name}-ChargeFunctionRole", re.escape(function), "dynamodb:PutItem", arn) + "$", cause
    )
    assert engine.workflow.record("order-1") is None  # the function's own error: the key is released


def _client(engine: Engine, service: str, access_key: str) -> Any:
    """A plain boto3 client of the engine's endpoint, signing with ``access_key``."""
    return boto3.client(
        service,
        endpoint_url=engine.endpoint_url,
        region_name=engine.region,
        aws_access_key_id=access_key,
        aws_secret_access_key="local",
    )


def _as_function(engine: Engine, logical_id: str, service: str) -> tuple[Any, str]:
    """A client signing as the function's worker does (a session of its role named after it), and its name."""
    assert engine.stack is not None
    name = engine.stack.functions[logical_id].name
    return _client(engine, service, engine.service(Iam).access_key_of("", logical_id, name)), name


def test_a_role_session_is_refused_at_the_endpoint_what_its_policies_do_not_allow(
    engine_for: Callable[..., Engine],
) -> None:
    engine = engine_for(lambda template: None)
    as_clock, clock = _as_function(engine, "ClockFunction", "dynamodb")
    table = engine.workflow.idempotency_table
    with pytest.raises(ClientError) as refused:
        as_clock.get_item(TableName=table, Key={"id": {"S": "x"}})
    error = refused.value.response["Error"]
    assert error["Code"] == "AccessDeniedException"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    arn = f"arn:aws:dynamodb:{engine.region}:123456789012:table/{table}"
    assert re.fullmatch(
        _denial(f"{engine.stack_name}-ClockFunctionRole", re.escape(clock), "dynamodb:GetItem", arn),
        error["Message"],
    )

    # The account's own user (the key serve prints) is not restricted.
    as_user = _client(engine, "dynamodb", "local")
    assert "Item" not in as_user.get_item(TableName=table, Key={"id": {"S": "x"}})


def test_a_function_role_may_not_invoke_another_function(engine_for: Callable[..., Engine]) -> None:
    engine = engine_for(lambda template: None)
    charge = engine.workflow.side_effect_function
    as_clock, _ = _as_function(engine, "ClockFunction", "lambda")
    with pytest.raises(ClientError) as refused:
        as_clock.invoke(FunctionName=charge, Payload=b"{}")
    assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert (
        "is not authorized to perform: lambda:InvokeFunction on resource: "
        in refused.value.response["Error"]["Message"]
    )
    assert engine.workflow.invocation_counts()[charge] == 0


def test_a_function_role_may_not_start_the_workflow(engine_for: Callable[..., Engine]) -> None:
    engine = engine_for(lambda template: None)
    as_charge, charge = _as_function(engine, "ChargeFunction", "stepfunctions")
    machine = engine.workflow.state_machine_arn
    with pytest.raises(ClientError) as refused:
        as_charge.start_execution(stateMachineArn=machine, input="{}")
    assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert re.fullmatch(
        _denial(f"{engine.stack_name}-ChargeFunctionRole", re.escape(charge), "states:StartExecution", machine),
        refused.value.response["Error"]["Message"],
    )
    assert engine.client("stepfunctions").list_executions(stateMachineArn=machine)["executions"] == []


def test_a_rule_whose_role_may_not_start_the_intake_dead_letters_the_event_at_once(
    engine_for: Callable[..., Engine],
) -> None:
    # eb-rule-dlq: missing permissions on the target are not retried; the event goes to the target's dead-letter
    # queue with ERROR_CODE NO_PERMISSIONS (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-dlq.html).
    engine = engine_for(
        without_role_statement("EventRuleRole", "StartTheIntake"),
        parameter_overrides={"EventFrontDoor": "true"},
    )
    assert engine.stack is not None
    detail = {"idempotencyKey": "order-1", "payload": PAYLOAD}
    engine.http_client("events").put_events(
        Entries=[{"Source": "shop.orders", "DetailType": "IdempotentRequest", "Detail": json.dumps(detail)}]
    )
    sqs = engine.http_client("sqs")
    url = engine.stack.outputs["DoorDeadLetterQueueUrl"]
    got = wait_until(
        lambda: sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"]).get("Messages"),
        30,
        what="the event on the dead-letter queue",
        interval=0.05,
    )
    attributes = {k: v["StringValue"] for k, v in got[0]["MessageAttributes"].items()}
    intake = engine.stack.outputs["IntakeStateMachineArn"]
    assert attributes["ERROR_CODE"] == "NO_PERMISSIONS"
    assert attributes["RETRY_ATTEMPTS"] == "0"
    assert re.fullmatch(
        _denial(f"{engine.stack_name}-EventRuleRole", "[A-Za-z]{32}", "states:StartExecution", intake),
        attributes["ERROR_MESSAGE"],
    )
    assert engine.client("stepfunctions").list_executions(stateMachineArn=intake)["executions"] == []


def test_an_http_door_whose_credentials_may_not_start_the_workflow_starts_nothing(
    engine_for: Callable[..., Engine],
) -> None:
    # API Gateway calls the AWS service under the integration's Credentials role; the service refuses it with
    # its AccessDeniedException (HTTP 400), which the door's integration response maps like any error of it.
    from idemflow.engine.services.apigateway.service import ApiGateway
    from tests.functional.test_http_door import post

    engine = engine_for(
        without_role_statement("HttpApiRole", "Start"),
        parameter_overrides={"HttpFrontDoor": "true", "WorkflowType": "EXPRESS"},
    )
    ((_, url),) = engine.service(ApiGateway).urls()
    status, _, body = post(url, "order-1")

    assert (status, body["title"]) == (500, "Internal error")  # not the caller's to fix: the door's configuration
    assert engine.service(ApiGateway).integration_calls == {"states:StartSyncExecution": 1}
    assert engine.workflow.record("order-1") is None
    assert engine.workflow.invocation_counts("order-1")[engine.workflow.side_effect_function] == 0


def test_a_standard_http_door_whose_credentials_may_not_describe_answers_its_get_with_500(
    engine_for: Callable[..., Engine],
) -> None:
    from idemflow.engine.services.apigateway.service import ApiGateway
    from tests.functional.test_http_door_standard import accepted, get

    engine = engine_for(
        without_role_statement("HttpApiRole", "DescribeExecution"),
        parameter_overrides={"HttpFrontDoor": "true", "WorkflowType": "STANDARD"},
    )
    url = dict(engine.service(ApiGateway).urls())["POST"]
    location = accepted(url, "order-1")  # the start is still allowed
    status, _, text = get(location)

    assert (status, json.loads(text)["title"]) == (500, "Internal error")
    assert engine.service(ApiGateway).integration_calls["states:DescribeExecution"] == 1


# The pipes (EventBridge User Guide, "Event source permissions for Amazon EventBridge Pipes",
# https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-permissions.html): what each pipe's role must
# allow on its source is checked when the pipe is created, and a pipe whose role lacks one is CREATE_FAILED, which
# fails the stack (idemflow/engine/services/pipes/role.py cites the records).
KINESIS_ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
TABLE_STREAM_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/outbox/stream/2026-01-01T00:00:00.000"
EVERY_PIPE = {"QueueFrontDoor": "true", "KinesisStreamArn": KINESIS_ARN, "DynamoDBStreamArn": TABLE_STREAM_ARN}


def test_the_pipes_roles_allow_what_pipes_requires_of_their_sources(engine_for: Callable[..., Engine]) -> None:
    from idemflow.engine.services.pipes.service import Pipes

    engine = engine_for(lambda template: None, parameter_overrides=EVERY_PIPE)
    assert sorted(p.logical_id for p in engine.service(Pipes).pipes) == ["QueuePipe", "StreamPipe", "TableStreamPipe"]


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        # Recorded on AWS (terraform-aws-modules/terraform-aws-eventbridge pull request 133): the pipe is
        # CREATE_FAILED, "Input parameter is invalid from the request due to : The provided customer role does not
        # have permissions to call ReceiveMessage on SQS".
        (
            without_role_action("QueuePipeRole", "ReadTheQueue", "sqs:ReceiveMessage"),
            "The provided customer role does not have permissions to call ReceiveMessage on SQS",
        ),
        # The same words for a DynamoDB stream's first action (only SQS's are on record).
        (
            without_role_action("TableStreamPipeRole", "ReadTheStream", "dynamodb:DescribeStream"),
            "The provided customer role does not have permissions to call DescribeStream on DynamoDB",
        ),
        # Recorded (aws-samples/serverless-patterns issue 1543, a DynamoDB stream pipe): "... due to : Error
        # occurred while sending message to SQS queue: <queue ARN>".
        (
            without_role_statement("StreamPipeRole", "DescribeWhatIsNotHandedOver"),
            "Error occurred while sending message to SQS queue: arn:aws:sqs:us-east-1:123456789012:",
        ),
    ],
    ids=["queue-receive", "table-stream-describe", "stream-dead-letters"],
)
def test_a_pipe_whose_role_may_not_read_its_source_fails_the_deploy_as_cloudformation_reports_it(
    engine_for: Callable[..., Engine], edit: Callable[[dict[str, Any]], None], reason: str
) -> None:
    from idemflow.engine.errors import EngineError

    with pytest.raises(EngineError) as failed:
        engine_for(edit, parameter_overrides=EVERY_PIPE)
    message = str(failed.value)
    assert re.search(
        r"Resources\.\w+Pipe: CREATE_FAILED: Resource handler returned message: \"Resource of type 'AWS::Pipes::Pipe' "
        r"with identifier '[\w.-]+' did not stabilize\. Status Reason is Input parameter is invalid from the request "
        r"due to : ",
        message,
    )
    assert reason in message


def test_a_queue_pipe_whose_role_may_not_start_the_intake_leaves_the_message_to_the_redrive_policy(
    engine_for: Callable[..., Engine],
) -> None:
    # eb-pipes-error-troubleshooting (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-error-troubleshooting.html):
    # "The pipe has insufficient permissions to invoke the target" is a customer invocation error; from an SQS
    # source Pipes retries it "up to the maximum receive count on the source queue".
    from idemflow.engine.services.pipes.service import Pipes

    engine = engine_for(
        without_role_statement("QueuePipeRole", "StartTheIntake"),
        parameter_overrides={"QueueFrontDoor": "true", "QueueVisibilityTimeout": "0", "QueueMaxReceiveCount": "2"},
    )
    assert engine.stack is not None
    sqs = engine.http_client("sqs")
    body = json.dumps({"idempotencyKey": "order-1", "payload": PAYLOAD})
    sent = sqs.send_message(QueueUrl=engine.stack.outputs["RequestQueueUrl"], MessageBody=body)["MessageId"]
    dead_letters = engine.stack.outputs["DoorDeadLetterQueueUrl"]
    got = wait_until(
        lambda: sqs.receive_message(QueueUrl=dead_letters).get("Messages"),
        30,
        what="the message moved to the dead-letter queue",
        interval=0.05,
    )
    assert [m["MessageId"] for m in got] == [sent]
    intake = engine.stack.outputs["IntakeStateMachineArn"]
    assert engine.client("stepfunctions").list_executions(stateMachineArn=intake)["executions"] == []
    (stats,) = engine.service(Pipes).stats.values()
    assert re.fullmatch(
        "AccessDeniedException: "
        + _denial(f"{engine.stack_name}-QueuePipeRole", "[A-Za-z]{32}", "states:StartExecution", intake),
        stats.last_failure,
    )
    assert stats.failed == stats.records == 2  # received twice, refused twice, then moved


def test_a_stream_pipe_whose_role_may_not_start_the_intake_describes_the_batch_after_its_retries(
    engine_for: Callable[..., Engine],
) -> None:
    # eb-pipes-error-troubleshooting: from a stream, a customer invocation error is retried "up to the maximum
    # retry attempts configured on the pipe retry policy", then the batch goes to the dead-letter destination.
    engine = engine_for(
        without_role_statement("StreamPipeRole", "StartTheIntake"),
        parameter_overrides={"KinesisStreamArn": KINESIS_ARN, "StreamMaximumRetryAttempts": "1"},
    )
    assert engine.stack is not None
    kinesis = engine.http_client("kinesis")
    kinesis.create_stream(StreamName="orders", ShardCount=1)
    kinesis.put_record(StreamName="orders", Data=json.dumps({"idempotencyKey": "order-1"}).encode(), PartitionKey="p")
    sqs = engine.http_client("sqs")
    url = engine.stack.outputs["StreamDeadLetterQueueUrl"]
    got = wait_until(
        lambda: sqs.receive_message(QueueUrl=url).get("Messages"),
        30,
        what="the batch described on the stream dead-letter queue",
        interval=0.05,
    )
    described = json.loads(got[0]["Body"])
    assert described["requestContext"] == {"condition": "RetryAttemptsExhausted", "approximateInvokeCount": 2}
    intake = engine.stack.outputs["IntakeStateMachineArn"]
    assert engine.client("stepfunctions").list_executions(stateMachineArn=intake)["executions"] == []


# SNS delivering to SQS: the queue's policy decides (idemflow/engine/services/sns/queue_policy.py cites the SNS
# Developer Guide); a delivery it refuses is a client-side error: the subscription's dead-letter queue, if its own
# policy lets the topic send, else nowhere.
TOPIC_DOOR = {"TopicFrontDoor": "true", "QueueVisibilityTimeout": "0"}


def without_resource(logical_id: str) -> Callable[[dict[str, Any]], None]:
    def edit(template: dict[str, Any]) -> None:
        assert logical_id in template["Resources"], f"no {logical_id}: the test must follow the template"
        del template["Resources"][logical_id]

    return edit


def without_queue_policy_statement(logical_id: str, sid: str) -> Callable[[dict[str, Any]], None]:
    """A statement of an AWS::SQS::QueuePolicy removed (the Fn::If whose branch it is)."""

    def edit(template: dict[str, Any]) -> None:
        statements = template["Resources"][logical_id]["Properties"]["PolicyDocument"]["Statement"]
        kept = [s for s in statements if sid not in json.dumps(s)]
        assert len(kept) == len(statements) - 1, f"{logical_id} has no statement {sid}: follow the template"
        statements[:] = kept

    return edit


def both(*edits: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def edit(template: dict[str, Any]) -> None:
        for one in edits:
            one(template)

    return edit


def _publish(engine: Engine, key: str) -> str:
    assert engine.stack is not None
    body = json.dumps({"idempotencyKey": key, "payload": PAYLOAD})
    return str(
        engine.http_client("sns").publish(TopicArn=engine.stack.outputs["RequestTopicArn"], Message=body)["MessageId"]
    )


def test_the_topic_door_delivers_through_the_request_queue_policy(engine_for: Callable[..., Engine]) -> None:
    engine = engine_for(lambda template: None, parameter_overrides=TOPIC_DOOR)
    assert engine.stack is not None
    _publish(engine, "order-1")
    intake = engine.stack.outputs["IntakeStateMachineArn"]
    sfn = engine.client("stepfunctions")
    # Waited for to its end: the engine would stop it mid-task otherwise.
    wait_until(
        lambda: sfn.list_executions(stateMachineArn=intake, statusFilter="SUCCEEDED")["executions"],
        30,
        what="the intake to run the workflow",
    )


def test_without_the_request_queue_policy_the_topic_door_sends_the_message_to_its_dead_letter_queue(
    engine_for: Callable[..., Engine],
) -> None:
    engine = engine_for(without_resource("RequestQueuePolicy"), parameter_overrides=TOPIC_DOOR)
    assert engine.stack is not None
    _publish(engine, "order-1")  # the publisher is not told: delivery is SNS's
    sqs = engine.http_client("sqs")
    dead_letters = engine.stack.outputs["DoorDeadLetterQueueUrl"]
    (message,) = wait_until(
        lambda: sqs.receive_message(QueueUrl=dead_letters).get("Messages"), 30, what="the message on the dead letters"
    )
    assert json.loads(message["Body"])["idempotencyKey"] == "order-1"  # raw delivery: the message itself
    intake = engine.stack.outputs["IntakeStateMachineArn"]
    assert engine.client("stepfunctions").list_executions(stateMachineArn=intake)["executions"] == []
    assert engine.workflow.record("order-1") is None


def test_without_either_queue_policy_the_topic_doors_message_is_lost(engine_for: Callable[..., Engine]) -> None:
    engine = engine_for(
        both(
            without_resource("RequestQueuePolicy"),
            without_queue_policy_statement("DoorDeadLetterQueuePolicy", "TopicDeadLetters"),
        ),
        parameter_overrides=TOPIC_DOOR,
    )
    assert engine.stack is not None
    _publish(engine, "order-1")
    sqs = engine.http_client("sqs")
    for output in ("RequestQueueUrl", "DoorDeadLetterQueueUrl"):
        attributes = sqs.get_queue_attributes(QueueUrl=engine.stack.outputs[output], AttributeNames=["All"])
        assert attributes["Attributes"]["ApproximateNumberOfMessages"] == "0", output
        assert attributes["Attributes"]["ApproximateNumberOfMessagesNotVisible"] == "0", output
    intake = engine.stack.outputs["IntakeStateMachineArn"]  # nor was it delivered and taken by the pipe
    assert engine.client("stepfunctions").list_executions(stateMachineArn=intake)["executions"] == []


def test_an_event_whose_dead_letter_queue_policy_does_not_let_the_rule_send_is_lost(
    engine_for: Callable[..., Engine],
) -> None:
    # eb-rule-dlq, "Granting permissions to the dead-letter queue": "To successfully deliver events to the queue,
    # EventBridge must have permission to do so" (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-dlq.html).
    from idemflow.engine.services.events.service import Events

    engine = engine_for(
        both(
            without_role_statement("EventRuleRole", "StartTheIntake"),
            without_queue_policy_statement("DoorDeadLetterQueuePolicy", "EventRuleDeadLetters"),
        ),
        parameter_overrides={"EventFrontDoor": "true"},
    )
    assert engine.stack is not None
    detail = {"idempotencyKey": "order-1", "payload": PAYLOAD}
    engine.http_client("events").put_events(
        Entries=[{"Source": "shop.orders", "DetailType": "IdempotentRequest", "Detail": json.dumps(detail)}]
    )
    stats = engine.service(Events).stats
    wait_until(lambda: stats.failed_to_dead_letter, 30, what="the event refused by the dead-letter queue")
    assert (stats.delivered, stats.dead_lettered) == (0, 0)
    sqs = engine.http_client("sqs")
    assert sqs.receive_message(QueueUrl=engine.stack.outputs["DoorDeadLetterQueueUrl"]).get("Messages") is None


def test_a_role_without_sns_publish_fails_an_sns_task_as_sns_names_its_denial(
    engine_for: Callable[..., Engine],
) -> None:
    # SNS answers a denial with its AuthorizationError (403), a code its SDK has a class for; an optimized SNS
    # task's errors are SNS.<code>Exception, recorded on AWS in LocalStack's tests/aws/services/stepfunctions/v2/
    # services/test_sns_task_service.snapshot.json: "error": "SNS.NotFoundException" with the cause "... (Service:
    # AmazonSNS; Status Code: 404; Error Code: NotFound; ...)", and SNS.InvalidParameterException alike.
    engine = engine_for(lambda template: None, parameter_overrides=TOPIC_DOOR)
    assert engine.stack is not None
    topic = engine.stack.outputs["RequestTopicArn"]
    role = f"{engine.stack_name}-IdempotentStateMachineRole"  # its policies grant no sns:Publish
    assert not any("sns:" in json.dumps(s) for s in _statements(load_template(TEMPLATE_PATH), "IdempotentStateMachine"))
    sfn = engine.client("stepfunctions")
    publish = {"Type": "Task", "Resource": "arn:aws:states:::sns:publish", "End": True}
    publish["Parameters"] = {"TopicArn": topic, "Message": "m"}
    machine = sfn.create_state_machine(
        name="publisher",
        definition=json.dumps({"StartAt": "Publish", "States": {"Publish": publish}}),
        roleArn=f"arn:aws:iam::123456789012:role/{role}",
    )["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=machine)["executionArn"]
    wait_until(lambda: sfn.describe_execution(executionArn=execution)["status"] != "RUNNING", 30, what="its end")

    described = sfn.describe_execution(executionArn=execution)
    assert (described["status"], described["error"]) == ("FAILED", "SNS.AuthorizationErrorException")
    assert re.match(_denial(role, "[A-Za-z]{32}", "sns:Publish", topic), described["cause"])
    assert "(Service: AmazonSNS; Status Code: 403; Error Code: AuthorizationError;" in described["cause"]


def with_function_policies(function: str, *policies: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    """SAM policy templates (or statements) added to a function's ``Policies``."""

    def edit(template: dict[str, Any]) -> None:
        template["Resources"][function]["Properties"].setdefault("Policies", []).extend(policies)

    return edit


def test_a_function_role_without_sqs_send_message_is_refused_as_sqs_refuses_it(
    engine_for: Callable[..., Engine],
) -> None:
    # SQS's denial (idemflow/engine/services/iam/endpoint.py's docstring cites the records): AccessDenied, 403, the
    # action in lower case; a SendMessageBatch is refused as sqs:sendmessage (aws/serverless-application-model
    # issue 3633).
    engine = engine_for(lambda template: None, parameter_overrides=TOPIC_DOOR)
    assert engine.stack is not None
    as_clock, clock = _as_function(engine, "ClockFunction", "sqs")
    url = engine.stack.outputs["RequestQueueUrl"]
    arn = f"arn:aws:sqs:{engine.region}:123456789012:{url.rsplit('/', 1)[1]}"
    sends: list[Callable[[], Any]] = [
        lambda: as_clock.send_message(QueueUrl=url, MessageBody="m"),
        lambda: as_clock.send_message_batch(QueueUrl=url, Entries=[{"Id": "1", "MessageBody": "m"}]),
    ]
    for send in sends:
        with pytest.raises(ClientError) as refused:
            send()
        assert refused.value.response["Error"]["Code"] == "AccessDenied"
        assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
        denial = _denial(f"{engine.stack_name}-ClockFunctionRole", re.escape(clock), "sqs:sendmessage", arn)
        assert re.fullmatch(denial, refused.value.response["Error"]["Message"])
    attributes = engine.http_client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (attributes["ApproximateNumberOfMessages"], attributes["ApproximateNumberOfMessagesNotVisible"]) == (
        "0",
        "0",
    )


def test_a_function_role_without_sns_publish_is_refused_as_sns_refuses_it(engine_for: Callable[..., Engine]) -> None:
    # SNS's denial (the same docstring): AuthorizationError, 403, the action written SNS:Publish.
    engine = engine_for(lambda template: None, parameter_overrides=TOPIC_DOOR)
    assert engine.stack is not None
    as_clock, clock = _as_function(engine, "ClockFunction", "sns")
    topic = engine.stack.outputs["RequestTopicArn"]
    with pytest.raises(ClientError) as refused:
        as_clock.publish(TopicArn=topic, Message=json.dumps({"idempotencyKey": "order-1", "payload": PAYLOAD}))
    assert refused.value.response["Error"]["Code"] == "AuthorizationError"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    denial = _denial(f"{engine.stack_name}-ClockFunctionRole", re.escape(clock), "SNS:Publish", topic)
    assert re.fullmatch(denial, refused.value.response["Error"]["Message"])
    url = engine.stack.outputs["RequestQueueUrl"]  # the topic's subscribed queue: nothing was published
    attributes = engine.http_client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (attributes["ApproximateNumberOfMessages"], attributes["ApproximateNumberOfMessagesNotVisible"]) == (
        "0",
        "0",
    )
    intake = engine.stack.outputs["IntakeStateMachineArn"]
    assert engine.client("stepfunctions").list_executions(stateMachineArn=intake)["executions"] == []


def test_a_function_role_granted_the_send_and_the_publish_makes_both(engine_for: Callable[..., Engine]) -> None:
    engine = engine_for(
        with_function_policies(
            "ClockFunction",
            {"SQSSendMessagePolicy": {"QueueName": {"Fn::GetAtt": ["DoorDeadLetterQueue", "QueueName"]}}},
            {"SNSPublishMessagePolicy": {"TopicName": {"Fn::GetAtt": ["DoorTopic", "TopicName"]}}},
        ),
        parameter_overrides=TOPIC_DOOR,
    )
    assert engine.stack is not None
    as_clock_sqs, _ = _as_function(engine, "ClockFunction", "sqs")
    as_clock_sns, _ = _as_function(engine, "ClockFunction", "sns")
    dead_letters = engine.stack.outputs["DoorDeadLetterQueueUrl"]
    as_clock_sqs.send_message_batch(QueueUrl=dead_letters, Entries=[{"Id": "1", "MessageBody": "m"}])
    as_clock_sns.publish(
        TopicArn=engine.stack.outputs["RequestTopicArn"],
        Message=json.dumps({"idempotencyKey": "order-1", "payload": PAYLOAD}),
    )
    intake = engine.stack.outputs["IntakeStateMachineArn"]
    sfn = engine.client("stepfunctions")
    wait_until(  # the publish reached the door: the intake ran the workflow (and ended before the engine stops)
        lambda: sfn.list_executions(stateMachineArn=intake, statusFilter="SUCCEEDED")["executions"],
        30,
        what="the intake to run the workflow",
    )
    with pytest.raises(ClientError, match="AccessDenied"):  # its grants name the dead-letter queue only
        as_clock_sqs.send_message(QueueUrl=engine.stack.outputs["RequestQueueUrl"], MessageBody="m")
    received = engine.http_client("sqs").receive_message(QueueUrl=dead_letters)["Messages"]
    assert [m["Body"] for m in received] == ["m"]
