"""Start the idempotent workflow and read its record, against any endpoint.

Works with boto3 clients for AWS (the usual credentials and region), Step Functions Local, or
``idemflow serve``: nothing here imports the embedded engine.

Execution names are a second layer of protection. A Standard state machine deduplicates
``StartExecution`` by name for 90 days after an execution closes: with the same name and the same input,
AWS returns the running execution, or fails with ``ExecutionAlreadyExists`` once it has closed. So the
default name is derived from the key *and* the payload (:func:`execution_name`): a client that retries
a start whose response it lost gets the one execution back, and never a second one.

The payload is part of the name on purpose. A name derived from the key alone would make a reused key
with another payload collide with the first execution's name (``ExecutionAlreadyExists``, input
differs), so the caller would see the *first* payload's outcome; with the payload in the name, that
start runs, and the workflow itself fails it with ``IdempotencyKeyReused``, as documented.

``ExecutionAlreadyExists`` is not an error for :func:`start`: it describes the existing execution and
returns that description (its outcome, or ``RUNNING``), marked ``alreadyExisted``. A closed execution is
never started again under the same name; to run a key again after a failure (its lock was released),
ask for a fresh name (``fresh=True``: a random suffix), and the workflow decides as for any duplicate.
Express state machines do not deduplicate names; their duplicates are handled by the workflow alone.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
import urllib.request
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from idemflow import keys

# Raised here, defined with the contract's other exceptions; re-exported for callers of this module.
from idemflow.errors import ExecutionNameConflictError as ExecutionNameConflictError
from idemflow.errors import ExecutionTimeoutError as ExecutionTimeoutError
from idemflow.errors import ReleaseRefusedError as ReleaseRefusedError

NAME_PREFIX = "idem-"
MAX_NAME_LENGTH = 80
NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,80}")
MIN_POLL_INTERVAL = 0.2
"""Seconds between two DescribeExecution calls (AWS throttles it; 200 ms is its bucket refill rate)."""


def execution_name(idempotency_key: str, payload: Any, *, fresh: bool = False) -> str:
    """``idem-<40 hex of sha256(key)>-<12 hex of sha256(payload)>``, plus ``-<8 random hex>`` when fresh.

    Deterministic, at most 71 characters of ``[A-Za-z0-9-]`` (names allow 80 of ``[A-Za-z0-9-_]``).
    """
    payload_part = hashlib.sha256(keys.canonical_json(payload).encode()).hexdigest()[:12]
    name = f"{key_name_prefix(idempotency_key)}{payload_part}"
    return f"{name}-{secrets.token_hex(4)}" if fresh else name


def key_name_prefix(idempotency_key: str) -> str:
    """What every :func:`execution_name` of a key starts with: ``idem-<40 hex of sha256(key)>-``."""
    return f"{NAME_PREFIX}{hashlib.sha256(idempotency_key.encode()).hexdigest()[:40]}-"


def newest_execution_of_key(
    sfn: Any, state_machine_arn: str, idempotency_key: str, *, scan: int = 100, owner: str | None = None
) -> str | None:
    """The ARN of the newest execution for this key among the state machine's newest ``scan``, whichever door
    or client started it: named by :func:`execution_name` (``idemflow start``), or whose input carries the key
    (the HTTP door, a queue's intake, ``aws stepfunctions start-execution``: each is described). Else
    ``owner`` (the record's owner execution, when the caller read it), else None. Step Functions lists
    executions newest first."""
    prefix = key_name_prefix(idempotency_key)
    seen = 0
    for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=state_machine_arn):
        for execution in page["executions"]:
            if seen >= scan:
                return owner
            seen += 1
            arn = str(execution["executionArn"])
            if execution["name"].startswith(prefix) or _input_key(sfn, arn) == idempotency_key:
                return arn
    return owner


def _input_key(sfn: Any, execution_arn: str) -> str | None:
    try:
        described = json.loads(sfn.describe_execution(executionArn=execution_arn).get("input") or "null")
    except (ClientError, ValueError):
        return None  # gone since it was listed, or an input that is not JSON: not this key's
    key = described.get("idempotencyKey") if isinstance(described, dict) else None
    return key if isinstance(key, str) else None


def state_machine_of(execution_arn: str) -> str:
    """A Standard execution's state machine: ``...:execution:<machine>:<name>`` to ``...:stateMachine:<machine>``."""
    parts = execution_arn.split(":")
    if len(parts) != 8 or parts[5] != "execution":
        raise ValueError(f"not a Standard execution's ARN: {execution_arn!r}")
    return ":".join([*parts[:5], "stateMachine", parts[6]])


def execution_input(idempotency_key: str, payload: Any) -> str:
    """The execution's input as canonical JSON (sorted keys: the payload fingerprint is order-sensitive)."""
    return keys.canonical_json({"idempotencyKey": idempotency_key, "payload": payload})


def execution_arn(state_machine_arn: str, name: str) -> str:
    """The ARN Step Functions gives a Standard execution of this name."""
    parts = state_machine_arn.split(":")
    if len(parts) != 7 or parts[5] != "stateMachine":
        raise ValueError(f"not a state machine ARN: {state_machine_arn!r}")
    return ":".join([*parts[:5], "execution", parts[6], name])


def start(
    sfn_client: Any,
    state_machine_arn: str,
    key: str,
    payload: Any,
    *,
    name: str | None = None,
    sync: bool = False,
) -> str | dict[str, Any]:
    """Start an execution for ``key`` and ``payload``.

    Returns the new execution's ARN; or, with ``sync`` (Express, StartSyncExecution), the finished
    execution's response; or, when the name was already used with this input, the existing execution's
    ``DescribeExecution`` response with ``alreadyExisted: True``. Raises the key checks' errors
    (:func:`idemflow.keys.check_input`) before any request, :class:`ExecutionNameConflictError` when the
    name is taken by another input, and botocore's errors otherwise.
    """
    keys.check_input(key, payload)
    body = execution_input(key, payload)
    if name is None:
        name = execution_name(key, payload)
    elif not NAME_PATTERN.fullmatch(name):
        raise ValueError(f"execution name {name!r} must be 1 to 80 characters of A-Z, a-z, 0-9, - and _")
    if sync:
        response: dict[str, Any] = sfn_client.start_sync_execution(
            stateMachineArn=state_machine_arn, name=name, input=body
        )
        return response
    try:
        arn: str = sfn_client.start_execution(stateMachineArn=state_machine_arn, name=name, input=body)["executionArn"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ExecutionAlreadyExists":
            raise
        existing: dict[str, Any] = sfn_client.describe_execution(executionArn=execution_arn(state_machine_arn, name))
        if _same_json(existing.get("input"), body) is False:
            raise ExecutionNameConflictError(
                f"execution name {name!r} is already used with another input (status {existing['status']}): "
                f"choose another name"
            ) from exc
        existing["alreadyExisted"] = True
        return existing
    return arn


def _same_json(text: str | None, body: str) -> bool | None:
    """Whether two JSON texts hold the same value (None when the first is unknown: input not returned)."""
    if text is None:
        return None
    try:
        return bool(json.loads(text) == json.loads(body))
    except ValueError:
        return None


def wait(
    sfn_client: Any,
    arn: str,
    timeout: float,
    on_progress: Callable[[float, str], None] | None = None,
    interval: float = 0.5,
) -> dict[str, Any]:
    """Poll DescribeExecution until the execution closes; its last description.

    ``on_progress(elapsed_seconds, status)`` is called after every poll that finds it running. Raises
    :class:`ExecutionTimeoutError` after ``timeout`` seconds.
    """
    interval = max(interval, MIN_POLL_INTERVAL)
    started = time.monotonic()
    deadline = started + timeout
    while True:
        description: dict[str, Any] = sfn_client.describe_execution(executionArn=arn)
        if description["status"] != "RUNNING":
            return description
        now = time.monotonic()
        if now >= deadline:
            raise ExecutionTimeoutError(f"execution {arn} still running after {timeout:g} s")
        if on_progress is not None:
            on_progress(now - started, description["status"])
        time.sleep(min(interval, max(0.0, deadline - now)))


def history(sfn_client: Any, arn: str) -> list[dict[str, Any]]:
    """Every event of the execution's history, oldest first."""
    events: list[dict[str, Any]] = []
    for page in sfn_client.get_paginator("get_execution_history").paginate(executionArn=arn):
        events.extend(page["events"])
    return events


def path(events: list[dict[str, Any]]) -> list[str]:
    """The states entered, in order."""
    return [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]


def parse_output(description: dict[str, Any]) -> Any:
    """The execution's output as a value (None when there is none)."""
    text = description.get("output")
    return json.loads(text) if text else None


def record(ddb_client: Any, table: str, scope: str, key: str) -> dict[str, Any] | None:
    """The workflow's idempotency record for ``key`` as plain values, read consistently (None: no record)."""
    item = ddb_client.get_item(
        TableName=table, ConsistentRead=True, Key={"id": {"S": keys.record_key(scope, key)}}
    ).get("Item")
    return plain_item(item) if item else None


def intake_deliveries(
    sfn_client: Any, intake_arn: str, succeeded: dict[str, list[dict[str, Any]]] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What the doors' intake state machine has accounted for: every delivery of its ended executions
    (``COMPLETED`` or ``DEAD_LETTERED``), oldest execution first, and the DescribeExecution of each ended
    execution that did not succeed (the intake fails only when a dead-letter send fails: docs/doors.md,
    "Nothing lost").

    ``succeeded``, a caller's dict kept between calls (a poller's), holds the deliveries of the executions
    that succeeded, by execution ARN, so that each is described once: a succeeded execution never changes
    again (RedriveExecution takes only FAILED, TIMED_OUT and ABORTED ones), where a failed one may be
    redriven and is described at every call."""
    known = {} if succeeded is None else succeeded
    executions = [
        e
        for page in sfn_client.get_paginator("list_executions").paginate(stateMachineArn=intake_arn)
        for e in page["executions"]
    ]
    deliveries: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    # ListExecutions answers newest first: reversed, executions started in the same instant keep their order.
    for execution in sorted(reversed(executions), key=lambda e: e["startDate"]):
        arn = execution["executionArn"]
        if arn in known:
            deliveries.extend(known[arn])
            continue
        if execution["status"] == "RUNNING":
            continue
        described = sfn_client.describe_execution(executionArn=arn)
        if described["status"] == "SUCCEEDED":
            known[arn] = json.loads(described["output"])["deliveries"]
            deliveries.extend(known[arn])
        else:
            failed.append(described)
    return deliveries, failed


ENDED_STATUSES = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"})
"""DescribeExecution's statuses of an execution that has ended (RUNNING and PENDING_REDRIVE have not)."""


def release(ddb_client: Any, sfn_client: Any, table: str, scope: str, key: str) -> dict[str, Any]:
    """Delete the ``IN_PROGRESS`` lock of ``key`` once its owner execution has ended, and return the record
    that was deleted. For an operator, after ``IdempotencyOutcomeUnknown`` or ``IdempotencyResultNotSaved``,
    once they have checked whether the side effect happened (docs/runbook.md): the next execution for the
    key then runs the side effect again instead of waiting for the lease to end.

    Refused (:class:`ReleaseRefusedError`) when there is no record, when it is not a lock (a completed
    result is never deleted here), while its owner still runs or cannot be described, and when the record
    changed after it was read: the delete is conditioned on the lock's token and status, so it can never
    remove a newer execution's lock."""
    held = record(ddb_client, table, scope, key)
    if held is None:
        raise ReleaseRefusedError(f"no record for key {key!r} in {table} (scope {scope}): nothing to release")
    if held.get("status") != "IN_PROGRESS":
        raise ReleaseRefusedError(
            f"the record of key {key!r} is {held.get('status')}, not IN_PROGRESS: only a lock is released "
            "(a completed result ends with its expiry)"
        )
    owner, token = held.get("owner"), held.get("lockToken")
    if not isinstance(owner, str) or not isinstance(token, str):
        raise ReleaseRefusedError(f"the lock of key {key!r} names no owner or token: it is not the workflow's")
    try:
        status = sfn_client.describe_execution(executionArn=owner)["status"]
    except ClientError as exc:
        raise ReleaseRefusedError(
            f"cannot confirm that the owner {owner} has ended ({exc.response['Error']['Code']}): an Express "
            f"execution cannot be described; wait until the lease ends ({held.get('leaseExpiresAt')}), when "
            "the next execution takes the key over"
        ) from None
    if status not in ENDED_STATUSES:  # RUNNING, or PENDING_REDRIVE: a redrive resumes it with its token
        raise ReleaseRefusedError(
            f"the owner {owner} is {status}: wait for it to end, or stop it "
            f"(aws stepfunctions stop-execution --execution-arn {owner}), then release"
        )
    try:
        # The token fences the delete: a lock taken over after the read above has another token and stays.
        ddb_client.delete_item(
            TableName=table,
            Key={"id": {"S": keys.record_key(scope, key)}},
            ConditionExpression="#token = :token AND #status = :inProgress",
            ExpressionAttributeNames={"#token": "lockToken", "#status": "status"},
            ExpressionAttributeValues={":token": {"S": token}, ":inProgress": {"S": "IN_PROGRESS"}},
        )
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        raise ReleaseRefusedError(
            f"the record of key {key!r} changed after it was read (another execution took it over, or "
            "completed it): nothing was deleted; read it again with idemflow record"
        ) from None
    return {**held, "ownerStatus": status}


def plain_item(item: dict[str, Any]) -> dict[str, Any]:
    """A DynamoDB item as plain Python values (whole numbers as int, others as float)."""
    from boto3.dynamodb.types import TypeDeserializer

    deserializer = TypeDeserializer()
    return {name: plain_value(deserializer.deserialize(value)) for name, value in item.items()}


def plain_value(value: Any) -> Any:
    """A deserialized DynamoDB value as plain Python: whole numbers as int, other numbers as float."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: plain_value(v) for k, v in value.items()}
    if isinstance(value, list | set | tuple):
        return [plain_value(v) for v in value]
    return value


NESTED_STACK = "AWS::CloudFormation::Stack"
"""The resource type of a nested stack (an ``AWS::Serverless::Application`` once SAM's transform has run)."""


def _outputs(cfn_client: Any, stack_name: str) -> dict[str, str]:
    stacks = cfn_client.describe_stacks(StackName=stack_name)["Stacks"]
    return {str(o["OutputKey"]): str(o["OutputValue"]) for o in (stacks[0].get("Outputs", []) if stacks else [])}


def stack_output(cfn_client: Any, stack_name: str, output_key: str) -> str:
    """A CloudFormation stack's output value, else that of the one nested stack of it that has the output (a
    project nesting the workflow, as ``idemflow init`` makes: the workflow's outputs are its nested stack's);
    ValueError when none has it, or several do (naming them)."""
    outputs = _outputs(cfn_client, stack_name)
    if output_key in outputs:
        return outputs[output_key]
    try:
        pages = cfn_client.get_paginator("list_stack_resources").paginate(StackName=stack_name)
        nested = [r for page in pages for r in page["StackResourceSummaries"] if r["ResourceType"] == NESTED_STACK]
    except ClientError:
        nested = []  # not allowed to list them (an IAM policy without ListStackResources): the stack's own answer
    found: dict[str, tuple[str, str]] = {}  # the nested stack's logical id -> (its name, the value)
    for resource in nested:
        name = resource["PhysicalResourceId"]  # the nested stack's id: DescribeStacks takes it as StackName
        value = _outputs(cfn_client, name).get(output_key)
        if value is not None:
            found[resource["LogicalResourceId"]] = (_stack_name(name), value)
    if len(found) == 1:
        return next(iter(found.values()))[1]
    named = ", ".join(f"{name} ({lid})" for lid, (name, _) in sorted(found.items()))
    if found:
        raise ValueError(
            f"stack {stack_name!r} has no output {output_key}, and several of its nested stacks have one: "
            f"{named}; pass --stack-name with the one to act on"
        )
    checked = ", ".join(f"{_stack_name(r['PhysicalResourceId'])} ({r['LogicalResourceId']})" for r in nested)
    nor = f", nor do its nested stacks: {checked}" if nested else ""
    raise ValueError(f"stack {stack_name!r} has no output {output_key}{nor}")


def _stack_name(stack_id: str) -> str:
    """A stack's name from its id (``arn:aws:cloudformation:REGION:ACCOUNT:stack/NAME/UUID``), else as given."""
    return stack_id.split(":stack/", 1)[1].split("/", 1)[0] if ":stack/" in stack_id else stack_id


def sign_http_request(
    request: urllib.request.Request,
    *,
    region: str = "us-east-1",
    access_key: str = "local",
    secret_key: str = "local",
    session_token: str | None = None,
) -> urllib.request.Request:
    """Sign a urllib request to an API Gateway method whose authorization is ``AWS_IAM`` with SigV4 (service
    ``execute-api``), as botocore signs any AWS request; the defaults are the key ``idemflow serve`` prints.
    On AWS pass the caller's own credentials (``boto3.Session().get_credentials()``). Returns ``request``."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    data = request.data if isinstance(request.data, bytes) else b""
    headers = {k: v for k, v in request.header_items() if k.lower() not in ("authorization", "x-amz-date")}
    aws = AWSRequest(method=request.get_method(), url=request.full_url, headers=headers, data=data)
    SigV4Auth(Credentials(access_key, secret_key, session_token), "execute-api", region).add_auth(aws)
    for name, value in aws.headers.items():
        request.add_header(name, value)
    return request
