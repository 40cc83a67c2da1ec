"""The operator's commands, on any endpoint (AWS or ``idemflow serve``): ``list``, ``dead-letters``,
``deliveries``, ``redrive`` and ``move-back`` (docs/runbook.md).

Each reads its state machine or queues from the options (``--state-machine-arn``, ``--queue-url``, ...) or
from the stack's outputs (``--stack-name``), prints plain text (or one JSON document with ``--json``), and
returns the exit status. Every wait has a deadline (``--timeout``) and polls at a bounded interval.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from botocore.exceptions import ClientError

from idemflow import client
from idemflow.cli.endpoint import clients, given_or_stack_output
from idemflow.cli.errors import EXIT_FAILED, CliError
from idemflow.cli.output import print_json, readable_cause

REDRIVABLE = ("FAILED", "TIMED_OUT", "ABORTED")
"""The statuses RedriveExecution takes."""
POLL_FIRST, POLL_MAX = 0.2, 2.0
"""Seconds between two polls of a wait: the first, and the most it grows to."""
EXECUTION_SUFFIX = re.compile(r"\s*\(execution (arn:[^)\s]+)\)\s*$")
"""How the intake ends a failed workflow execution's ERROR_MESSAGE (statemachine/intake.asl.json)."""


# -- formatting (pure functions of what was read) -------------------------------------------------
def one_line(text: str | None, width: int) -> str:
    """The first non-empty line of ``text``, cut at ``width`` characters with ``...``; ``-`` for nothing."""
    first = next((line.strip() for line in (text or "").splitlines() if line.strip()), "")
    if not first:
        return "-"
    return first if len(first) <= width else first[: max(0, width - 3)] + "..."


def dead_letter_reason(code: str | None, message: str | None) -> tuple[str, str | None]:
    """A dead letter's ERROR_MESSAGE as a person reads it, and the failed workflow execution it names.

    The intake writes ``<code>: <the cause's first line>`` with `` (execution <arn>)`` at the end for a failed
    workflow execution, whose cause for a function's error is its errorMessage. A stack deployed before that
    wrote the Lambda error's JSON (errorMessage, errorType, stackTrace): its errorMessage stands for it (the
    stack trace stays in the failed execution's history)."""
    if not message:
        return "", None
    text, execution = message, None
    found = EXECUTION_SUFFIX.search(text)
    if found:
        execution, text = found.group(1), text[: found.start()]
    if code and text.startswith(f"{code}: "):
        text = text[len(code) + 2 :]
    return readable_cause(text.strip()) or "", execution


def elapsed_text(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds >= 1 else f"{seconds:.1f} s"


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """--since: an ISO 8601 time (UTC unless it says), or an age: ``90s``, ``30m``, ``2h``, ``7d``."""
    now = now or datetime.now(UTC)
    age = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd])", text.strip())
    if age:
        unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[age.group(2)]
        return now - timedelta(**{unit: float(age.group(1))})
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO 8601 time (2024-05-01T12:00:00Z) or an age (30m, 2h, 7d), got {text!r}"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _when(value: Any) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if isinstance(value, datetime) else "-"


def _key_of(input_text: str | None) -> str | None:
    try:
        value = json.loads(input_text or "")
    except ValueError:
        return None
    key = value.get("idempotencyKey") if isinstance(value, dict) else None
    return key if isinstance(key, str) else None


def _polls(timeout: float) -> Iterator[float]:
    """Seconds elapsed at each poll, until ``timeout``: sleeps between them, from POLL_FIRST growing to
    POLL_MAX, never past the deadline; the last poll is at the deadline."""
    started = time.monotonic()
    interval = POLL_FIRST
    while True:
        elapsed = time.monotonic() - started
        yield elapsed
        if elapsed >= timeout:
            return
        time.sleep(min(interval, max(0.0, timeout - elapsed)))
        interval = min(POLL_MAX, interval * 1.5)


def _progress(stream: TextIO, every: float = 5.0) -> Callable[[float, str], None]:
    last = [0.0]

    def report(elapsed: float, text: str) -> None:
        if elapsed - last[0] >= every:
            last[0] = elapsed
            print(f"idemflow: {text} after {elapsed_text(elapsed)}", file=stream, flush=True)

    return report


