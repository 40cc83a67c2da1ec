"""CloudFormation: the deployed stack as an operator reads it (``aws cloudformation describe-stacks``,
``list-stack-resources``, ``describe-stack-resources``; ``idemflow start --stack-name``).

Only reads: the engine deploys the template itself, so every other action answers an error saying so. The
answers' shapes are the CloudFormation API Reference's (query protocol, XML in the
``http://cloudformation.amazonaws.com/doc/2010-05-15/`` namespace): ``DescribeStacks``' ``Stacks.member`` with
``StackName``, ``StackId``, ``StackStatus``, ``CreationTime``, ``Parameters`` and ``Outputs``;
``ListStackResources``' ``StackResourceSummaries.member`` and ``DescribeStackResources``' ``StackResources.member``
with ``LogicalResourceId``, ``PhysicalResourceId``, ``ResourceType``, ``ResourceStatus`` and a time, for the
resources CloudFormation holds once SAM's transform has run (a SAM function as its Lambda function and its
role ...: :func:`idemflow.template.sam.generated_resources`). A stack that does not exist is a 400
``ValidationError`` "Stack with id NAME does not exist", as CloudFormation answers it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

from idemflow.engine.services.base import Service
from idemflow.template import Stack

_CREDENTIAL = re.compile(r"Credential=[^/]+/\d{8}/[a-z0-9-]+/cloudformation/aws4_request")
_NAMESPACE = "http://cloudformation.amazonaws.com/doc/2010-05-15/"


def _elements(fields: Iterable[tuple[str, str]]) -> str:
    return "".join(f"<{k}>{escape(v)}</{k}>" for k, v in fields)


def _member(fields: Iterable[tuple[str, str]]) -> str:
    return f"<member>{_elements(fields)}</member>"


_ACTIONS = ("DescribeStacks", "ListStackResources", "DescribeStackResources")


def _timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def stack_id(stack: Stack) -> str:
    stable = uuid.uuid5(uuid.NAMESPACE_URL, stack.name)  # the same id for the same stack, as a redeployment keeps
    return f"arn:aws:cloudformation:{stack.region}:{stack.account_id}:stack/{stack.name}/{stable}"


def summaries(stack: Stack, deployed_at: datetime) -> str:
    """ListStackResources' ``StackResourceSummaries.member`` of every resource of the stack."""
    return "".join(
        _member(
            (
                ("LogicalResourceId", lid),
                ("PhysicalResourceId", physical),
                ("ResourceType", kind),
                ("LastUpdatedTimestamp", _timestamp(deployed_at)),
                ("ResourceStatus", "CREATE_COMPLETE"),
            )
        )
        for lid, kind, physical in stack.listed
    )


def resources(stack: Stack, deployed_at: datetime, only: str = "", physical_id: str = "") -> str:
    """DescribeStackResources' ``StackResources.member`` of the stack's resources (those of a logical id or a
    physical id, when given)."""
    return "".join(
        _member(
            (
                ("StackName", stack.name),
                ("StackId", stack_id(stack)),
                ("LogicalResourceId", lid),
                ("PhysicalResourceId", physical),
                ("ResourceType", kind),
                ("Timestamp", _timestamp(deployed_at)),
                ("ResourceStatus", "CREATE_COMPLETE"),
            )
        )
        for lid, kind, physical in stack.listed
        if (not only or lid == only) and (not physical_id or physical == physical_id)
    )


def describe(stack: Stack, deployed_at: datetime) -> str:
    """One ``Stacks.member`` of a DescribeStacks answer."""
    parameters = "".join(_member((("ParameterKey", k), ("ParameterValue", v))) for k, v in stack.parameters.items())
    outputs = "".join(_member((("OutputKey", k), ("OutputValue", v))) for k, v in stack.outputs.items())
    fields = (
        ("StackName", stack.name),
        ("StackId", stack_id(stack)),
        ("StackStatus", "CREATE_COMPLETE"),
        ("CreationTime", _timestamp(deployed_at)),
    )
    return f"<member>{_elements(fields)}<Parameters>{parameters}</Parameters><Outputs>{outputs}</Outputs></member>"


class CloudFormation(Service):
    name = "cloudformation"
    deployed_at: datetime | None = None

    def deploy(self, stack: Stack) -> None:
        self.deployed_at = datetime.now(UTC)

    def wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes] | None:
        if environ.get("REQUEST_METHOD") != "POST" or not _CREDENTIAL.search(
            str(environ.get("HTTP_AUTHORIZATION", ""))
        ):
            return None
        length = int(environ.get("CONTENT_LENGTH") or 0)
        form = parse_qs(environ["wsgi.input"].read(length).decode() if length else "")
        action, name = form.get("Action", [""])[0], form.get("StackName", [""])[0]
        if name.startswith("arn:") and ":stack/" in name:
            name = name.split(":stack/", 1)[1].split("/", 1)[0]  # a stack id names its stack, as on AWS
        stacks = {s.name: s for _, s in self.context.stack.stacks()} if self.context.stack is not None else {}
        if action not in _ACTIONS:
            return self._error(
                start_response,
                "InvalidAction",
                f"{action}: the engine serves {', '.join(_ACTIONS)} only (it deploys itself)",
            )
        physical = form.get("PhysicalResourceId", [""])[0]
        if action == "DescribeStackResources" and physical and not name:
            # "You must specify either StackName or PhysicalResourceId" (API reference): the stack holding it.
            name = next((s.name for s in stacks.values() if any(p == physical for _, _, p in s.listed)), "")
            if not name:
                return self._error(start_response, "ValidationError", f"Stack for {physical} does not exist")
        chosen = [stacks[name]] if name in stacks else [] if name else list(stacks.values())
        if name and not chosen:
            return self._error(start_response, "ValidationError", f"Stack with id {name} does not exist")
        deployed_at = self.deployed_at or datetime.now(UTC)
        if action == "DescribeStacks":
            result = "<Stacks>" + "".join(describe(s, deployed_at) for s in chosen) + "</Stacks>"
        elif not name:
            return self._error(start_response, "ValidationError", "StackName or PhysicalResourceId must be given")
        elif action == "ListStackResources":
            result = f"<StackResourceSummaries>{summaries(chosen[0], deployed_at)}</StackResourceSummaries>"
        else:
            only = form.get("LogicalResourceId", [""])[0]
            listed = resources(chosen[0], deployed_at, only, physical)
            result = f"<StackResources>{listed}</StackResources>"
        body = (
            f'<{action}Response xmlns="{_NAMESPACE}"><{action}Result>{result}</{action}Result>'
            f"<ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata></{action}Response>"
        ).encode()
        start_response("200 OK", [("Content-Type", "text/xml"), ("Content-Length", str(len(body)))])
        return [body]

    @staticmethod
    def _error(start_response: Callable[..., Any], code: str, message: str) -> list[bytes]:
        body = (
            f'<ErrorResponse xmlns="{_NAMESPACE}"><Error><Type>Sender</Type><Code>{code}</Code>'
            f"<Message>{escape(message)}</Message></Error><RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>"
        ).encode()
        start_response("400 Bad Request", [("Content-Type", "text/xml"), ("Content-Length", str(len(body)))])
        return [body]
