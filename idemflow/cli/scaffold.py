"""``idemflow init``: a new project around the user's own side effect, in one command.

It writes a SAM template that nests the workflow (``AWS::Serverless::Application`` whose ``Location`` is
``workflow/template.yaml``: a copy of the workflow the installed package ships, without its example side
effect, and the definitions and functions that copy reads; or, with ``--application-id``, the workflow
published in the Serverless Application Repository at the installed package's version, which the embedded
engine nests from the package) around the new project's side effect: a function (``--function-name``) or a
state machine (``--state-machine-name``), with a skeleton that keeps the side-effect contract and writes a
table of the project's under a role that may do exactly that, an event, and a pytest test that deploys the
template on the embedded engine. The copy is the version ``init`` was run with; ``idemflow init`` into an
empty folder writes a newer one.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shlex
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any, TextIO

import yaml

from idemflow.cli.errors import EXIT_USAGE, CliError
from idemflow.template import TemplateError, load_template, published_as, published_workflow
from idemflow.template.sam import SAR_APPLICATION
from idemflow.workflow import TEMPLATE_NAME, packaged_workflow

NAME_PATTERN = re.compile(r"[A-Z][A-Za-z0-9]{0,39}")
"""The side effect's logical id in the template: CloudFormation's alphanumerics, capitalised."""

FUNCTION, STATE_MACHINE = "function", "stateMachine"
"""The kinds of side effect a project is made around."""

KIND_OPTIONS = {FUNCTION: "--function-name", STATE_MACHINE: "--state-machine-name"}
"""The option that names each kind's side effect."""

WORKFLOW_FOLDER = "workflow"
"""Where ``init`` puts the copy of the workflow, beside the new project's template."""

DEFINITION = "statemachine/side_effect.asl.json"
"""Where a state-machine project's definition is, beside its template."""


def _yaml_string(value: str) -> str:
    """``value`` as a YAML double-quoted string: unquoted, YAML 1.1 reads ``yes`` as true, ``0755`` as 493,
    ``null`` as nothing, and cuts a path at `` #``."""
    return json.dumps(value)


def _location(location: str | tuple[str, str]) -> str:
    """The application's ``Location`` after its key: a path next to the template, or (ApplicationId,
    SemanticVersion) as a mapping, its lines indented as the template's source below is (dedent removes 8)."""
    if isinstance(location, str):
        return " " + _yaml_string(location)
    application_id, version = location
    indent = " " * 16
    return f"\n{indent}ApplicationId: {_yaml_string(application_id)}\n{indent}SemanticVersion: {_yaml_string(version)}"


def side_effect_id(name: str, kind: str) -> str:
    """The side effect's logical id in the project's template."""
    return f"{name}Function" if kind == FUNCTION else f"{name}StateMachine"


def _side_effect(name: str, kind: str) -> str:
    """The side effect's resource, its role's one grant in it (``<name>Writes``: PutItem on the project's table),
    its lines indented as the template's source below is (dedent removes 8)."""
    if kind == FUNCTION:
        resource = f"""\
          {name}Function:
            Type: AWS::Serverless::Function
            Properties:
              CodeUri: src/
              Handler: app.lambda_handler
              Runtime: python3.12
              Architectures: [arm64]
              MemorySize: 128
              Timeout: 10
              Environment:
                Variables:
                  TABLE_NAME: !Ref {name}Table
"""
    else:
        resource = f"""\
          {name}StateMachine:
            Type: AWS::Serverless::StateMachine
            Properties:
              Type: STANDARD
              DefinitionUri: {DEFINITION}
              DefinitionSubstitutions:
                TableName: !Ref {name}Table
"""
    return (
        resource
        + f"""\
              # Exactly what it calls: a call its role does not allow is refused (AccessDeniedException).
              Policies:
                - Statement:
                    - Sid: {name}Writes
                      Effect: Allow
                      Action: dynamodb:PutItem
                      Resource: !GetAtt {name}Table.Arn"""
    )