# -- list -----------------------------------------------------------------------------------------------
def _executions(sfn: Any, arn: str, limit: int, status: str | None = None) -> list[dict[str, Any]]:
    """The newest ``limit`` executions of ``arn`` (ListExecutions' order: newest first)."""
    options: dict[str, Any] = {"stateMachineArn": arn}
    if status:
        options["statusFilter"] = status
    found: list[dict[str, Any]] = []
    for page in sfn.get_paginator("list_executions").paginate(**options, PaginationConfig={"PageSize": 100}):
        found.extend(page["executions"])
        if len(found) >= limit:
            break
    return found[:limit]


def execution_row(sfn: Any, listed: dict[str, Any]) -> dict[str, Any]:
    """One execution as ``list`` prints it: its key, the states it went through, and its outcome."""
    arn = listed["executionArn"]
    described = sfn.describe_execution(executionArn=arn)
    output = client.parse_output(described)
    row = {
        "executionArn": arn,
        "name": described.get("name", listed.get("name")),
        "startDate": _when(described.get("startDate")),
        "status": described["status"],
        "key": _key_of(described.get("input")),
        "replayed": output.get("replayed") if isinstance(output, dict) else None,
        "error": described.get("error"),
        "cause": described.get("cause"),
        "redriveCount": described.get("redriveCount", 0),
        "path": client.path(client.history(sfn, arn)),
    }
    return row


def _outcome(row: dict[str, Any], width: int) -> str:
    if row["status"] == "SUCCEEDED":
        return f"replayed={json.dumps(row['replayed'])}"
    if row["status"] == "RUNNING":
        return "-"
    return f"{row['error'] or '-'}: {one_line(readable_cause(row['cause']), width)}"


def cmd_list(args: argparse.Namespace, out: TextIO) -> int:
    sfn, cfn = clients(args, "stepfunctions", "cloudformation")
    arn = given_or_stack_output(args.state_machine_arn, "--state-machine-arn", cfn, args.stack_name, "StateMachineArn")
    rows = [execution_row(sfn, e) for e in _executions(sfn, arn, args.max, args.status)]
    if args.json:
        print_json({"stateMachineArn": arn, "executions": rows}, out)
        return 0
    print(f"{arn}: the newest {len(rows)} execution(s)", file=out)
    arrow = " -> "
    for row in rows:
        redriven = f"  (redriven {row['redriveCount']}x)" if row["redriveCount"] else ""
        print(
            f"{row['startDate']}  {row['status']:<9}  key={row['key'] or '-'}  {_outcome(row, args.width)}{redriven}",
            file=out,
        )
        print(f"    {row['executionArn']}", file=out)
        print(f"    path: {arrow.join(row['path']) or '-'}", file=out)
    return 0


# -- dead-letters -----------------------------------------------------------------------------------------
def peek(sqs: Any, url: str, limit: int, rounds: int = 3) -> list[dict[str, Any]]:
    """Up to ``limit`` messages of the queue, left on it: received with VisibilityTimeout=0 (each stays
    visible; receiving counts in its ApproximateReceiveCount) and never deleted. SQS answers a sample of the
    queue, so it stops after ``rounds`` receives in a row bring nothing new."""
    seen: dict[str, dict[str, Any]] = {}
    idle = 0
    for _ in range(limit + rounds):  # bounded: each round brings a new message or counts an idle one
        got = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            AttributeNames=["All"],
            VisibilityTimeout=0,
        ).get("Messages", [])
        new = [m for m in got if m["MessageId"] not in seen]
        for message in new:
            seen[message["MessageId"]] = message
        idle = 0 if new else idle + 1
        if idle >= rounds or len(seen) >= limit:
            break
    return list(seen.values())[:limit]


def _attribute(message: dict[str, Any], name: str) -> str | None:
    value = message.get("MessageAttributes", {}).get(name, {}).get("StringValue")
    return value if isinstance(value, str) else None


