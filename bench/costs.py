"""What each path of the workflow costs, counted from execution histories on the embedded engine.

``python -m bench.costs`` prints the cost tables of ``docs/protocol.md`` ("The protocol on one page": per
path, the state transitions (what Standard workflows are billed by: one per state entered, retries would
add one each), the DynamoDB requests and the Lambda invocations of the state machine itself (the side
effect's own calls are the user's, and not counted); and per request of the HTTP door) and of
``docs/doors.md`` (per delivery through the queue and event doors). ``tests/functional/test_costs.py``,
``test_costs_http.py`` and ``test_costs_doors.py`` check each table against it.
The doors' rows take their names and their order from the doors' descriptions (:mod:`idemflow.cli.doors`).
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from idemflow import keys
from idemflow.cli import doors
from idemflow.client import sign_http_request
from idemflow.contract import RecordStatus, sample_payload
from idemflow.engine import Engine

PROJECT_ROOT = Path(__file__).resolve().parent.parent  # the checkout bench/ is in
TEMPLATE_PATH = PROJECT_ROOT / "template.yaml"

PAST = "2000-01-01T00:00:00.000Z"
FUTURE = "2999-01-01T00:00:00.000Z"
PAYLOAD = sample_payload(TEMPLATE_PATH)


@dataclass(frozen=True)
class Cost:
    path: str
    transitions: int
    dynamodb: int
    lambdas: int
    outcome: str


def _put_record(engine: Engine, key: str, **fields: str) -> None:
    item: dict[str, Any] = {
        "id": {"S": keys.record_key(engine.workflow.scope, key)},
        "owner": {"S": "arn:aws:states:us-east-1:123456789012:execution:other:owner"},
        "lockToken": {"S": "another-execution"},
        "fingerprint": {"S": keys.fingerprint(PAYLOAD)},
        "startedAt": {"S": "2026-01-01T00:00:00.000Z"},
        "expiresAt": {"S": FUTURE},
    }
    item.update({k: {"S": v} for k, v in fields.items()})
    engine.client("dynamodb").put_item(TableName=engine.workflow.idempotency_table, Item=item)


def _first_run(engine: Engine, key: str) -> None:
    pass


def _duplicate(engine: Engine, key: str) -> None:
    engine.run({"idempotencyKey": key, "payload": PAYLOAD})


def _wait_then_cached(engine: Engine, key: str) -> None:
    engine.run({"idempotencyKey": key, "payload": PAYLOAD})
    record_key = keys.record_key(engine.workflow.scope, key)
    ddb = engine.client("dynamodb")

    def status(value: str) -> Callable[[], None]:
        return lambda: ddb.update_item(
            TableName=engine.workflow.idempotency_table,
            Key={"id": {"S": record_key}},
            UpdateExpression="SET #s = :v",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":v": {"S": value}},
        )

    status(RecordStatus.IN_PROGRESS.value)()
    # The first read sees the owner at work, the read after one poll its completion.
    for state in ("AcquireLock", "ReadRecord"):  # whichever the definition reads with first
        engine.faults.before_dynamodb(state, lambda: None)
    engine.faults.before_dynamodb("ReadRecord", status(RecordStatus.COMPLETED.value))


def _takeover(engine: Engine, key: str) -> None:
    _put_record(engine, key, status=RecordStatus.IN_PROGRESS.value, leaseExpiresAt=PAST)


def _failure(engine: Engine, key: str) -> None:
    engine.faults.fail_next(engine.workflow.side_effect_function, 1, "SideEffectDeclinedError", "declined")


PATHS: dict[str, Callable[[Engine, str], None]] = {
    "first run": _first_run,
    "duplicate of a completed run": _duplicate,
    "duplicate that waits one poll for the owner": _wait_then_cached,
    "takeover of a dead owner's lock": _takeover,
    "side effect fails (lock released)": _failure,
}


def _states_entered(history: list[dict[str, Any]]) -> int:
    return sum(1 for e in history if e["type"].endswith("StateEntered"))


def measure(engine: Engine) -> list[Cost]:
    costs = []
    for name, prepare in PATHS.items():
        engine.faults.clear()
        key = f"cost-{uuid.uuid4()}"
        prepare(engine, key)
        outcome = engine.run({"idempotencyKey": key, "payload": PAYLOAD})
        engine.faults.clear()
        history = engine.history(outcome.arn)
        scheduled = [
            e["taskScheduledEventDetails"]["resourceType"] for e in history if "taskScheduledEventDetails" in e
        ]
        costs.append(
            Cost(
                path=name,
                transitions=_states_entered(history),
                dynamodb=scheduled.count("dynamodb"),
                lambdas=scheduled.count("lambda"),
                outcome=outcome.status if outcome.status == "SUCCEEDED" else str(outcome.error),
            )
        )
    return costs


# -- through the HTTP door ------------------------------------------------------------------------------------

HTTP_DOOR = {**doors.HTTP.opens, "WorkflowType": "EXPRESS"}


@dataclass(frozen=True)
class HttpCost:
    request: str
    status: int
    api_requests: int
    step_functions_requests: int
    lambdas: int


def _post(url: str, key: str | None, payload: Any) -> int:
    return _send(url, "POST", key, payload)[0]


def _http_requests(key: str) -> list[tuple[str, str | None, Any]]:
    """The requests each HTTP door's table counts: (row, Idempotency-Key, body)."""
    return [
        ("first request", key, PAYLOAD),
        ("the same request again", key, PAYLOAD),
        ("the same key, another body", key, {**PAYLOAD, "costVariant": 2}),
        ("no Idempotency-Key", None, PAYLOAD),
    ]