def _template(name: str, kind: str, scope: str, location: str | tuple[str, str]) -> str:
    if kind == FUNCTION:
        parameter, value = "SideEffectFunctionArn", f"!GetAtt {name}Function.Arn"
    else:
        parameter, value = "SideEffectStateMachineArn", f"!Ref {name}StateMachine"
    return textwrap.dedent(
        f"""\
        AWSTemplateFormatVersion: "2010-09-09"
        Transform: AWS::Serverless-2016-10-31
        Description: >
          {name} runs at most once per idempotency key: the idempotent workflow (nested from workflow/) wraps it.

        Resources:
          # What the side effect writes, one row per idempotency key: replace it with your own effect.
          {name}Table:
            Type: AWS::DynamoDB::Table
            Properties:
              BillingMode: PAY_PER_REQUEST
              AttributeDefinitions:
                - AttributeName: idempotencyKey
                  AttributeType: S
              KeySchema:
                - AttributeName: idempotencyKey
                  KeyType: HASH
              SSESpecification:
                SSEEnabled: true
              PointInTimeRecoverySpecification:
                PointInTimeRecoveryEnabled: true

{_side_effect(name, kind)}

          IdempotentWorkflow:
            Type: AWS::Serverless::Application
            Properties:
              Location:{_location(location)}
              Parameters:
                {parameter}: {value}
                SideEffectTransientError: {_yaml_string(name + "UnavailableError")}
                WorkflowScope: {_yaml_string(scope)}

        Outputs:
          StateMachineArn:
            Description: "Start executions with {{\\"idempotencyKey\\": \\"...\\", \\"payload\\": {{...}}}}"
            Value: !GetAtt IdempotentWorkflow.Outputs.StateMachineArn
          IdempotencyTableName:
            Value: !GetAtt IdempotentWorkflow.Outputs.IdempotencyTableName
          {name}TableName:
            Value: !Ref {name}Table
        """
    )


def _function(name: str) -> str:
    return textwrap.dedent(
        f'''\
        """{name}: the side effect the idempotent workflow runs at most once per idempotency key.

        The side-effect contract (the workflow's docs/contract.md, "The side-effect contract"):

        * the event is {{"idempotencyKey", "payload", "executionId", "attempt"}};
        * return any JSON (well under 256 KiB): it is stored and replayed to every duplicate;
        * raise {name}UnavailableError when a retry may succeed (the template passes that name as
          SideEffectTransientError: the workflow retries it), and {name}RejectedError (or any other
          error of yours) only when nothing happened: the workflow then releases the key;
        * a response lost after your effect, or a lease that ends while this still runs, can invoke it
          again for the same key: guard the effect on ``idempotencyKey`` (a conditional write keyed on it,
          or Powertools' idempotent_function) if a second run would do harm.

        Its role (the template's {name}Writes) lets it write its table and nothing else: a call it does not
        allow is refused with AccessDeniedException, on AWS as on the embedded engine.
        """

        from __future__ import annotations

        import json
        import os
        from typing import Any

        import boto3
        from botocore.exceptions import ClientError

        DYNAMODB = boto3.client("dynamodb")
        TABLE_NAME = os.environ["TABLE_NAME"]
        # DynamoDB's errors worth a retry ("Error handling with DynamoDB",
        # https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html).
        RETRYABLE = {{
            "ProvisionedThroughputExceededException",
            "RequestLimitExceeded",
            "ThrottlingException",
            "InternalServerError",
        }}


        class {name}RejectedError(Exception):
            """The request can never succeed, and nothing was done: not retried, the key is released."""


        class {name}UnavailableError(Exception):
            """A failure worth retrying, before anything was done: the workflow retries it."""


        def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            payload = event.get("payload")
            if not isinstance(payload, dict):
                raise {name}RejectedError(f"payload must be a JSON object, got {{payload!r}}")
            # Your side effect goes here: send the email, ship the order, call the partner's API. This one writes
            # a row keyed on the idempotency key: run again for the same key, it writes the same row.
            item = {{"idempotencyKey": {{"S": event["idempotencyKey"]}}, "payload": {{"S": json.dumps(payload)}}}}
            try:
                DYNAMODB.put_item(TableName=TABLE_NAME, Item=item)
            except ClientError as exc:
                if exc.response["Error"]["Code"] in RETRYABLE:
                    raise {name}UnavailableError(str(exc)) from exc
                raise
            return {{"idempotencyKey": event["idempotencyKey"], "done": True}}
        '''
    )