def dead_letter_row(message: dict[str, Any], width: int, key_attribute: str = "idempotencyKey") -> dict[str, Any]:
    code, message_text = _attribute(message, "ERROR_CODE"), _attribute(message, "ERROR_MESSAGE")
    reason, execution = dead_letter_reason(code, message_text)
    sent = message.get("Attributes", {}).get("SentTimestamp")
    return {
        "messageId": message["MessageId"],
        "sent": _when(datetime.fromtimestamp(int(sent) / 1000, UTC)) if sent else "-",
        "key": _attribute(message, key_attribute),
        "errorCode": code,
        "reason": one_line(reason or message_text, width) if (reason or message_text) else None,
        "executionArn": execution,
        "intakeExecutionArn": _attribute(message, "INTAKE_EXECUTION_ARN"),
        "sourceId": _attribute(message, "SOURCE_ID"),
        "ruleArn": _attribute(message, "RULE_ARN"),
        "body": message.get("Body"),
        "errorMessage": message_text,
    }


def cmd_dead_letters(args: argparse.Namespace, out: TextIO) -> int:
    sqs, cfn = clients(args, "sqs", "cloudformation")
    url = given_or_stack_output(args.queue_url, "--queue-url", cfn, args.stack_name, "DoorDeadLetterQueueUrl")
    rows = [dead_letter_row(m, args.width, args.key_attribute) for m in peek(sqs, url, args.max)]
    if args.json:
        print_json({"queueUrl": url, "messages": rows}, out)
        return 0
    print(f"{url}: {len(rows)} message(s), left on the queue", file=out)
    for row in rows:
        code = row["errorCode"] or "(no ERROR_CODE: not sent by the intake or a rule)"
        print(f"{row['sent']}  key={row['key'] or '-'}  {code}: {row['reason'] or '-'}", file=out)
        if row["executionArn"]:
            print(f"    failed execution: {row['executionArn']}", file=out)
        if row["intakeExecutionArn"]:
            print(f"    intake execution: {row['intakeExecutionArn']}", file=out)
        if row["ruleArn"]:
            print(f"    rule:             {row['ruleArn']}", file=out)
        print(f"    body: {one_line(row['body'], args.width)}", file=out)
    return 0


# -- deliveries -------------------------------------------------------------------------------------------
INTAKE_ATTRIBUTES = frozenset({"ERROR_CODE", "ERROR_MESSAGE", "SOURCE_ID", "INTAKE_EXECUTION_ARN"})
"""The attributes the intake gives every dead letter; the one other is the key (DoorKeyAttribute)."""


def _dead_letter_sends(sfn: Any, arn: str) -> dict[str, tuple[str | None, str | None]]:
    """(key, ERROR_MESSAGE) of each dead-letter send of an intake execution, by its SOURCE_ID (door:id): the
    intake's output names a dead-lettered delivery by its source id alone."""
    sends: dict[str, tuple[str | None, str | None]] = {}
    for event in client.history(sfn, arn):
        details = event.get("taskScheduledEventDetails") or {}
        if not str(details.get("resource", "")).endswith("sendMessage"):
            continue
        try:
            attributes = json.loads(details.get("parameters") or "{}").get("MessageAttributes", {})
        except ValueError:
            continue
        values = {name: a.get("StringValue") for name, a in attributes.items() if isinstance(a, dict)}
        source = values.get("SOURCE_ID")
        key = next((v for n, v in values.items() if n not in INTAKE_ATTRIBUTES and isinstance(v, str)), None)
        if isinstance(source, str):
            sends[source] = (key, values.get("ERROR_MESSAGE"))
    return sends


def delivery_rows(sfn: Any, listed: dict[str, Any], width: int) -> list[dict[str, Any]]:
    """The deliveries of one intake execution (none while it runs), each with its reason when dead-lettered;
    a failed intake execution is one row of its own, its error as the reason."""
    arn = listed["executionArn"]
    base = {"intakeExecutionArn": arn, "startDate": _when(listed.get("startDate"))}
    if listed["status"] == "RUNNING":
        return [{**base, "outcome": "RUNNING", "key": None, "reason": None}]
    described = sfn.describe_execution(executionArn=arn)
    if described["status"] != "SUCCEEDED":
        failure = f"{described.get('error') or '-'}: {one_line(described.get('cause'), width)}"
        return [{**base, "outcome": f"INTAKE_{described['status']}", "key": None, "reason": failure}]
    found = json.loads(described["output"])["deliveries"]
    sends = _dead_letter_sends(sfn, arn) if any(d.get("outcome") == "DEAD_LETTERED" for d in found) else {}
    rows = []
    for delivery in found:
        key, reason, execution = delivery.get("idempotencyKey"), None, delivery.get("executionArn")
        if delivery.get("outcome") == "DEAD_LETTERED":
            source = f":{delivery.get('sourceId')}"
            key, message = next((sent for s, sent in sends.items() if s.endswith(source)), (None, None))
            text, execution = dead_letter_reason(delivery.get("error"), message)
            reason = f"{delivery.get('error')}: {one_line(text, width)}"
        rows.append(
            {
                **base,
                "outcome": delivery.get("outcome"),
                "key": key,
                "keyFrom": delivery.get("keyFrom"),
                "sourceId": delivery.get("sourceId"),
                "replayed": delivery.get("replayed"),
                "executionArn": execution,
                "reason": reason,
            }
        )
    return rows


