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
SDK's base exception, but SNS, whose denial has a class (:data:`DENIALS`).

An ``aws-sdk:<service>:<action>`` task makes the call ``<IAM prefix>:<Action>`` ("AWS SDK service integrations":
https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html; IAM's prefix is the Service
Authorization Reference's where it differs from the SDK's name: ``sfn`` is ``states``, ``eventbridge`` is
``events``) on the resource its parameters name, as :func:`~idemflow.engine.services.iam.requests.resources` reads
them. Its failure is named as Step Functions names an SDK task's errors, ``<Service>.<Exception>`` in Pascal case
with the AWS SDK for Java 2.x's class for the error (that page; recorded on AWS in LocalStack's AWS-validated
tests/aws/services/stepfunctions/v2/error_handling/test_aws_sdk.snapshot.json, ``test_dynamodb_invalid_param``:
``"error": "DynamoDb.DynamoDbException"``, ``"cause": "<message> (Service: DynamoDb, Status Code: 400, Request ID:
<id>)"``, and ``SecretsManager.SecretsManagerException`` alike). A code the service's model has no shape for
(DynamoDB's, Lambda's, SQS's and Step Functions' AccessDeniedException: botocore's models of those services list
none) falls back to the service's base class, ``DynamoDb.DynamoDbException``; EventBridge and Kinesis model
``AccessDeniedException``, SNS names its denial ``AuthorizationError`` (:data:`SDK_DENIALS`). Any other SDK service
is not decided (logged once).

