"""Lambda: the template's functions, registered in moto and run by the engine's local runtime
(:class:`~idemflow.engine.services.lambda_.runtime.LambdaRuntime`, worker processes running the real handlers)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Final

from idemflow.engine.errors import EngineError
from idemflow.engine.services.base import Service
from idemflow.engine.services.iam.service import Iam
from idemflow.engine.services.lambda_.runtime import Function, LambdaRuntime
from idemflow.engine.state import EngineState
from idemflow.template import Resolver, ResourceType, Stack, TemplateError, cfn_string, integer, mapping

# IAM's service prefixes that are not botocore's service names (Service Authorization Reference).
_SDK_NAMES: Final = {"states": "stepfunctions", "execute-api": "apigateway"}
# SAM's policy templates by the service of their name ("AWS SAM policy templates" table): DynamoDBCrudPolicy, ...
_POLICY_TEMPLATE_SERVICES: Final = (
    ("DynamoDB", "dynamodb"),
    ("SQS", "sqs"),
    ("SNS", "sns"),
    ("S3", "s3"),
    ("StepFunctions", "stepfunctions"),
    ("Lambda", "lambda"),
    ("EventBridge", "events"),
    ("Kinesis", "kinesis"),
    ("SES", "ses"),
    ("SSM", "ssm"),
    ("KMS", "kms"),
)
_ACTION = re.compile(r"([a-z0-9-]+):[A-Za-z*]+")


def sdk_services(policies: Any) -> tuple[str, ...]:
    """The services ``policies`` (a function's ``Policies``, as written) let it call: the prefix of each action of
    its statements (both branches of a condition) and the service of each SAM policy template, by botocore's names.
    Only a hint of what to load ahead (:attr:`Function.sdk_services`): anything else in it is passed over."""
    found: set[str] = set()

    def walk(node: Any, in_action: bool = False) -> None:
        if isinstance(node, dict):
            for name, value in node.items():
                for prefix, service in _POLICY_TEMPLATE_SERVICES:
                    if name.startswith(prefix) and name.endswith("Policy"):
                        found.add(service)
                walk(value, in_action or name == "Action")
        elif isinstance(node, list):
            for item in node:
                walk(item, in_action)
        elif isinstance(node, str) and in_action:
            action = _ACTION.fullmatch(node)
            if action is not None:
                found.add(_SDK_NAMES.get(action.group(1), action.group(1)))

    walk(policies)
    return tuple(sorted(found))


def read_function(r: Resolver, lid: str, props: dict[str, Any], where: str) -> Function:
    """A function from its properties, already merged with Globals (so a Globals value is resolved here too)."""
    env = mapping(r.setting(props, "Environment", where, {}), f"{where}.Environment")
    variables = mapping(env.get("Variables", {}), f"{where}.Environment.Variables")
    code_uri = cfn_string(r.setting(props, "CodeUri", where), f"{where}.CodeUri")
    code_dir = (r.base / code_uri).resolve()
    if not code_dir.is_dir():
        raise TemplateError(f"{where}.CodeUri: {code_uri} is not a directory next to the template")
    return Function(
        logical_id=lid,
        name=r.name(lid),
        arn=r.arn(lid),
        code_dir=code_dir,
        handler=cfn_string(r.setting(props, "Handler", where), f"{where}.Handler"),
        runtime=cfn_string(r.setting(props, "Runtime", where, "python3.12"), f"{where}.Runtime"),
        timeout=integer(r.setting(props, "Timeout", where, 3), f"{where}.Timeout"),
        memory_mb=integer(r.setting(props, "MemorySize", where, 128), f"{where}.MemorySize"),
        environment={k: cfn_string(v, f"{where}.Environment.Variables.{k}") for k, v in variables.items()},
        sdk_services=sdk_services(props.get("Policies")),
    )


_FUNCTION_ARN = "arn:aws:lambda:{region}:{account}:function:{name}"


class Lambda(Service):
    name = "lambda"
    # AWS::Serverless::Function and AWS::Lambda::Function, "Return values": Ref is the function name.
    resource_types = (
        ResourceType("AWS::Serverless::Function", read_function, name_property="FunctionName", arn=_FUNCTION_ARN),
        ResourceType(
            "AWS::Lambda::Function",
            name_property="FunctionName",
            arn=_FUNCTION_ARN,
            why_not_served="only AWS::Serverless::Function runs locally (its CodeUri is a folder)",
        ),
        # AWS::Serverless::LayerVersion, "Return values": Ref is the layer version's ARN.
        ResourceType(
            "AWS::Serverless::LayerVersion",
            name_property="LayerName",
            arn="arn:aws:lambda:{region}:{account}:layer:{name}:1",
            ref="arn",
            why_not_served="handlers run with the project's environment, which pins what the layer holds",
        ),
    )
    moto_backends = ("lambda",)
    runtime: LambdaRuntime | None = None

    def open(self) -> None:
        context = self.context
        self.runtime = LambdaRuntime(
            context.endpoint_url,
            context.region,
            context.faults,
            max_workers_per_function=context.settings.max_workers_per_function,
            timeout_scale=context.settings.lambda_timeout_scale,
        )

    def attach(self, state: EngineState) -> EngineState:
        return dataclasses.replace(state, lambda_runtime=self.runtime)  # moto's Invoke reaches the runtime

    def deploy(self, stack: Stack) -> None:

        assert self.runtime is not None
        lam = self.context.client("lambda")
        iam = self.context.service(Iam)
        for path, fn in [(path, fn) for path, nested in stack.stacks() for fn in nested.models(Function).values()]:
            role_arn = iam.role_arn_of(path, fn.logical_id)
            fn = dataclasses.replace(fn, access_key=iam.access_key_of(path, fn.logical_id, fn.name))
            module = fn.handler.rpartition(".")[0].replace(".", "/")
            if not (fn.code_dir / f"{module}.py").exists() and not (fn.code_dir / module).is_dir():
                raise EngineError(
                    f"Resources.{fn.logical_id}.Handler: no module {module}.py in {fn.code_dir}: fix Handler or CodeUri"
                )
            lam.create_function(
                FunctionName=fn.name,
                Runtime=fn.runtime,
                Role=role_arn,
                Handler=fn.handler,
                Code={"ZipFile": b"local"},
                Timeout=fn.timeout,
                MemorySize=fn.memory_mb,
                Environment={"Variables": fn.environment},
            )
            self.runtime.register(fn, warm=self.context.settings.warm)

    def stop(self) -> None:
        if self.runtime is not None:
            self.runtime.close()
            self.runtime = None