def cmd_deliveries(args: argparse.Namespace, out: TextIO) -> int:
    sfn, cfn = clients(args, "stepfunctions", "cloudformation")
    arn = given_or_stack_output(args.intake_arn, "--intake-arn", cfn, args.stack_name, "IntakeStateMachineArn")
    rows = [row for e in _executions(sfn, arn, args.max) for row in delivery_rows(sfn, e, args.width)]
    if args.json:
        print_json({"intakeStateMachineArn": arn, "deliveries": rows}, out)
        return 0
    print(f"{arn}: the deliveries of its newest {args.max} execution(s) at most", file=out)
    for row in rows:
        detail = row["reason"] or (
            f"replayed={json.dumps(row.get('replayed'))}" if row["outcome"] == "COMPLETED" else ""
        )
        print(f"{row['startDate']}  {row['outcome']:<13}  key={row['key'] or '-'}  {detail}".rstrip(), file=out)
    return 0


# -- redrive -------------------------------------------------------------------------------------------------
def _since_candidates(sfn: Any, arn: str, since: datetime) -> list[dict[str, Any]]:
    """The state machine's FAILED, TIMED_OUT and ABORTED executions that stopped at ``since`` or later."""
    found: list[dict[str, Any]] = []
    for status in REDRIVABLE:
        for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=arn, statusFilter=status):
            found.extend(e for e in page["executions"] if e.get("stopDate") and e["stopDate"] >= since)
    return sorted(found, key=lambda e: e["startDate"])


def cmd_redrive(args: argparse.Namespace, out: TextIO) -> int:
    sfn, cfn = clients(args, "stepfunctions", "cloudformation")
    if args.execution_arn:
        targets = [args.execution_arn]
    else:
        arn = given_or_stack_output(
            args.state_machine_arn, "--state-machine-arn", cfn, args.stack_name, "StateMachineArn"
        )
        targets = [e["executionArn"] for e in _since_candidates(sfn, arn, args.since)]
        if not args.json:
            print(f"{len(targets)} FAILED, TIMED_OUT or ABORTED execution(s) since {_when(args.since)} UTC", file=out)
    report: list[dict[str, Any]] = []
    for target in targets:
        try:
            sfn.redrive_execution(executionArn=target)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            reason = f"{error.get('Code', 'error')}: {error.get('Message', exc)}"
            report.append({"executionArn": target, "redriven": False, "reason": reason, "status": None})
            if not args.json:
                print(f"refused  {target}\n    {reason}", file=out, flush=True)
            continue
        report.append({"executionArn": target, "redriven": True, "reason": None, "status": "RUNNING"})
        if not args.json:
            print(f"redriven {target}", file=out, flush=True)
    _wait_redriven(sfn, [r for r in report if r["redriven"]], args.timeout)
    if args.json:
        print_json({"executions": report}, out)
    else:
        for row in (r for r in report if r["redriven"]):
            ended = f"{row['status']}" + (
                f"  {row['error']}: {one_line(readable_cause(row['cause']), 100)}" if row.get("error") else ""
            )
            print(f"{ended}  {row['executionArn']}  (redrive {row.get('redriveCount', '?')})", file=out)
        counts = {s: sum(1 for r in report if r["status"] == s) for s in {r["status"] for r in report if r["status"]}}
        refused = sum(1 for r in report if not r["redriven"])
        summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        print(f"redriven {len(report) - refused}, refused {refused}; ended: {summary or 'none'}", file=out)
    if not report:
        return 0
    return 0 if all(r["status"] == "SUCCEEDED" for r in report) else EXIT_FAILED