def _definition(name: str) -> str:
    """The state machine a state-machine project starts from: a check of its input, one DynamoDB write (an
    optimized integration; any task Step Functions offers would do: SDK integrations, HTTP Tasks...), its result."""
    definition = {
        "Comment": (
            f"{name}: the side effect the idempotent workflow runs at most once per idempotency key (with "
            "startExecution.sync:2). Its input is {idempotencyKey, payload, executionId, attempt}; its output is "
            f"the result, stored and replayed to every duplicate. Fail with {name}UnavailableError when a retry "
            "may succeed (the template passes that name as SideEffectTransientError: the workflow runs this "
            f"again), and with {name}RejectedError (or any other error) only when nothing happened: the workflow "
            "then releases the key."
        ),
        "TimeoutSeconds": 60,
        "StartAt": "CheckPayload",
        "States": {
            "CheckPayload": {
                "Type": "Choice",
                "Comment": "A request that can never succeed fails before anything is done.",
                "Choices": [
                    {
                        "Or": [
                            {"Variable": "$.payload", "IsNull": True},
                            {"Variable": "$.payload", "IsString": True},
                            {"Variable": "$.payload", "IsNumeric": True},
                            {"Variable": "$.payload", "IsBoolean": True},
                        ],
                        "Next": "Rejected",
                    }
                ],
                "Default": "WriteRow",
            },
            "Rejected": {"Type": "Fail", "Error": f"{name}RejectedError", "Cause": "payload must be a JSON object"},
            "WriteRow": {
                "Type": "Task",
                "Comment": (
                    "Your side effect goes here. This one writes a row keyed on the idempotency key: run again for "
                    "the same key, it writes the same row."
                ),
                "Resource": "arn:aws:states:::dynamodb:putItem",
                "Parameters": {
                    "TableName": "${TableName}",
                    "Item": {
                        "idempotencyKey": {"S.$": "$.idempotencyKey"},
                        "payload": {"S.$": "States.JsonToString($.payload)"},
                    },
                },
                "ResultPath": None,
                "Catch": [
                    {
                        "ErrorEquals": [
                            "DynamoDB.ProvisionedThroughputExceededException",
                            "DynamoDB.RequestLimitExceededException",
                            "DynamoDB.InternalServerErrorException",
                        ],
                        "Next": "Unavailable",
                    }
                ],
                "Next": "Done",
            },
            "Unavailable": {
                "Type": "Fail",
                "Error": f"{name}UnavailableError",
                "Cause": "DynamoDB throttled or failed the write: the workflow runs this again",
            },
            "Done": {
                "Type": "Pass",
                "Parameters": {"idempotencyKey.$": "$.idempotencyKey", "done": True},
                "End": True,
            },
        },
    }
    return json.dumps(definition, indent=2) + "\n"


def _test(name: str, kind: str) -> str:
    counted = "its invocations" if kind == FUNCTION else "the state machine's executions"
    return textwrap.dedent(
        f'''\
        """{name} on the embedded engine: this project's template deployed as is (the workflow nested in it).

        Run with: python -m pytest
        """

        from __future__ import annotations

        import json
        import uuid
        from collections.abc import Iterator
        from pathlib import Path
        from typing import Any

        import pytest

        from idemflow.engine import Engine

        PROJECT = Path(__file__).resolve().parent.parent
        EVENT: dict[str, Any] = json.loads((PROJECT / "events" / "event.json").read_text())


        @pytest.fixture(scope="module")
        def engine() -> Iterator[Engine]:
            with Engine(PROJECT / "template.yaml", wait_time_scale=0) as running:
                yield running


        def row(engine: Engine, key: str) -> dict[str, Any] | None:
            """The row the side effect wrote for ``key`` (None: none)."""
            assert engine.stack is not None
            table = str(engine.stack.outputs["{name}TableName"])
            found = engine.client("dynamodb").get_item(TableName=table, Key={{"idempotencyKey": {{"S": key}}}})
            item: dict[str, Any] | None = found.get("Item")
            return item


        def test_it_runs_once_per_key_and_duplicates_get_the_same_result(engine: Engine) -> None:
            body = {{**EVENT, "idempotencyKey": f"test-{{uuid.uuid4()}}"}}

            first, duplicate = engine.run(body), engine.run(body)

            assert (first.status, first.replayed) == ("SUCCEEDED", False), first.cause
            assert (duplicate.status, duplicate.replayed) == ("SUCCEEDED", True)
            assert duplicate.output["result"] == first.output["result"]
            assert engine.workflow.side_effect_runs(body["idempotencyKey"]) == 1  # {counted}
            assert row(engine, body["idempotencyKey"]) is not None


        def test_a_rejected_request_releases_the_key(engine: Engine) -> None:
            key = f"test-{{uuid.uuid4()}}"

            outcome = engine.run({{"idempotencyKey": key, "payload": "not an object"}})

            assert (outcome.status, outcome.error) == ("FAILED", "{name}RejectedError")
            assert engine.workflow.record(key) is None
        '''
    )