def _http_counts(engine: Engine, door: Any) -> tuple[int, int, int]:
    """API Gateway requests, the backend calls they made, and Lambda invocations, so far."""
    invocations = sum(engine.workflow.invocation_counts().values())
    return door.requests, sum(door.integration_calls.values()), invocations


def measure_http(engine: Engine) -> list[HttpCost]:
    """Per kind of request to the HTTP door (an engine deployed with :data:`HTTP_DOOR`): the API Gateway
    requests, the Step Functions requests it makes (StartSyncExecution) and the Lambda invocations."""
    from idemflow.engine.services.apigateway.service import ApiGateway

    door = engine.service(ApiGateway)
    ((_, url),) = engine.endpoints()
    key = f"cost-{uuid.uuid4()}"
    costs = []
    for name, sent_key, payload in _http_requests(key):
        before = _http_counts(engine, door)
        status = _post(url, sent_key, payload)
        api, sfn, lambdas = (b - a for a, b in zip(before, _http_counts(engine, door), strict=True))
        costs.append(HttpCost(name, status, api, sfn, lambdas))
    return costs


HTTP_DOOR_STANDARD = {**doors.HTTP.opens, "WorkflowType": "STANDARD"}


@dataclass(frozen=True)
class HttpStandardCost:
    request: str
    status: int
    """The answer of the one GET made once the execution has ended (the POST's own is 202)."""
    api_requests: int
    step_functions_requests: int
    transitions: int
    lambdas: int


def _send(url: str, method: str, key: str | None = None, payload: Any = None) -> tuple[int, dict[str, str]]:
    headers = {"Content-Type": "application/json", **({} if key is None else {"Idempotency-Key": key})}
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    sign_http_request(request)  # the door's default authorization, AWS_IAM: the engine's own user's key
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return int(answer.status), dict(answer.headers)
    except urllib.error.HTTPError as error:
        return int(error.code), dict(error.headers)


def measure_http_standard(engine: Engine) -> list[HttpStandardCost]:
    """Per kind of request to a Standard workflow's HTTP door (an engine deployed with
    :data:`HTTP_DOOR_STANDARD`): its POST, then one GET of its Location once the execution has ended. Each
    GET made while the execution runs adds one API Gateway request and one DescribeExecution."""
    from idemflow.engine.services.apigateway.service import ApiGateway
    from idemflow.engine.services.stepfunctions.executions import wait_for_execution

    door = engine.service(ApiGateway)
    url = dict(engine.endpoints())["POST"]
    machine = engine.workflow.state_machine_arn
    key = f"cost-{uuid.uuid4()}"
    costs = []
    for name, sent_key, payload in _http_requests(key):
        before = _http_counts(engine, door)
        status, headers = _send(url, "POST", sent_key, payload)
        transitions = 0
        if status == 202:
            execution_id = headers["Location"].rsplit("/", 1)[1]
            arn = machine.replace(":stateMachine:", ":execution:") + f":{execution_id}"
            if not wait_for_execution(arn, 60):
                raise RuntimeError(f"{arn} did not end in 60 s")
            transitions = _states_entered(engine.history(arn))
            status, _ = _send(f"{url}/{execution_id}", "GET")
        api, sfn, lambdas = (b - a for a, b in zip(before, _http_counts(engine, door), strict=True))
        costs.append(HttpStandardCost(name, status, api, sfn, transitions, lambdas))
    return costs