An HTTP Task (``arn:aws:states:::http:invoke``) needs, under the state machine's role ("Call HTTPS APIs in Step
Functions workflows", IAM permissions to run an HTTP Task:
https://docs.aws.amazon.com/step-functions/latest/dg/call-https-apis.html): ``states:InvokeHTTPEndpoint`` on the
state machine, with the condition keys ``states:HTTPEndpoint`` (the task's ``ApiEndpoint``) and
``states:HTTPMethod``; ``events:RetrieveConnectionCredentials`` on its connection; ``secretsmanager:GetSecretValue``
and ``secretsmanager:DescribeSecret`` on the connection's secret. A denied InvokeHTTPEndpoint fails
``States.Permissions`` (the predefined error of a task "with insufficient privileges", Amazon States Language,
Appendix A) with the cause AWS writes, recorded in serverless-operations/serverless-step-functions issue 599:
"AWS Step Functions is not authorized to perform states:InvokeHTTPEndpoint on API Endpoint <endpoint>. Ensure that
the StateMachine role contains the states:InvokeHTTPEndpoint permission for the given API Endpoint". A denied
connection or secret fails ``Events.ConnectionResource.AccessDenied`` (the page's "Connection errors"), with IAM's
denial as the cause. The request is not sent.

A ``.sync`` or ``.sync:2`` ``states:startExecution`` task watches its child with ``states:DescribeExecution`` on the
child's execution ARN (the policies of "IAM policies for starting Step Functions executions", Synchronous, in
connect-stepfunctions.html and stepfunctions-iam.html): decided each time the task looks at its child, a denial
fails the task as the StartExecution one does, the child left running.

A task in a mocked test case (``MockConfigFile.json``) makes no call, and is not decided, as on Step Functions Local.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Final, cast

from idemflow.engine import state as engine_state
from idemflow.engine.services.iam.requests import action_name, resources, undecided

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch


#: Step Functions' integration name -> (the error's prefix and class, the SDK's service name, the HTTP status of
#: the service's denial, its error code). SNS names its denial ``AuthorizationError``, a code its model has a class
#: for, so the error is that class: an optimized SNS task's errors are ``SNS.<code>Exception``, recorded on AWS in
#: LocalStack's tests/aws/services/stepfunctions/v2/services/test_sns_task_service.snapshot.json
#: (``SNS.NotFoundException`` for "Error Code: NotFound", ``SNS.InvalidParameterException`` for InvalidParameter).
DENIALS: Final[dict[str, tuple[str, str, int, str]]] = {
    "dynamodb": ("DynamoDB.AmazonDynamoDBException", "AmazonDynamoDBv2", 400, "AccessDeniedException"),
    "lambda": ("Lambda.AWSLambdaException", "AWSLambda", 403, "AccessDeniedException"),
    "sqs": ("SQS.AmazonSQSException", "AmazonSQS", 403, "AccessDeniedException"),
    "sns": ("SNS.AuthorizationErrorException", "AmazonSNS", 403, "AuthorizationError"),
    "states": ("StepFunctions.AWSStepFunctionsException", "AWSStepFunctions", 400, "AccessDeniedException"),
    "events": ("EventBridge.AmazonEventBridgeException", "AmazonEventBridge", 400, "AccessDeniedException"),
}
#: An ``aws-sdk:<service>`` task's service -> (IAM's prefix, Step Functions' Pascal-case name of the service, the
#: SDK for Java 2.x's class for the service's AccessDeniedException, its HTTP status).
SDK_DENIALS: Final[dict[str, tuple[str, str, str, int]]] = {
    "dynamodb": ("dynamodb", "DynamoDb", "DynamoDbException", 400),
    "lambda": ("lambda", "Lambda", "LambdaException", 403),
    "sqs": ("sqs", "Sqs", "SqsException", 403),
    "sns": ("sns", "Sns", "AuthorizationErrorException", 403),
    "sfn": ("states", "Sfn", "SfnException", 400),
    "eventbridge": ("events", "EventBridge", "AccessDeniedException", 400),
    "kinesis": ("kinesis", "Kinesis", "AccessDeniedException", 400),
}
_DECIDED: Final = frozenset(DENIALS) | {prefix for prefix, *_ in SDK_DENIALS.values()}
HTTP_CONNECTION_DENIED: Final = "Events.ConnectionResource.AccessDenied"
SYNC_RULE: Final = "StepFunctionsGetEventsForStepFunctionsExecutionRule"
#: The parameters that name what a single-resource task acts on: the calls are kept per their values.
_NAMING: Final = frozenset(
    {
        "tablename",
        "indexname",
        "functionname",
        "qualifier",
        "queueurl",
        "queuename",
        "topicarn",
        "targetarn",
        "statemachinearn",
        "executionarn",
        "streamarn",
        "streamname",
    }
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
    """``(IAM action, resource ARN)`` of each call a task of ``service`` (IAM's prefix) and ``action`` makes with
    ``params``; None when the task is not decided here."""
    if service not in _DECIDED:
        return None
    found = resources(service, action, params, region, account)
    if found is None:
        return None
    made = [(action_name(service, action), arn) for arn in found]
    if service == "states" and condition is not None:
        rule = f"arn:aws:events:{region}:{account}:rule/{SYNC_RULE}"
        made += [(f"events:{name}", rule) for name in ("PutTargets", "PutRule", "DescribeRule")]
    return made


def http_calls(
    params: dict[str, Any], state_machine_arn: str
) -> tuple[tuple[str, str, dict[str, str]], list[tuple[str, str]]] | None:
    """An HTTP Task's calls: (``states:InvokeHTTPEndpoint`` on the state machine with its condition keys), then the
    connection's and its secret's; None when the task names no connection the engine keeps (it fails as it would
    without permissions)."""
    from idemflow.engine.services.stepfunctions.http_tasks import find_connection

    endpoint, method = params.get("ApiEndpoint"), params.get("Method")
    config = params.get("InvocationConfig") or params.get("Authentication") or {}
    arn = config.get("ConnectionArn") if isinstance(config, dict) else None
    if not isinstance(endpoint, str) or not isinstance(method, str) or not isinstance(arn, str):
        return None
    invoke = (
        "states:InvokeHTTPEndpoint",
        state_machine_arn,
        {"states:HTTPEndpoint": endpoint, "states:HTTPMethod": method.upper()},
    )
    try:
        connection = find_connection(arn)
    except Exception:  # the task itself fails as AWS fails it (ResourceNotFound ...)
        return invoke, []
    secret = str(getattr(connection, "secret_arn", "") or "")
    made = [("events:RetrieveConnectionCredentials", arn)]
    if secret:
        made += [("secretsmanager:GetSecretValue", secret), ("secretsmanager:DescribeSecret", secret)]
    return invoke, made


def install_task_permissions(patch: Patch) -> None:
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import (
        StateTaskService,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
        StateTaskServiceSfn,
    )

    def fail(task: Any, env: Any, error: str, cause: str) -> FailureEventException:
        name: Any = (
            StatesErrorName(typ=StatesErrorNameType.StatesPermissions)
            if error == "States.Permissions"
            else CustomErrorName(error)
        )
        return FailureEventException(
            FailureEvent(
                env=env,
                error_name=name,
                event_type=HistoryEventType.TaskFailed,
                event_details=cast(
                    Any,
                    {
                        "taskFailedEventDetails": TaskFailedEventDetails(
                            error=error,
                            cause=cause,
                            resource=task._get_sfn_resource(),
                            resourceType=task._get_sfn_resource_type(),
                        )
                    },
                ),
            )
        )

    def sdk_denial(service: str, message: str) -> tuple[str, str]:
        error, sdk, status, code = DENIALS[service]
        return error, (
            f"{message} (Service: {sdk}; Status Code: {status}; Error Code: {code}; "
            f"Request ID: {uuid.uuid4()}; Proxy: null)"
        )

    def decide_http(task: Any, env: Any, role: str, params: dict[str, Any], authorizer: Any) -> None:
        machine = str(env.states.context_object.context_object_data["StateMachine"]["Id"])
        found = http_calls(params, machine)
        if found is None:
            return
        (action, arn, keys), made = found
        decision = authorizer.decide(role, action, arn, **keys)
        if decision is not None and not decision.allowed:
            raise fail(
                task,
                env,
                "States.Permissions",
                f"AWS Step Functions is not authorized to perform states:InvokeHTTPEndpoint on API Endpoint "
                f"{keys['states:HTTPEndpoint']}. Ensure that the StateMachine role contains the "
                f"states:InvokeHTTPEndpoint permission for the given API Endpoint",
            )
        for action, arn in made:
            decision = authorizer.decide(role, action, arn)
            if decision is not None and not decision.allowed:
                raise fail(task, env, HTTP_CONNECTION_DENIED, decision.message)

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
        if service == "http":
            decide_http(self, env, state_credentials.role_arn, raw_parameters, authorizer)
            return
        sdk = SDK_DENIALS.get(self.resource.api_name) if service == "aws-sdk" else None
        prefix = sdk[0] if sdk is not None else service
        made = None
        if service != "aws-sdk" or sdk is not None:
            made = task_calls(
                prefix,
                self.resource.api_action,
                None if sdk is not None else self.resource.condition,
                raw_parameters,
                resource_runtime_part.region,
                resource_runtime_part.account,
            )
        if made is None:
            what = f"aws-sdk:{self.resource.api_name}" if service == "aws-sdk" else service
            undecided(f"{what}:{self.resource.api_action} tasks")
            return
        for action, arn in made:
            decision = authorizer.decide(state_credentials.role_arn, action, arn)
            if decision is None or decision.allowed:
                continue
            if sdk is not None:
                _, name, exception, status = sdk
                error = f"{name}.{exception}"
                cause = f"{decision.message} (Service: {name}, Status Code: {status}, Request ID: {uuid.uuid4()})"
            else:
                error, cause = sdk_denial(service, decision.message)
            raise fail(self, env, error, cause)

    def watching(build: Any) -> Any:
        """A ``.sync`` task's look at its child is a DescribeExecution on the child, under the task's role."""

        def _build(self: Any, env: Any, *args: Any, **kwargs: Any) -> Any:
            submitted = env.stack[-1]
            child = str(submitted.get("ExecutionArn") or submitted.get("executionArn") or "")
            credentials = kwargs.get("state_credentials") or (args[2] if len(args) > 2 else None)
            role = getattr(credentials, "role_arn", None)
            resolve = build(self, env, *args, **kwargs)
            authorizer = engine_state.current().authorizer
            if authorizer is None or env.is_mocked_mode() or not child or not role:
                return resolve

            def resolver() -> Any:
                decision = authorizer.decide(role, "states:DescribeExecution", child)
                if decision is not None and not decision.allowed:
                    raise fail(self, env, *sdk_denial("states", decision.message))
                return resolve()

            return resolver

        return _build

    patch.set(StateTaskService, "_before_eval_execution", _before_eval_execution)
    for name in ("_build_sync_resolver", "_build_sync2_resolver"):
        patch.set(StateTaskServiceSfn, name, watching(getattr(StateTaskServiceSfn, name)))