def _permissions_test(name: str, kind: str) -> str:
    # A denied call as the workflow reports it: the function's botocore error, or the child's failed task (the
    # SDK for Java's class for an error code it has none for, as Step Functions names it).
    denied_error = "ClientError" if kind == FUNCTION else "DynamoDB.AmazonDynamoDBException"
    return textwrap.dedent(
        f'''\
        """{name}'s role on the embedded engine: each call is decided under the role SAM makes from the template, as
        AWS decides it, so a permission missing from the template fails here as it would after ``sam deploy``.

        Run with: python -m pytest
        """

        from __future__ import annotations

        import json
        import shutil
        import uuid
        from pathlib import Path
        from typing import Any

        from idemflow.engine import Engine
        from idemflow.template import load_template

        PROJECT = Path(__file__).resolve().parent.parent
        EVENT: dict[str, Any] = json.loads((PROJECT / "events" / "event.json").read_text())
        SIDE_EFFECT = "{side_effect_id(name, kind)}"
        GRANT = "{name}Writes"  # the statement of its role that lets it write its table


        def test_a_permission_removed_from_its_role_is_refused(tmp_path: Path) -> None:
            # A copy of this project without {name}Writes: the engine decides each call under the role SAM makes
            # from the template, as AWS does, so the side effect's write is refused.
            copy = tmp_path / "project"
            shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("tests", ".*", "__pycache__"))
            template = load_template(PROJECT / "template.yaml")
            properties = template["Resources"][SIDE_EFFECT]["Properties"]
            statements = [s for policy in properties.pop("Policies") for s in policy["Statement"]]
            kept = [s for s in statements if s.get("Sid") != GRANT]
            assert len(kept) == len(statements) - 1, f"{{SIDE_EFFECT}} has no statement {{GRANT}}"
            if kept:
                properties["Policies"] = [{{"Statement": kept}}]
            (copy / "template.yaml").write_text(json.dumps(template))  # SAM reads JSON as it reads YAML
            key = f"test-{{uuid.uuid4()}}"

            with Engine(copy / "template.yaml", wait_time_scale=0) as denied:
                outcome = denied.run({{**EVENT, "idempotencyKey": key}})

                assert (outcome.status, outcome.error) == ("FAILED", "{denied_error}")
                assert "is not authorized to perform: dynamodb:PutItem" in (outcome.cause or ""), outcome.cause
                assert denied.workflow.record(key) is None  # nothing happened: the key is released
                assert denied.stack is not None
                table = str(denied.stack.outputs["{name}TableName"])
                assert denied.client("dynamodb").scan(TableName=table)["Items"] == []
        '''
    )


EXAMPLE_CONDITIONS = ("CreateExampleSideEffect", "BuildPowertoolsLayer")
"""The packaged workflow's conditions that deploy its example side effect (the example function, the table it
writes, its Powertools layer): false in a project that passes its own function, so their resources go."""

EXAMPLE_PARAMETERS = ("PowertoolsPublicLayerVersion",)
"""Parameters of the example side effect only."""

SIDE_EFFECT_PARAMETERS = {FUNCTION: "SideEffectFunctionArn", STATE_MACHINE: "SideEffectStateMachineArn"}
"""The parameter that names each kind's side effect."""

REQUIRED_PARAMETERS = ("SideEffectTransientError", "WorkflowScope")
"""What the project's template always passes, besides its side effect: without the example, no default (the
example's) is right."""

LOCAL_PATHS = ("CodeUri", "ContentUri", "DefinitionUri")
"""The resource properties whose local paths ``sam build`` and the engine read beside the template."""