def http_standard_table(costs: list[HttpStandardCost]) -> str:
    lines = [
        "| HTTP request, then one GET | status | API Gateway requests | Step Functions requests "
        "| state transitions | Lambda invocations |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {c.request} | {c.status} | {c.api_requests} | {c.step_functions_requests} | {c.transitions} | {c.lambdas} |"
        for c in costs
    ]
    return "\n".join(lines)


def http_table(costs: list[HttpCost]) -> str:
    lines = [
        "| HTTP request | status | API Gateway requests | Step Functions requests | Lambda invocations |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {c.request} | {c.status} | {c.api_requests} | {c.step_functions_requests} | {c.lambdas} |" for c in costs
    ]
    return "\n".join(lines)


# -- through the queue and event doors ------------------------------------------------------------------------

COSTED = (doors.QUEUE, doors.TOPIC, doors.EVENT, doors.STREAM)
"""The doors of the doors' cost table on the project's template, in its order (the table stream's row is the
outbox example's: :func:`measure_table_stream`)."""
DOORS = {name: value for door in COSTED for name, value in door.opens.items()}
STREAM = DOORS[doors.STREAM.parameter].rsplit("/", 1)[1]


@dataclass(frozen=True)
class DoorCost:
    delivery: str
    outcome: str
    intake_transitions: int
    workflow_transitions: int
    lambdas: int
    dead_letters: int


def _intakes(
    engine: Engine, deliver: Callable[[], None], count: int = 1, timeout: float = 60.0
) -> list[list[dict[str, Any]]]:
    """Deliver, wait for the ``count`` intake executions it starts to end, return their histories (oldest
    first)."""
    assert engine.stack is not None
    sfn = engine.client("stepfunctions")
    intake = engine.stack.outputs["IntakeStateMachineArn"]
    known = {e["executionArn"] for e in sfn.list_executions(stateMachineArn=intake)["executions"]}
    deliver()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        new = [e for e in sfn.list_executions(stateMachineArn=intake)["executions"] if e["executionArn"] not in known]
        if len(new) >= count and all(e["status"] != "RUNNING" for e in new):
            if len(new) != count:
                raise RuntimeError(f"{len(new)} intake executions, {count} expected")
            return [engine.history(e["executionArn"]) for e in sorted(new, key=lambda e: e["startDate"])]
        time.sleep(0.02)
    raise TimeoutError("the intake execution did not end")


def _door_cost(engine: Engine, name: str, history: list[dict[str, Any]]) -> DoorCost:
    """What one intake execution of one delivery cost, with the workflow executions it started."""
    outcome = json.loads(history[-1]["executionSucceededEventDetails"]["output"])["deliveries"][0]["outcome"]
    children = [
        json.loads(e["taskSubmittedEventDetails"]["output"])["ExecutionArn"]
        for e in history
        if e["type"] == "TaskSubmitted"
    ]
    child_histories = [engine.history(arn) for arn in children]
    scheduled = [
        e["taskScheduledEventDetails"]["resourceType"]
        for h in child_histories
        for e in h
        if "taskScheduledEventDetails" in e
    ]
    return DoorCost(
        delivery=name,
        outcome=outcome,
        intake_transitions=_states_entered(history),
        workflow_transitions=sum(_states_entered(h) for h in child_histories),
        lambdas=scheduled.count("lambda"),
        dead_letters=sum(
            1
            for e in history
            if e["type"] == "TaskScheduled" and e["taskScheduledEventDetails"]["resourceType"] == "sqs"
        ),
    )