def _wait_redriven(sfn: Any, rows: list[dict[str, Any]], timeout: float) -> None:
    """Poll the redriven executions until each has ended (its status and redrive count in its row), with
    progress lines on stderr; the ones still running at the deadline stay RUNNING (an error is raised)."""
    progress = _progress(sys.stderr)
    waiting = list(rows)
    for elapsed in _polls(timeout):
        for row in list(waiting):
            described = sfn.describe_execution(executionArn=row["executionArn"])
            row.update(
                status=described["status"],
                error=described.get("error"),
                cause=described.get("cause"),
                redriveCount=described.get("redriveCount"),
            )
            if described["status"] in client.ENDED_STATUSES:
                waiting.remove(row)
        if not waiting:
            return
        progress(elapsed, f"{len(waiting)} redriven execution(s) still running")
    raise CliError(
        f"{len(waiting)} redriven execution(s) still running after {timeout:g} s (--timeout): "
        + ", ".join(r["executionArn"] for r in waiting)
    )


# -- move-back -------------------------------------------------------------------------------------------------
def _queue_arn(sqs: Any, url: str) -> str:
    return str(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])


def cmd_move_back(args: argparse.Namespace, out: TextIO) -> int:
    sqs, cfn = clients(args, "sqs", "cloudformation")
    source_url = given_or_stack_output(args.queue_url, "--queue-url", cfn, args.stack_name, "DoorDeadLetterQueueUrl")
    destination_url = given_or_stack_output(
        args.destination_url, "--destination-url", cfn, args.stack_name, "RequestQueueUrl"
    )
    source, destination = _queue_arn(sqs, source_url), _queue_arn(sqs, destination_url)
    options: dict[str, Any] = {"SourceArn": source, "DestinationArn": destination}
    if args.max_per_second:
        options["MaxNumberOfMessagesPerSecond"] = args.max_per_second
    handle = sqs.start_message_move_task(**options)["TaskHandle"]
    if not args.json:
        print(f"moving {source_url} -> {destination_url}", file=out, flush=True)
    task = _wait_move(sqs, source, handle, args.timeout)
    moved, to_move = task.get("ApproximateNumberOfMessagesMoved", 0), task.get("ApproximateNumberOfMessagesToMove")
    if args.json:
        print_json({"sourceQueueUrl": source_url, "destinationQueueUrl": destination_url, "task": task}, out)
    else:
        line = f"{task['Status']}: moved {moved} of {to_move if to_move is not None else '?'} message(s)"
        if task.get("FailureReason"):
            line += f"; {task['FailureReason']}"
        print(line, file=out)
    return 0 if task["Status"] == "COMPLETED" else EXIT_FAILED


def _wait_move(sqs: Any, source: str, handle: str, timeout: float) -> dict[str, Any]:
    """ListMessageMoveTasks until the task started here (the newest of the source: ``handle``) has ended."""
    progress = _progress(sys.stderr)
    task: dict[str, Any] = {}
    for elapsed in _polls(timeout):
        results = sqs.list_message_move_tasks(SourceArn=source, MaxResults=10).get("Results", [])
        task = next((t for t in results if t.get("TaskHandle") == handle), results[0] if results else {})
        if task.get("Status") in ("COMPLETED", "CANCELLED", "FAILED"):
            return task
        moved = task.get("ApproximateNumberOfMessagesMoved", 0)
        progress(
            elapsed,
            f"move task {task.get('Status', '?')}, {moved} of {task.get('ApproximateNumberOfMessagesToMove', '?')}",
        )
    raise CliError(
        f"the move task is still {task.get('Status', 'unknown')} after {timeout:g} s (--timeout), "
        f"{task.get('ApproximateNumberOfMessagesMoved', 0)} moved: it goes on; aws sqs list-message-move-tasks "
        f"--source-arn {source} follows it",
        EXIT_FAILED,
    )


OPERATOR_COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "list": cmd_list,
    "dead-letters": cmd_dead_letters,
    "deliveries": cmd_deliveries,
    "redrive": cmd_redrive,
    "move-back": cmd_move_back,
}
"""The commands app.py dispatches to this module."""