def _without_example(node: Any) -> Any:
    """``node`` with each ``Fn::If`` on an example condition replaced by its false branch."""
    if isinstance(node, dict):
        branches = node.get("Fn::If")
        if len(node) == 1 and isinstance(branches, list) and branches and branches[0] in EXAMPLE_CONDITIONS:
            return _without_example(branches[2])
        return {key: _without_example(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_without_example(value) for value in node]
    return node


def workflow_template(packaged: dict[str, Any], version: str, kind: str = FUNCTION) -> dict[str, Any]:
    """The packaged workflow's template as a project wrapping its own side effect of ``kind`` nests it: without
    the example function, the table it writes, its layer and their parameters and outputs (a project passes its
    own side effect, so they would never be deployed, but ``sam build`` would build them all the same), without
    the Serverless Application Repository entry (the copy is not the published application), and with the
    parameter naming the kind's side effect required (the other one stays empty)."""
    template = _without_example(packaged)
    metadata = {k: v for k, v in (template.get("Metadata") or {}).items() if k != SAR_APPLICATION}
    template.pop("Metadata", None)
    conditions = {k: v for k, v in template["Conditions"].items() if k not in EXAMPLE_CONDITIONS}
    resources = {k: v for k, v in template["Resources"].items() if (v or {}).get("Condition") not in EXAMPLE_CONDITIONS}
    outputs = {k: v for k, v in template["Outputs"].items() if (v or {}).get("Condition") not in EXAMPLE_CONDITIONS}
    parameters = {k: dict(v) for k, v in template["Parameters"].items() if k not in EXAMPLE_PARAMETERS}
    for name in (*REQUIRED_PARAMETERS, SIDE_EFFECT_PARAMETERS[kind]):
        parameters[name].pop("Default", None)
    parameters["SideEffectFunctionArn"]["Description"] = (
        "The function the workflow wraps (its ARN; a version or alias ARN is invoked as given). The state "
        "machine may invoke exactly this ARN."
        if kind == FUNCTION
        else "Empty: the workflow runs the state machine given as SideEffectStateMachineArn instead of a function."
    )
    described = (
        "the side-effecting function given as SideEffectFunctionArn"
        if kind == FUNCTION
        else "the side-effect state machine given as SideEffectStateMachineArn"
    )
    copy: dict[str, Any] = {
        "AWSTemplateFormatVersion": template["AWSTemplateFormatVersion"],
        "Transform": template["Transform"],
        "Description": (
            f"The idempotent workflow of idemflow {version}: {described} runs at most once per idempotency key."
        ),
    }
    if metadata:
        copy["Metadata"] = metadata
    rest = {k: v for k, v in template.items() if k not in {*copy, "Metadata", "Description"}}
    copy.update(rest)
    copy.update(Parameters=parameters, Conditions=conditions, Resources=resources, Outputs=outputs)
    return copy


class _LiteralDumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks (``|``), as the packaged template writes them."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_LiteralDumper.add_representer(str, _represent_str)


def _local_paths(template: dict[str, Any]) -> list[str]:
    """The local files and folders the template's resources name (their code, definitions)."""
    paths = []
    for resource in template["Resources"].values():
        for key in LOCAL_PATHS:
            value = (resource.get("Properties") or {}).get(key)
            if isinstance(value, str) and "://" not in value:
                paths.append(value.rstrip("/"))
    return sorted(set(paths))


def _copy_workflow(packaged: Path, workflow: Path, kind: str) -> None:
    """The packaged workflow as the project nests it (:func:`workflow_template`), with only the files that
    template reads: the definitions and the workflow's own functions, none of the example's code, events,
    layer or mutation-testing notes. Links are followed (a checkout links the package to the project's files)."""
    template = workflow_template(load_template(packaged / TEMPLATE_NAME), published_as()[1], kind)
    workflow.mkdir(parents=True)
    header = (
        f"# The idempotent workflow as idemflow {published_as()[1]} ships it, without its example side effect:\n"
        "# written by `idemflow init`; `idemflow init` into an empty folder writes a newer one.\n"
    )
    text = yaml.dump(template, Dumper=_LiteralDumper, sort_keys=False, width=120, allow_unicode=True)
    (workflow / TEMPLATE_NAME).write_text(header + text, encoding="utf-8")
    for relative in _local_paths(template):
        source, target = packaged / relative, workflow / relative
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "__init__.py"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


def scaffold(
    directory: Path, name: str, scope: str, application_id: str | None = None, kind: str = FUNCTION
) -> list[Path]:
    """Write the project around a side effect of ``kind`` into ``directory`` (which must be absent or empty); the
    files written. With ``application_id``, the template nests the published workflow at the installed version,
    and no copy is written."""
    if not NAME_PATTERN.fullmatch(name):
        example = "SendWelcomeEmail" if kind == FUNCTION else "RecordSignup"
        raise CliError(
            f"{KIND_OPTIONS[kind]} {name!r}: expected a capitalised name of letters and digits (e.g. {example})",
            EXIT_USAGE,
        )
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", scope):
        raise CliError(f"--scope {scope!r}: expected 1 to 64 of A-Z a-z 0-9 _ . -", EXIT_USAGE)
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise CliError(f"{directory}: exists and is not an empty directory", EXIT_USAGE)
    packaged = packaged_workflow()
    if not (packaged / TEMPLATE_NAME).is_file():
        raise CliError(f"the installed package has no workflow at {packaged}: reinstall idemflow")
    location: str | tuple[str, str] = f"{WORKFLOW_FOLDER}/{TEMPLATE_NAME}"
    if application_id is not None:
        version = published_as()[1]
        try:
            published_workflow(application_id, version, "--application-id")
        except TemplateError as exc:
            raise CliError(str(exc), EXIT_USAGE) from exc
        location = (application_id, version)
    directory = directory.resolve()
    workflow = directory / WORKFLOW_FOLDER
    if application_id is None:
        _copy_workflow(packaged, workflow, kind)
    code = (
        {directory / "src" / "app.py": _function(name)}
        if kind == FUNCTION
        else {directory / DEFINITION: _definition(name)}
    )
    files = {
        directory / "template.yaml": _template(name, kind, scope, location),
        **code,
        directory / "events" / "event.json": json.dumps(
            {"idempotencyKey": "example-1", "payload": {"example": True}}, indent=2
        )
        + "\n",
        directory / "tests" / "test_side_effect.py": _test(name, kind),
        directory / "tests" / "test_permissions.py": _permissions_test(name, kind),
        # Its own pytest configuration, so that its tests run the same from inside it or from anywhere.
        directory / "pytest.ini": "[pytest]\ntestpaths = tests\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    copied = sorted(p for p in workflow.rglob("*") if p.is_file()) if workflow.is_dir() else []
    return [*files, *copied]


def installed_commands() -> tuple[str, str]:
    """The Python and the ``idemflow`` command of the running environment, as a shell takes them (a path
    relative to the current folder when it is below it: ``.venv/bin/python``)."""
    python = Path(sys.executable)
    command = python.parent / "idemflow"

    def shown(path: Path) -> str:
        try:
            return shlex.quote(str(path.relative_to(Path.cwd())))
        except ValueError:
            return shlex.quote(str(path))

    return shown(python), shown(command) if command.exists() else "idemflow"


def cmd_init(args: argparse.Namespace, out: TextIO) -> int:
    directory = Path(args.directory)
    kind, name = (FUNCTION, args.function_name) if args.function_name else (STATE_MACHINE, args.state_machine_name)
    scope = args.scope or name.lower()
    written = scaffold(directory, name, scope, args.application_id, kind)
    if args.application_id:
        print(
            f"created {directory} (the workflow nested from {args.application_id}, version {published_as()[1]}; "
            "locally the installed idemflow's copy):",
            file=out,
        )
    else:
        print(
            f"created {directory} (the workflow nested from {WORKFLOW_FOLDER}/, a copy of {packaged_workflow()}):",
            file=out,
        )
    for path in written:
        relative = path.relative_to(directory.resolve())
        if relative.parts[0] != WORKFLOW_FOLDER:
            print(f"  {relative}", file=out)
    if not args.application_id:
        print(f"  {WORKFLOW_FOLDER}/ (the workflow: its template and the definitions and functions it reads)", file=out)
    print("next:", file=out)
    # The commands of the environment init runs in (the project's .venv/bin/ in a checkout): pasted as
    # printed, they run where idemflow and its pinned moto are installed.
    python, command = installed_commands()
    if importlib.util.find_spec("pytest") is None:  # the package does not bring a test runner: the one step that does
        print(f"  {python} -m pip install pytest   # the test runner its test needs", file=out)
    print(f"  {python} -m pytest {shlex.quote(str(directory))}   # its test, on the embedded engine", file=out)
    print(f"  {command} run --template {shlex.quote(str(directory / 'template.yaml'))}   # events/event.json", file=out)
    return 0
