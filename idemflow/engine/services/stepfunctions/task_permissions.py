"""A task runs under its state machine's role (``task-permissions``): each call it makes is decided against that
role's policies, and a denied one fails the task as it fails on AWS.

The role is the execution's (``$$.Execution.RoleArn``), or the state's ``Credentials.RoleArn`` when it gives one.
The calls a task makes are those the Step Functions Developer Guide lists for its integration ("IAM policies for
calling <service>" under each optimized integration):

- ``dynamodb:<getItem|putItem|updateItem|deleteItem>``: that action on the table;
- ``lambda:invoke``: ``lambda:InvokeFunction`` on the function, qualified as the task names it;
- ``sqs:sendMessage``, ``sns:publish``, ``events:putEvents``: ``sqs:SendMessage`` on the queue, ``sns:Publish`` on
  the topic, ``events:PutEvents`` on each entry's bus;
- ``states:startExecution`` (and ``.sync``, ``.sync:2``): ``states:StartExecution`` on the state machine; a
  ``.sync`` task also ``events:PutTargets``, ``events:PutRule`` and ``events:DescribeRule`` on the rule Step
  Functions manages for it (``StepFunctionsGetEventsForStepFunctionsExecutionRule``), which it creates before it
  starts the child ("Additional permissions for tasks using .sync" and the policies of
  connect-stepfunctions.html).

A denial fails the task after its ``TaskScheduled`` and ``TaskStarted`` events, with the error the service's SDK for
Java names an ``AccessDeniedException`` that its model has no class for, and the SDK's message as the cause.
Recorded on AWS (issue 460 of awslabs/aws-deployment-framework, an execution's TaskFailed):
``"error": "Lambda.AWSLambdaException"``, ``"cause": "User: arn:aws:sts::<account>:assumed-role/<role>/<32
letters> is not authorized to perform: lambda:InvokeFunction on resource: <function ARN> because no identity-based
policy allows the lambda:InvokeFunction action (Service: AWSLambda; Status Code: 403; Error Code:
AccessDeniedException; Request ID: <id>; Proxy: null)"``. For DynamoDB the same class rule gives
``DynamoDB.AmazonDynamoDBException`` (recorded for a ValidationException in LocalStack's AWS-validated
test_task_service_dynamodb.snapshot.json; the SDK's AccessDeniedException text "com.amazonaws.services.dynamodbv2
.model.AmazonDynamoDBException: User: ... (Service: AmazonDynamoDBv2; Status Code: 400; Error Code:
AccessDeniedException ...)" in aws-sam's and others' reports). The other services follow the same rule, with their
SDK's base exception (:data:`DENIALS`).

A task in a mocked test case (``MockConfigFile.json``) makes no call, and is not decided, as on Step Functions Local.
An ``aws-sdk:*`` or ``http:invoke`` task is not decided yet: the engine logs it once per action.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Final, cast

from idemflow.engine import state as engine_state
from idemflow.engine.services.iam.requests import action_name, resources, undecided

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch


#: Step Functions' integration name -> (the error's prefix and class, the SDK's service name, the HTTP status of
#: the service's AccessDeniedException).
DENIALS: Final[dict[str, tuple[str, str, int]]] = {
    "dynamodb": ("DynamoDB.AmazonDynamoDBException", "AmazonDynamoDBv2", 400),
    "lambda": ("Lambda.AWSLambdaException", "AWSLambda", 403),
    "sqs": ("SQS.AmazonSQSException", "AmazonSQS", 403),
    "sns": ("SNS.AmazonSNSException", "AmazonSNS", 403),
    "states": ("StepFunctions.AWSStepFunctionsException", "AWSStepFunctions", 400),
    "events": ("EventBridge.AmazonEventBridgeException", "AmazonEventBridge", 400),
}
SYNC_RULE: Final = "StepFunctionsGetEventsForStepFunctionsExecutionRule"
#: The parameters that name what a single-resource task acts on: the calls are kept per their values.
_NAMING: Final = frozenset(
    {"tablename", "indexname", "functionname", "qualifier", "queueurl", "topicarn", "targetarn", "statemachinearn"}
)
_MANY: Final = frozenset({"requestitems", "transactitems", "entries"})
_known: dict[tuple[Any, ...], list[tuple[str, str]] | None] = {}
MAX_KNOWN: Final = 4096


def task_calls(
    service: str, action: str, condition: str | None, params: dict[str, Any], region: str, account: str
) -> list[tuple[str, str]] | None:
    """:func:`calls`, kept per task kind and the parameters that name its resource (a task's calls are found for
    each of its runs)."""
    names = [str(k).lower() for k in params]
    if _MANY.intersection(names):
        return calls(service, action, condition, params, region, account)
    key = (service, action, condition, region, account, *((k, str(params[k])) for k in params if k.lower() in _NAMING))
    if key in _known:
        return _known[key]
    made = calls(service, action, condition, params, region, account)
    if len(_known) < MAX_KNOWN:
        _known[key] = made
    return made


def calls(
    service: str, action: str, condition: str | None, params: dict[str, Any], region: str, account: str
) -> list[tuple[str, str]] | None:
    """``(IAM action, resource ARN)`` of each call a task of ``service`` and ``action`` makes with ``params``; None
    when the task is not decided here."""
    if service not in DENIALS:
        return None
    found = resources(service, action, params, region, account)
    if found is None:
        return None
    made = [(action_name(service, action), arn) for arn in found]
    if service == "states" and condition is not None:
        rule = f"arn:aws:events:{region}:{account}:rule/{SYNC_RULE}"
        made += [(f"events:{name}", rule) for name in ("PutTargets", "PutRule", "DescribeRule")]
    return made


def install_task_permissions(patch: Patch) -> None:
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import (
        StateTaskService,
    )

    original = StateTaskService._before_eval_execution

    def _before_eval_execution(
        self: Any, env: Any, resource_runtime_part: Any, raw_parameters: dict[str, Any], state_credentials: Any
    ) -> None:
        original(
            self,
            env=env,
            resource_runtime_part=resource_runtime_part,
            raw_parameters=raw_parameters,
            state_credentials=state_credentials,
        )
        authorizer = engine_state.current().authorizer
        if authorizer is None or env.is_mocked_mode():
            return
        service = self.resource.service_name
        made = task_calls(
            service,
            self.resource.api_action,
            self.resource.condition,
            raw_parameters,
            resource_runtime_part.region,
            resource_runtime_part.account,
        )
        if made is None:
            undecided(f"{service}:{self.resource.api_action} tasks")
            return
        for action, arn in made:
            decision = authorizer.decide(state_credentials.role_arn, action, arn)
            if decision is None or decision.allowed:
                continue
            error, sdk, status = DENIALS[service]
            cause = (
                f"{decision.message} (Service: {sdk}; Status Code: {status}; Error Code: AccessDeniedException; "
                f"Request ID: {uuid.uuid4()}; Proxy: null)"
            )
            raise FailureEventException(
                FailureEvent(
                    env=env,
                    error_name=CustomErrorName(error),
                    event_type=HistoryEventType.TaskFailed,
                    event_details=cast(
                        Any,
                        {
                            "taskFailedEventDetails": TaskFailedEventDetails(
                                error=error,
                                cause=cause,
                                resource=self._get_sfn_resource(),
                                resourceType=self._get_sfn_resource_type(),
                            )
                        },
                    ),
                )
            )

    patch.set(StateTaskService, "_before_eval_execution", _before_eval_execution)