def measure_doors(engine: Engine) -> list[DoorCost]:
    """Per kind of delivery through the doors (an engine deployed with :data:`DOORS`), one message or event
    alone: the intake's state transitions (what the doors' Standard intake is billed by; a pipe batch of n
    messages shares the first two, OneOrMany and Deliver, or three for an event: WrapOne), the transitions of
    the workflow executions it started, their Lambda invocations, and the messages sent to the dead-letter
    queue."""
    assert engine.stack is not None
    sqs, events, sns = engine.client("sqs"), engine.client("events"), engine.client("sns")
    queue, topic = engine.stack.outputs["RequestQueueUrl"], engine.stack.outputs["RequestTopicArn"]
    key = f"cost-{uuid.uuid4()}"
    kinesis = engine.client("kinesis")
    if STREAM not in kinesis.list_streams()["StreamNames"]:  # the stream is the user's: the template takes its ARN
        kinesis.create_stream(StreamName=STREAM, ShardCount=1)

    def record(data: Any) -> Callable[[], None]:
        return lambda: kinesis.put_record(StreamName=STREAM, Data=json.dumps(data).encode(), PartitionKey="p")

    def message(body: str) -> Callable[[], None]:
        return lambda: sqs.send_message(QueueUrl=queue, MessageBody=body)

    def publication(message: str, key: str) -> Callable[[], None]:
        attributes = {"idempotencyKey": {"DataType": "String", "StringValue": key}}
        return lambda: sns.publish(TopicArn=topic, Message=message, MessageAttributes=attributes)

    def event(detail: Any) -> Callable[[], None]:
        entry = {"Source": "bench", "DetailType": "IdempotentRequest", "Detail": json.dumps(detail)}
        return lambda: events.put_events(Entries=[entry])

    rows: dict[str, list[tuple[str, Callable[[], None]]]] = {  # each door's rows, by its name
        doors.QUEUE.name: [
            ("first of its key", message(json.dumps({"idempotencyKey": key, **PAYLOAD}))),
            ("its key completed", message(json.dumps({"idempotencyKey": key, **PAYLOAD}))),
            ("its key reused", message(json.dumps({"idempotencyKey": key, **PAYLOAD, "amount": 1}))),
            ("not JSON", message("not json")),
        ],
        doors.TOPIC.name: [
            ("first of its key", publication(json.dumps(PAYLOAD), f"{key}-topic")),
            ("its key completed", publication(json.dumps(PAYLOAD), f"{key}-topic")),
        ],
        doors.EVENT.name: [
            ("first of its key", event({"idempotencyKey": f"{key}-event", **PAYLOAD})),
            ("its key completed", event({"idempotencyKey": f"{key}-event", **PAYLOAD})),
        ],
        doors.STREAM.name: [
            ("first of its key", record({"idempotencyKey": f"{key}-stream", **PAYLOAD})),
            ("its key completed", record({"idempotencyKey": f"{key}-stream", **PAYLOAD})),
        ],
    }
    deliveries = [(f"{door.cost}, {what}", deliver) for door in COSTED for what, deliver in rows[door.name]]
    return [_door_cost(engine, name, _intakes(engine, deliver)[0]) for name, deliver in deliveries]


OUTBOX_TEMPLATE = PROJECT_ROOT / "examples" / "outbox" / "template.yaml"
OUTBOX_DOOR = {"RequestsTableDoor": "true"}


def measure_table_stream(engine: Engine) -> list[DoorCost]:
    """A delivery through a table's stream (the outbox example deployed with :data:`OUTBOX_DOOR`): an item
    inserted. A second write of an item's key is a MODIFY record, which the pipe filters out: it costs no
    transition. (A batch the pipe hands over again costs what a queue message whose key completed costs, once the
    first has completed: the same intake path; at once, it meets the first still running, and costs vary.)"""
    assert engine.stack is not None
    ddb, table = engine.client("dynamodb"), engine.stack.outputs["RequestsTableName"]
    row = {"requestId": {"S": f"cost-{uuid.uuid4()}"}, "to": {"S": "ada@example.com"}, "message": {"S": "Welcome"}}
    (history,) = _intakes(engine, lambda: ddb.put_item(TableName=table, Item=row))
    return [_door_cost(engine, f"{doors.TABLE_STREAM.cost}, first of its key", history)]


def doors_table(costs: list[DoorCost]) -> str:
    lines = [
        "| delivery | outcome | intake transitions | workflow transitions | Lambda invocations | dead letters |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {c.delivery} | {c.outcome} | {c.intake_transitions} | {c.workflow_transitions} | {c.lambdas} | "
        f"{c.dead_letters} |"
        for c in costs
    ]
    return "\n".join(lines)


def table(costs: list[Cost]) -> str:
    lines = [
        "| path | state transitions | DynamoDB requests | Lambda invocations |",
        "|---|---|---|---|",
    ]
    lines += [f"| {c.path} | {c.transitions} | {c.dynamodb} | {c.lambdas} |" for c in costs]
    return "\n".join(lines)


def main() -> int:
    with Engine(wait_time_scale=0) as engine:
        print(table(measure(engine)))
    with Engine(wait_time_scale=0, parameter_overrides=HTTP_DOOR) as engine:
        print()
        print(http_table(measure_http(engine)))
    with Engine(wait_time_scale=0, parameter_overrides=HTTP_DOOR_STANDARD) as engine:
        print()
        print(http_standard_table(measure_http_standard(engine)))
    with Engine(wait_time_scale=0, parameter_overrides=DOORS) as engine:
        doors = measure_doors(engine)
    with Engine(OUTBOX_TEMPLATE, wait_time_scale=0, parameter_overrides=OUTBOX_DOOR) as engine:
        print()
        print(doors_table(doors + measure_table_stream(engine)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
