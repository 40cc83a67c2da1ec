"""CloudFormation: the deployed stack's ``DescribeStacks``, so that a tool reads its outputs from the engine
as from AWS (``idemflow start --stack-name``, ``aws cloudformation describe-stacks``).

Only that: the engine deploys the template itself, so every other action answers an error saying so. The
answer's shape is the CloudFormation API Reference's (``DescribeStacks``: ``Stacks.member`` with
``StackName``, ``StackId``, ``StackStatus``, ``CreationTime``, ``Parameters`` and ``Outputs``; query
protocol, XML in the ``http://cloudformation.amazonaws.com/doc/2010-05-15/`` namespace); a stack that does
not exist is a 400 ``ValidationError`` "Stack with id NAME does not exist", as CloudFormation answers it.
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


def describe(stack: Stack, deployed_at: datetime) -> str:
    """One ``Stacks.member`` of a DescribeStacks answer."""
    stable = uuid.uuid5(uuid.NAMESPACE_URL, stack.name)  # the same id for the same stack, as a redeployment keeps
    stack_id = f"arn:aws:cloudformation:{stack.region}:{stack.account_id}:stack/{stack.name}/{stable}"
    parameters = "".join(_member((("ParameterKey", k), ("ParameterValue", v))) for k, v in stack.parameters.items())
    outputs = "".join(_member((("OutputKey", k), ("OutputValue", v))) for k, v in stack.outputs.items())
    fields = (
        ("StackName", stack.name),
        ("StackId", stack_id),
        ("StackStatus", "CREATE_COMPLETE"),
        ("CreationTime", deployed_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")),
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
        stacks = {s.name: s for _, s in self.context.stack.stacks()} if self.context.stack is not None else {}
        if action != "DescribeStacks":
            return self._error(
                start_response, "InvalidAction", f"{action}: the engine serves DescribeStacks only (it deploys itself)"
            )
        chosen = [stacks[name]] if name in stacks else [] if name else list(stacks.values())
        if name and not chosen:
            return self._error(start_response, "ValidationError", f"Stack with id {name} does not exist")
        deployed_at = self.deployed_at or datetime.now(UTC)
        body = (
            f'<DescribeStacksResponse xmlns="{_NAMESPACE}"><DescribeStacksResult><Stacks>'
            + "".join(describe(s, deployed_at) for s in chosen)
            + f"</Stacks></DescribeStacksResult><ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId>"
            "</ResponseMetadata></DescribeStacksResponse>"
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
