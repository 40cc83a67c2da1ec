"""What a request asks for, in IAM's terms: its action (``dynamodb:PutItem``) and the ARNs of the resources it acts
on, as the Service Authorization Reference lists them for each action
(https://docs.aws.amazon.com/service-authorization/latest/reference/reference_policies_actions-resources-contextkeys.html).

Decided here, for the services and operations a template's roles are written for:

- DynamoDB: the table of ``TableName`` (``table/<name>``; a query or scan of an index, ``table/<name>/index/<index>``),
  each table of a batch's ``RequestItems`` and of a transaction's items; ``ListTables``, ``*``.
- Lambda: ``Invoke`` is ``lambda:InvokeFunction`` on the function's ARN, qualified when the call names a version or
  an alias ("Resources and conditions for Lambda actions": a qualified ARN names that version or alias only).
- SQS: the queue of ``QueueUrl`` (``arn:aws:sqs:<region>:<account>:<name>``), or of ``QueueName``.
- SNS: ``TopicArn`` (``TargetArn`` for a publish to an endpoint).
- Step Functions (``states``): ``stateMachineArn``, ``executionArn``.
- EventBridge: ``PutEvents``, each entry's bus (``event-bus/<name>``, ``default`` when the entry names none).
- Kinesis: ``StreamARN``, or the stream of ``StreamName``.

Parameter names are matched without regard to case: the SDK's (``stateMachineArn``) and a task's
(``StateMachineArn``) alike. Any other operation is not modelled here: :func:`resources` answers None and the call
is not decided (the engine says which in its log), rather than decided on a guessed resource.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import unquote, urlparse

LOG = logging.getLogger(__name__)

#: botocore's or Step Functions' name of a service -> IAM's service prefix, where they differ.
PREFIXES: Final[dict[str, str]] = {"stepfunctions": "states", "sfn": "states"}
#: Operations whose IAM action has another name (Service Authorization Reference). SQS's batch operations are
#: authorized as the operation they batch: the reference lists no ``*Batch`` action for SQS, and AWS refused a
#: SendMessageBatch as "not authorized to perform: sqs:sendmessage" (recorded in aws/serverless-application-model
#: issue 3633).
ACTIONS: Final[dict[tuple[str, str], str]] = {
    ("lambda", "Invoke"): "InvokeFunction",
    ("sqs", "SendMessageBatch"): "SendMessage",
    ("sqs", "DeleteMessageBatch"): "DeleteMessage",
    ("sqs", "ChangeMessageVisibilityBatch"): "ChangeMessageVisibility",
}


_undecided: set[str] = set()
_undecided_lock = threading.Lock()


def undecided(what: str) -> None:
    """Say once per process that calls of ``what`` (``sqs``, ``http:invoke`` tasks...) run whatever the role."""
    with _undecided_lock:
        if what in _undecided:
            return
        _undecided.add(what)
    LOG.warning("the engine does not decide the permissions of %s: they run whatever the role", what)


def action_name(service: str, operation: str) -> str:
    """``dynamodb:PutItem`` for (``dynamodb``, ``PutItem``) or (``dynamodb``, ``putItem``)."""
    prefix = PREFIXES.get(service, service)
    operation = operation[:1].upper() + operation[1:]
    return f"{prefix}:{ACTIONS.get((prefix, operation), operation)}"


def _get(params: Mapping[str, Any], name: str) -> Any:
    wanted = name.lower()
    return next((value for key, value in params.items() if str(key).lower() == wanted), None)


def _table(name: str, region: str, account: str, index: str | None = None) -> str:
    arn = name if name.startswith("arn:") else f"arn:aws:dynamodb:{region}:{account}:table/{name}"
    return f"{arn}/index/{index}" if index else arn


def _dynamodb(operation: str, params: Mapping[str, Any], region: str, account: str) -> list[str] | None:
    if operation == "ListTables":
        return ["*"]
    table = _get(params, "TableName")
    if isinstance(table, str):
        index = _get(params, "IndexName") if operation in ("Query", "Scan") else None
        return [_table(table, region, account, index if isinstance(index, str) else None)]
    items = _get(params, "RequestItems")
    if isinstance(items, Mapping):
        return [_table(str(name), region, account) for name in items]
    transact = _get(params, "TransactItems")
    if isinstance(transact, list):
        names = []
        for item in transact:
            for part in item.values() if isinstance(item, Mapping) else ():
                name = _get(part, "TableName") if isinstance(part, Mapping) else None
                if isinstance(name, str):
                    names.append(_table(name, region, account))
        return names
    return None


def function_arn(name: str, region: str, account: str, qualifier: str | None = None) -> str:
    """A function's ARN from what Invoke accepts: a name, a partial ARN (``<account>:function:<name>``) or an ARN,
    each with an optional ``:<qualifier>``; ``qualifier`` (the Qualifier parameter) when the name has none."""
    parts = name.split(":")
    if name.startswith("arn:"):
        arn = name
    elif len(parts) >= 3 and parts[1] == "function":
        arn = f"arn:aws:lambda:{region}:{name}"
    else:
        arn = f"arn:aws:lambda:{region}:{account}:function:{name}"
    if qualifier and len(arn.split(":")) == 7:
        arn = f"{arn}:{qualifier}"
    return arn


def queue_arn(url: str, region: str, account: str) -> str:
    """``arn:aws:sqs:<region>:<account>:<name>`` of a queue URL (``https://sqs.<region>.amazonaws.com/<account>/<name>``,
    or a local endpoint's ``http://localhost:<port>/<account>/<name>``)."""
    path = [unquote(p) for p in urlparse(url).path.split("/") if p]
    if len(path) >= 2 and path[-2].isdigit():
        account = path[-2]
    host = urlparse(url).hostname or ""
    if host.startswith("sqs.") and host.count(".") >= 3:
        region = host.split(".")[1]
    return f"arn:aws:sqs:{region}:{account}:{path[-1] if path else url}"


def resources(service: str, operation: str, params: Mapping[str, Any], region: str, account: str) -> list[str] | None:
    """The ARNs ``operation`` of ``service`` (botocore's name, or IAM's prefix) acts on, given its parameters;
    None when the operation is not modelled here."""
    prefix = PREFIXES.get(service, service)
    operation = operation[:1].upper() + operation[1:]
    if prefix == "dynamodb":
        return _dynamodb(operation, params, region, account)
    if prefix == "lambda" and operation in ("Invoke", "InvokeAsync"):
        name = _get(params, "FunctionName")
        qualifier = _get(params, "Qualifier")
        if isinstance(name, str):
            return [function_arn(name, region, account, qualifier if isinstance(qualifier, str) else None)]
        return None
    if prefix == "sqs":
        url = _get(params, "QueueUrl")
        if isinstance(url, str):
            return [queue_arn(url, region, account)]
        name = _get(params, "QueueName")
        return [f"arn:aws:sqs:{region}:{account}:{name}"] if isinstance(name, str) else None
    if prefix == "sns":
        topic = _get(params, "TopicArn") or _get(params, "TargetArn")
        return [str(topic)] if isinstance(topic, str) else None
    if prefix == "states":
        arn = _get(params, "executionArn") or _get(params, "stateMachineArn")
        return [str(arn)] if isinstance(arn, str) else None
    if prefix == "events" and operation == "PutEvents":
        entries = _get(params, "Entries")
        if not isinstance(entries, list):
            return None
        buses = []
        for entry in entries:
            bus = _get(entry, "EventBusName") if isinstance(entry, Mapping) else None
            bus = str(bus or "default")
            buses.append(bus if bus.startswith("arn:") else f"arn:aws:events:{region}:{account}:event-bus/{bus}")
        return list(dict.fromkeys(buses))
    if prefix == "kinesis":
        arn = _get(params, "StreamARN")
        if isinstance(arn, str):
            return [arn]
        name = _get(params, "StreamName")
        return [f"arn:aws:kinesis:{region}:{account}:stream/{name}"] if isinstance(name, str) else None
    return None
